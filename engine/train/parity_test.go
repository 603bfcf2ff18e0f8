package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// The training graph's log density of clean embeddings (no noise, no
// dropout) equals the pure-Go model.Flow's LogProbTo and the float64 loop
// reference, per sequence, to rel 1e-5: the three implementations share
// only model/params.go's layout contract.
func TestLogDensityParity(t *testing.T) {
	small := model.Small(12, 10)
	small.Couplings = 3 // odd, so both split orders end a block
	square := tinyConfig(model.NLSq)
	square.U = square.Half() * square.Transform.NumParams() // hidden as wide as the output layer, as in the paper preset
	for _, c := range []struct {
		cfg      model.Config
		unrolled bool
	}{{tinyConfig(model.NLSq), false}, {tinyConfig(model.Affine), false}, {square, false}, {small, false}, {small, true}} {
		cfg := c.cfg
		t.Run(fmt.Sprintf("%v/H=%d/U=%d/T=%d/unrolled=%v", cfg.Transform, cfg.H, cfg.U, cfg.T, c.unrolled), func(t *testing.T) {
			p := modeltest.FarParams(t, cfg, 17)
			const B = 4
			seqs := randomSeqs(cfg, 2*B+1, rand.New(rand.NewPCG(6, 1))) // two full batches and a partial one
			got, want := logDensities(t, p, seqs, B, graphOpts{lstmOp: !c.unrolled, couplingOp: true})
			en := normalisedEmbeddings(p)
			var maxRel float64
			for i, s := range seqs {
				v := make([][]float64, cfg.T)
				for t, id := range s {
					v[t] = en[id*cfg.F : (id+1)*cfg.F]
				}
				var ref float64
				for _, lp := range refLogDensity(p, v) {
					ref += lp
				}
				for _, w := range []struct {
					name string
					v    float64
				}{{"model.Flow", want[i]}, {"float64 reference", ref}} {
					rel := relErr(got[i], w.v)
					maxRel = max(maxRel, rel)
					if !(rel <= 1e-5) { // NaN fails too
						t.Errorf("sequence %d: graph log p %.8g, %s %.8g (rel %.2e)", i, got[i], w.name, w.v, rel)
					}
				}
			}
			t.Logf("%d sequences, max rel err %.2e (log p of seq 0: %.6g)", len(seqs), maxRel, got[0])
		})
	}
}

// shippedSmall is the shipped model (small preset, V 267, trained at T 109).
const shippedSmall = "../../data/models/small"

// The shipped trained model at its T 109, on 32 sequences it generates
// itself (latents from its prior, decoded in pure Go): the graph's log
// densities equal model.Flow's to rel 1e-5. They are the sequences of
// engine/ort's TestParityTrained, which ties pure Go to ONNX Runtime.
func TestLogDensityParityTrained(t *testing.T) {
	f := modeltest.Checkpoint(t, shippedSmall)
	x, _ := modeltest.PriorSequences(t, f, 32, 1)
	T := f.Config().T
	seqs := make([][]int, len(x)/T)
	for i := range seqs {
		seqs[i] = x[i*T : (i+1)*T]
	}
	checkLogDensities(t, f.Params(), seqs, 16)
}

// The paper preset at T 16 with the weights of engine/ort's TestParityPaper
// (modeltest.PaperCases): the reference's random initialisation and
// coupling weights far from the identity.
func TestLogDensityParityPaper(t *testing.T) {
	for _, c := range modeltest.PaperCases() {
		t.Run(c.Name, func(t *testing.T) {
			f := modeltest.Flow(t, c.Cfg, c.Seed, c.W)
			seqs := randomSeqs(c.Cfg, 7, rand.New(rand.NewPCG(c.Seed, 1))) // a full batch and a partial one
			checkLogDensities(t, f.Params(), seqs, 4)
		})
	}
}

// logDensities returns the log densities of seqs under the weights p from
// the float32 training graph (graph options o, batches of B) and from pure
// Go (model.Flow.LogProbTo).
func logDensities(t *testing.T, p *model.Params, seqs [][]int, B int, o graphOpts) (graph, flow []float64) {
	t.Helper()
	graph, err := newGraphTrainer(p, rand.NewPCG(1, 1), o, false).logDensity(context.Background(), seqs, B)
	if err != nil {
		t.Fatal(err)
	}
	f, err := model.NewFlow(p)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int, 0, len(seqs)*p.Config.T)
	for _, s := range seqs {
		x = append(x, s...)
	}
	flow = make([]float64, len(seqs))
	if err := f.LogProbTo(context.Background(), flow, nil, x, &model.Workspace{}); err != nil {
		t.Fatal(err)
	}
	return graph, flow
}

// checkLogDensities requires logDensities' two answers to agree to rel 1e-5
// per sequence.
func checkLogDensities(t *testing.T, p *model.Params, seqs [][]int, B int) {
	t.Helper()
	got, want := logDensities(t, p, seqs, B, fusedOpts)
	var maxRel float64
	for i := range seqs {
		rel := relErr(got[i], want[i])
		maxRel = max(maxRel, rel)
		if !(rel <= 1e-5) { // NaN fails too
			t.Errorf("sequence %d: graph log p %.8g, model.Flow %.8g (rel %.2e)", i, got[i], want[i], rel)
		}
	}
	t.Logf("%d sequences, max rel err %.2e (log p of seq 0: %.6g)", len(seqs), maxRel, got[0])
}

func relErr(a, b float64) float64 {
	d := a - b
	if d < 0 {
		d = -d
	}
	if b < 0 {
		b = -b
	}
	return d / max(b, 1e-300)
}
