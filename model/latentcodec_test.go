package model

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// GoLatentCodec gives Flow's answers: the latents of EncodeTo, a round trip back to the tokens, and with
// DecodeVectorsTo the vectors of InverseTo, bit for bit.
func TestGoLatentCodec(t *testing.T) {
	cfg := tinyConfig(NLSq)
	p := hardParams(t, cfg, 3, 0.15)
	f, err := NewFlow(p)
	if err != nil {
		t.Fatal(err)
	}
	c := NewGoLatentCodec(f, 2)
	defer c.Close()
	if c.Backend() != "go" {
		t.Errorf("Backend() = %q", c.Backend())
	}
	const B = 4
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]int, B*cfg.T)
	for b := range B {
		n := rng.IntN(cfg.T)
		for i := range cfg.T {
			x[b*cfg.T+i] = StopID
			if i < n {
				x[b*cfg.T+i] = 2 + rng.IntN(cfg.V-2)
			}
		}
	}
	ctx := context.Background()
	z, want := make([]float32, B*cfg.T*cfg.F), make([]float32, B*cfg.T*cfg.F)
	if err := c.EncodeTo(ctx, z, x); err != nil {
		t.Fatal(err)
	}
	if err := f.EncodeTo(ctx, want, x, nil); err != nil {
		t.Fatal(err)
	}
	for i := range z {
		if math.Float32bits(z[i]) != math.Float32bits(want[i]) {
			t.Fatalf("z[%d] = %v, Flow.EncodeTo %v", i, z[i], want[i])
		}
	}
	got, v := make([]int, len(x)), make([]float32, len(z))
	if err := c.DecodeVectorsTo(ctx, got, v, z); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, x) {
		t.Errorf("round trip %v, want %v", got, x)
	}
	if err := f.InverseTo(ctx, want, z, nil); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if math.Float32bits(v[i]) != math.Float32bits(want[i]) {
			t.Fatalf("v[%d] = %v, Flow.InverseTo %v", i, v[i], want[i])
		}
	}
}
