package ort

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// needORT returns a runner for f that decodes every batch on ONNX Runtime
// (MinDecodeBatch -1: no pure-Go path for small batches), skipping the test
// when ONNX Runtime is missing, or failing it under CI=true.
func needORT(t testing.TB, f *model.Flow) *Runner {
	t.Helper()
	r, err := NewRunner(f, Options{Batch: 64, MinDecodeBatch: -1})
	if errors.Is(err, ErrUnavailable) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ONNX Runtime is required when CI=true: %v", err)
		}
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func randomSequences(rng *rand.Rand, B, T, V int) []int {
	x := make([]int, B*T)
	for b := 0; b < B; b++ {
		n := rng.IntN(T)
		for t := 0; t < T; t++ {
			if t < n {
				x[b*T+t] = 2 + rng.IntN(V-2)
			} else {
				x[b*T+t] = model.StopID
			}
		}
	}
	return x
}

// relDiff returns max|a−b| / max(1, max|a|), the figure the parity bound is on.
func relDiff(a []float32, b []float32) float64 {
	var num, den float64 = 0, 1
	for i := range a {
		num = math.Max(num, math.Abs(float64(a[i])-float64(b[i])))
		den = math.Max(den, math.Abs(float64(a[i])))
	}
	return num / den
}

func TestOpenFallsBack(t *testing.T) {
	f := modeltest.Flow(t, modeltest.Tiny(model.NLSq), 1, 0)
	var warn bytes.Buffer
	c, err := Open(f, Options{LibPath: "/nonexistent/libonnxruntime.so.1", Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Backend() != "go" || strings.Count(warn.String(), "\n") != 1 || !strings.Contains(warn.String(), "ONNX Runtime unavailable") {
		t.Fatalf("backend %q, warning %q", c.Backend(), warn.String())
	}
	cfg := f.Config()
	x := randomSequences(rand.New(rand.NewPCG(1, 1)), 3, cfg.T, cfg.V)
	z := make([]float32, len(x)*cfg.F)
	got := make([]int, len(x))
	if err := c.EncodeTo(context.Background(), z, x); err != nil {
		t.Fatal(err)
	}
	if err := c.DecodeTo(context.Background(), got, z); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if got[i] != x[i] {
			t.Fatalf("fallback codec: position %d: %d, want %d", i, got[i], x[i])
		}
	}
}
