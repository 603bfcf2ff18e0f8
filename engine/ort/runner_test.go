//go:build cgo

package ort

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

type parityCase struct {
	name string
	cfg  model.Config
	w    float64
	B    int
}

func parityCases() []parityCase {
	return []parityCase{
		{"tiny-nlsq", modeltest.Tiny(model.NLSq), 0.4, 150},
		{"tiny-affine", modeltest.Tiny(model.Affine), 0.4, 150},
		{"small-init", model.Small(60, 40), 0, 70},
		{"small-hard", model.Small(60, 40), 0.15, 70},
	}
}

// Pure Go and ONNX Runtime must agree on the same weights: latents and
// log-dets to 1e-5 relative, data-side vectors likewise, decoded tokens
// exactly, and both must reconstruct the input.
func TestParity(t *testing.T) {
	for i, c := range parityCases() {
		t.Run(c.name, func(t *testing.T) {
			f := modeltest.Flow(t, c.cfg, uint64(10+i), c.w)
			r := needORT(t, f)
			cfg := f.Config()
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			x := randomSequences(rng, c.B, cfg.T, cfg.V)
			n := c.B * cfg.T * cfg.F

			zGo, zORT := make([]float32, n), make([]float32, n)
			ldGo, ldORT := make([]float64, c.B*cfg.T), make([]float32, c.B*cfg.T)
			v := make([]float32, n)
			if err := f.EmbedTo(v, x); err != nil {
				t.Fatal(err)
			}
			if err := f.ForwardTo(ctx, zGo, ldGo, v, nil); err != nil {
				t.Fatal(err)
			}
			if err := r.EncodeLogDetTo(ctx, zORT, ldORT, x); err != nil {
				t.Fatal(err)
			}
			if d := relDiff(zGo, zORT); d > 1e-5 {
				t.Errorf("latents differ: rel diff %.3g > 1e-5", d)
			} else {
				t.Logf("latents: rel diff %.3g", d)
			}
			ld32 := make([]float32, len(ldGo))
			for i, l := range ldGo {
				ld32[i] = float32(l)
			}
			if d := relDiff(ld32, ldORT); d > 1e-5 {
				t.Errorf("log-dets differ: rel diff %.3g > 1e-5", d)
			}

			// Decode the same latents (Go's) both ways.
			xGo, xORT := make([]int, len(x)), make([]int, len(x))
			vGo, vORT := make([]float32, n), make([]float32, n)
			if err := f.InverseTo(ctx, vGo, zGo, nil); err != nil {
				t.Fatal(err)
			}
			if err := f.DecodeTo(ctx, xGo, zGo, nil); err != nil {
				t.Fatal(err)
			}
			if err := r.DecodeVectorsTo(ctx, xORT, vORT, zGo); err != nil {
				t.Fatal(err)
			}
			if d := relDiff(vGo, vORT); d > 1e-5 {
				t.Errorf("decoded vectors differ: rel diff %.3g > 1e-5", d)
			} else {
				t.Logf("decoded vectors: rel diff %.3g", d)
			}
			for i := range x {
				if xGo[i] != xORT[i] || xGo[i] != x[i] {
					b := i / cfg.T
					t.Fatalf("sequence %d position %d: input %d, Go %d, ORT %d", b, i%cfg.T, x[i], xGo[i], xORT[i])
				}
			}
			// Random latents (not from data) decode to the same tokens too.
			zr := make([]float32, n)
			for i := range zr {
				zr[i] = float32(rng.NormFloat64())
			}
			if err := f.DecodeTo(ctx, xGo, zr, nil); err != nil {
				t.Fatal(err)
			}
			if err := r.DecodeTo(ctx, xORT, zr); err != nil {
				t.Fatal(err)
			}
			diff := 0
			for i := range xGo {
				if xGo[i] != xORT[i] {
					diff++
				}
			}
			if diff > 0 {
				t.Errorf("random latents: %d of %d tokens differ between Go and ORT", diff, len(xGo))
			}
		})
	}
}

func TestOpenUsesORT(t *testing.T) {
	f := modeltest.Flow(t, modeltest.Tiny(model.NLSq), 1, 0)
	needORT(t, f)
	var warn bytes.Buffer
	c, err := Open(f, Options{Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Backend() != "onnxruntime" || warn.Len() != 0 {
		t.Fatalf("backend %q, warning %q", c.Backend(), warn.String())
	}
}

// Batches below MinDecodeBatch take the pure-Go path and still reconstruct.
func TestSmallBatchDecode(t *testing.T) {
	f := modeltest.Flow(t, modeltest.Tiny(model.NLSq), 3, 0.3)
	needORT(t, f)
	cfg := f.Config()
	for _, minB := range []int{-1, 0} {
		r, err := NewRunner(f, Options{MinDecodeBatch: minB})
		if err != nil {
			t.Fatal(err)
		}
		x := randomSequences(rand.New(rand.NewPCG(4, 4)), 3, cfg.T, cfg.V)
		z := make([]float32, len(x)*cfg.F)
		got := make([]int, len(x))
		if err := r.EncodeTo(context.Background(), z, x); err != nil {
			t.Fatal(err)
		}
		if err := r.DecodeTo(context.Background(), got, z); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if got[i] != x[i] {
				t.Fatalf("MinDecodeBatch %d: position %d: %d, want %d", minB, i, got[i], x[i])
			}
		}
		r.Close()
	}
}
