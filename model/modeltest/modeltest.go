// Package modeltest builds SeqFlow models for the tests of the packages that
// run them (engine/onnx, engine/ort): random weights whose couplings are far
// from the identity, so that every backend is compared on a strongly
// non-linear flow rather than on the near-identity of a fresh model.
package modeltest

import (
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// Tiny returns a configuration small enough for exhaustive tests (V 12, F 6,
// T 7, 3 blocks of a 2-layer 8-unit LSTM, 3 couplings of 10 units) that still
// exercises every structural feature: several blocks, stacked LSTM layers,
// both coupling splits.
func Tiny(tr model.Transform) model.Config {
	return model.Config{V: 12, F: 6, T: 7, MaxT: 9, Blocks: 3, LSTMLayers: 2, H: 8,
		Couplings: 3, U: 10, CouplingDepth: 2, Transform: tr, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// Flow returns a flow of cfg with weights drawn from seed. When w > 0 the
// coupling weights are redrawn from U(-w, w) and their biases from
// N(0, 0.3²), which makes the coupling maps strongly non-linear.
func Flow(t testing.TB, cfg model.Config, seed uint64, w float64) *model.Flow {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	p, err := model.NewParams(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	if w > 0 {
		for _, b := range p.Blocks {
			for _, c := range b.Couplings {
				for _, d := range c.Layers {
					for i := range d.W.Data {
						d.W.Data[i] = float32((2*rng.Float64() - 1) * w)
					}
					for i := range d.B.Data {
						d.B.Data[i] = float32(0.3 * rng.NormFloat64())
					}
				}
			}
		}
	}
	f, err := model.NewFlow(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
