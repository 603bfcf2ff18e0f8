// Package enginetest holds what the training engines' tests share (engine/step, engine/train,
// engine/gpustep) beyond model/modeltest's flows: random training batches and the error norms their parity
// checks report. Only tests import it.
package enginetest

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/nfbo/nfbo/model"
)

// Batch is a training step's inputs in engine/step.Batch's layout (rows r = t·B + s), without the package, so
// that step's own tests can use it.
type Batch struct {
	Tok, Neg           []int32
	Eps, Wt            []float32
	InterMask, CtxMask [][]float32
}

// RandomBatch returns the inputs of B sequences, the first real of them real, the others padding (weight 0, no
// noise, no negative), padded to lens (nil: T), with dropout masks at the config's rate when drop is set.
func RandomBatch(cfg model.Config, B, real int, lens []int, drop bool, rng *rand.Rand) Batch {
	T, F, H := cfg.T, cfg.F, cfg.H
	N, S := T*B, T-1
	b := Batch{Tok: make([]int32, N), Neg: make([]int32, N), Eps: make([]float32, N*F), Wt: make([]float32, N)}
	for r := range N {
		t, s := r/B, r%B
		b.Tok[r], b.Neg[r] = int32(rng.IntN(cfg.V)), -1
		if s >= real || (lens != nil && t >= lens[s]) {
			continue
		}
		b.Wt[r] = 1 / float32(real)
		if j := int32(rng.IntN(cfg.V)); j != b.Tok[r] {
			b.Neg[r] = j
		}
		for i := range F {
			b.Eps[r*F+i] = float32(cfg.Noise * rng.NormFloat64())
		}
	}
	if !drop {
		return b
	}
	mask := func(n int) []float32 {
		m := make([]float32, n)
		for i := range m {
			if rng.Float64() >= cfg.Dropout {
				m[i] = float32(1 / (1 - cfg.Dropout))
			}
		}
		return m
	}
	for range cfg.Blocks {
		for range cfg.LSTMLayers - 1 {
			b.InterMask = append(b.InterMask, mask(S*B*H))
		}
		b.CtxMask = append(b.CtxMask, mask(N*H))
	}
	return b
}

// RelNorm returns ‖got − want‖/‖want‖ (‖got − want‖ when want is zero).
func RelNorm(got, want []float32) float64 {
	var d, w float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		d += e * e
		w += float64(want[i]) * float64(want[i])
	}
	if w == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d / w)
}

// TensorKind names a tensor's kind for the logs: its name without the block and layer numbers
// (block0.lstm1.wih → lstm.wih).
func TensorKind(name string) string {
	var parts []string
	for _, f := range strings.Split(name, ".") {
		parts = append(parts, strings.TrimRight(f, "0123456789"))
	}
	if len(parts) > 1 && parts[0] == "block" {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}
