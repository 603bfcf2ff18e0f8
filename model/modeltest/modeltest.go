// Package modeltest builds SeqFlow models for the tests of the packages that
// run them (engine/onnx, engine/ort, engine/train): random weights whose
// couplings are far from the identity, so that every backend is compared on
// a strongly non-linear flow rather than on the near-identity of a fresh
// model, and trained checkpoints with the sequences they generate.
package modeltest

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/nfbo/nfbo/chem/vocab"
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

// ParityConfig is the training engines' parity configuration: a small SeqFlow with odd sizes (half 3, H 5, U 7, T 5, three couplings so both split orders
// end a block), two blocks, two LSTM layers (an inter-layer dropout mask) and dropout.
func ParityConfig(tr model.Transform) model.Config {
	return model.Config{V: 11, F: 6, T: 5, MaxT: 7, Blocks: 2, LSTMLayers: 2, H: 5,
		Couplings: 3, U: 7, CouplingDepth: 2, Transform: tr,
		Dropout: 0.25, Noise: 0.1, SimCoef: 1}
}

// FarParams returns random parameters of cfg whose couplings are far from the identity, coupling weights drawn
// from N(0, 1/fan-in) and biases from N(0, 0.3²) (the reference initialisation makes the NLSq terms tiny,
// which would hide their errors): the parameters of the training engines' parity tests.
func FarParams(t testing.TB, cfg model.Config, seed uint64) *model.Params {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	p, err := model.NewParams(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Blocks {
		for _, c := range b.Couplings {
			for _, d := range c.Layers {
				for i := range d.W.Data {
					d.W.Data[i] = float32(rng.NormFloat64() / math.Sqrt(float64(d.In())))
				}
				for i := range d.B.Data {
					d.B.Data[i] = float32(rng.NormFloat64() * 0.3)
				}
			}
		}
	}
	return p
}

// Case names one test flow: the arguments of Flow (configuration, seed and
// coupling weight scale W).
type Case struct {
	Name string
	Cfg  model.Config
	Seed uint64
	W    float64
}

// PaperCases returns the paper preset (31M parameters with V 185) at T 16,
// with the reference's random initialisation and with coupling weights far
// from the identity: the flows of every backend's paper-preset parity test,
// so that all backends are compared on the same weights.
func PaperCases() []Case {
	cfg := model.Paper(185, 16)
	return []Case{{"init", cfg, 40, 0}, {"hard", cfg, 41, 0.15}}
}

// Checkpoint returns the flow of the checkpoint in dir (model.LoadModelDir),
// at the sequence length it was trained at.
func Checkpoint(t testing.TB, dir string) *model.Flow {
	t.Helper()
	ck, err := model.LoadModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := model.NewFlow(ck.Params)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// PriorSequences draws B latents z (B×T×F) from the flow's N(0, I) prior
// with a source seeded by seed and decodes them in pure Go to the token
// sequences x (B×T): for a trained flow, sequences the model itself
// generates rather than uniform random tokens.
func PriorSequences(t testing.TB, f *model.Flow, B int, seed uint64) (x []int, z []float32) {
	t.Helper()
	cfg := f.Config()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	z = make([]float32, B*cfg.T*cfg.F)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	x = make([]int, B*cfg.T)
	if err := f.DecodeTo(context.Background(), x, z, nil); err != nil {
		t.Fatal(err)
	}
	return x, z
}

// WriteShippedVocabModel writes into dir a small random SeqFlow over the shipped vocabulary ("guacamol+zinc"),
// as model.LoadModelDir reads it: untrained, but a flow all the same (exact round trip, fine-tunable), so that
// the commands' tests run on real molecules in seconds.
func WriteShippedVocabModel(t testing.TB, dir string) {
	t.Helper()
	voc, err := vocab.Named("guacamol+zinc")
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{V: voc.Len(), F: 8, T: 64, MaxT: 288, Blocks: 1, LSTMLayers: 1, H: 16, Couplings: 2, U: 16,
		CouplingDepth: 1, Transform: model.NLSq, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := model.SaveCheckpoint(filepath.Join(dir, model.CheckpointName), &model.Checkpoint{Params: p, Vocab: voc.Tokens()}); err != nil {
		t.Fatal(err)
	}
}
