package bo

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// wildObjective answers every molecule with one of three finite scores, chosen by a hash of its key: the
// adversarial scores of issue #56 (±1e308, subnormals, all equal, one huge outlier, alternating signs).
type wildObjective struct {
	a, b, c float64
	calls   int
}

func (w *wildObjective) score(key string) float64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	switch h.Sum32() % 3 {
	case 0:
		return w.a
	case 1:
		return w.b
	}
	return w.c
}

func (w *wildObjective) Evaluate(ctx context.Context, smiles []string) ([]float64, []bool, error) {
	scores, paid := make([]float64, len(smiles)), make([]bool, len(smiles))
	for i, s := range smiles {
		scores[i], paid[i] = w.score(s), true
		w.calls++
	}
	return scores, paid, ctx.Err()
}

// wildRun runs both variants on the toy problem with every score, initial ones included, from w: each must
// spend its budget without an error and keep a finite best, and each, cancelled after its first iteration, must
// return within a second.
func wildRun(t *testing.T, a, b, c float64) {
	t.Helper()
	for _, variant := range bothVariants() {
		for _, cancel := range []bool{false, true} {
			cfg := toyConfig("")
			cfg.Budget = 24
			variant.mod(&cfg)
			w := &wildObjective{a: a, b: b, c: c}
			init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
			for i, s := range init.SMILES {
				init.Y[i] = w.score(s)
			}
			prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: w, Initial: init, Vocab: toyV,
				Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
			ctx, stop := context.WithCancel(context.Background())
			var stopped time.Time
			rec := &recorder{}
			if cancel {
				rec.after, rec.cancel = 1, func() { stopped = time.Now(); stop() }
			}
			o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), rec)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var res Result
			go func() { res, err = o.Run(ctx); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s, scores %g %g %g: the run did not finish within 30 s", variant.name, a, b, c)
			}
			stop()
			switch {
			case cancel && !stopped.IsZero():
				if d := time.Since(stopped); d > time.Second {
					t.Errorf("%s, scores %g %g %g: stopped %v after the cancel, want within a second", variant.name, a, b, c, d)
				}
			case err != nil:
				t.Errorf("%s, scores %g %g %g: %v", variant.name, a, b, c, err)
			case res.Status != StatusBudgetSpent && res.Status != StatusConverged || w.calls > cfg.Budget:
				t.Errorf("%s, scores %g %g %g: status %v after %d calls of %d", variant.name, a, b, c, res.Status, w.calls, cfg.Budget)
			case math.IsNaN(res.Best) || math.IsInf(res.Best, 0):
				t.Errorf("%s, scores %g %g %g: best %v", variant.name, a, b, c, res.Best)
			}
		}
	}
}

// TestAdversarialScores: the cases of issue #56, each of which must finish, stop on a cancel within a second and
// keep its figures finite. ±1e308 made the exact GP's posterior NaN and the loop spin forever.
func TestAdversarialScores(t *testing.T) {
	for _, tc := range [][3]float64{
		{1e308, -1e308, 1e308},                    // ±1e308, alternating signs
		{math.MaxFloat64, -math.MaxFloat64, 0},    // the ends of float64
		{1e160, 1e155, -1e160},                    // from where the squares overflow
		{5e-324, 1e-310, -5e-324},                 // subnormals
		{0.5, 0.5, 0.5},                           // all equal
		{1e308, 1e308, 1e308},                     // all equal and huge
		{0.1, 0.2, 1e308},                         // a huge outlier among ordinary scores
		{-math.MaxFloat64, 0.3, -math.MaxFloat64}, // a huge negative outlier
	} {
		wildRun(t, tc[0], tc[1], tc[2])
	}
}

// FuzzAdversarialScores drives the optimiser with any three finite scores (make test runs it for a few seconds).
func FuzzAdversarialScores(f *testing.F) {
	f.Add(1e308, -1e308, 0.5)
	f.Add(5e-324, 0.0, -5e-324)
	f.Add(1e155, 1e-155, -1e155)
	f.Fuzz(func(t *testing.T, a, b, c float64) {
		for _, v := range []float64{a, b, c} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Skip("the objective rejects a score that is not finite")
			}
		}
		wildRun(t, a, b, c)
	})
}
