package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// The training graph's log density of clean embeddings (no noise, no
// dropout) equals the pure-Go model.Flow's LogProbTo and the float64 loop
// reference, per sequence, to rel 1e-5: the three implementations share
// only model/params.go's layout contract.
func TestLogDensityParity(t *testing.T) {
	small := model.Small(12, 10)
	small.Couplings = 3 // odd, so both split orders end a block
	for _, c := range []struct {
		cfg      model.Config
		unrolled bool
	}{{tinyConfig(model.NLSq), false}, {tinyConfig(model.Affine), false}, {small, false}, {small, true}} {
		cfg := c.cfg
		t.Run(fmt.Sprintf("%v/H=%d/T=%d/unrolled=%v", cfg.Transform, cfg.H, cfg.T, c.unrolled), func(t *testing.T) {
			p := tinyParams(t, cfg, 17)
			const B = 4
			seqs := randomSeqs(cfg, 2*B+1, rand.New(rand.NewPCG(6, 1))) // two full batches and a partial one
			tr, err := NewTrainer(p, rand.NewPCG(1, 1), Options{EvalBatch: B, UnrolledLSTM: c.unrolled})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.LogDensity(context.Background(), seqs)
			if err != nil {
				t.Fatal(err)
			}
			f, err := model.NewFlow(p)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]int, 0, len(seqs)*cfg.T)
			for _, s := range seqs {
				x = append(x, s...)
			}
			want := make([]float64, len(seqs))
			if err := f.LogProbTo(context.Background(), want, nil, x, &model.Workspace{}); err != nil {
				t.Fatal(err)
			}
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
