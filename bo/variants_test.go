package bo

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// variantCodec is toyCodec whose molecules differ from their variants in the last token alone.
type variantCodec struct{ toyCodec }

func (variantCodec) VariantKey(key string) string {
	f := strings.Split(strings.TrimSuffix(key, "."), ".")
	return strings.Join(f[:len(f)-1], ".") + "."
}

// blindObjective scores a molecule by its variant key alone, as a fingerprint objective scores stereo variants.
type blindObjective struct{ s *toyScorer }

func (m blindObjective) Evaluate(ctx context.Context, smiles []string) ([]float64, []bool, error) {
	keys := make([]string, len(smiles))
	for i, s := range smiles {
		keys[i] = variantCodec{}.VariantKey(s) + "0."
	}
	scores, paid := make([]float64, len(smiles)), make([]bool, len(smiles))
	for i := range paid {
		paid[i] = true
	}
	return scores, paid, m.s.Score(ctx, scores, keys)
}

// With SkipVariants, once the objective has scored variants alike no batch holds a variant of a paid molecule
// or two of one molecule; an objective that tells them apart gets its variants proposed as before.
func TestSkipVariants(t *testing.T) {
	for _, blindObj := range []bool{true, false} {
		cfg := toyConfig("")
		toScreened(&cfg, 20)
		cfg.Budget, cfg.SkipVariants = 150, true
		init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
		var obj Objective = memObjective{&toyScorer{}}
		if blindObj {
			obj = blindObjective{&toyScorer{}}
			// The initial scores as the blind objective gives them.
			y, _, _ := obj.Evaluate(context.Background(), init.SMILES)
			init.Y = y
		}
		rec := &recorder{}
		prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: variantCodec{}, Objective: obj, Initial: init,
			Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		o, err := NewOptimizer(cfg, prob, rand.NewPCG(3, 3), rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, y, smiles := o.Data()
		// Replay the data batch by batch, judging blindness as the optimiser does at each batch's start.
		v := newVariants(variantCodec{}.VariantKey)
		for i := range init.Y {
			v.add(smiles[i], y[i])
		}
		next, blindIters, skipped := len(init.Y), 0, 0
		for _, p := range rec.log {
			skipped += p.Variants
			blind := v.blind()
			if blind {
				blindIters++
			}
			inBatch := map[string]bool{}
			for i := next; i < next+p.New; i++ {
				k := v.key(smiles[i])
				if blind && (v.paid(k) || inBatch[k]) {
					t.Errorf("blind %v, iteration %d: %s is a variant of a molecule paid or in the batch", blindObj, p.Iteration, smiles[i])
				}
				inBatch[k] = true
			}
			for i := next; i < next+p.New; i++ {
				v.add(smiles[i], y[i])
			}
			next += p.New
		}
		switch {
		case blindObj && (blindIters == 0 || skipped == 0):
			t.Errorf("blind objective: %d iterations judged blind, %d variants skipped; want some of both", blindIters, skipped)
		case !blindObj && (blindIters > 0 || skipped > 0):
			t.Errorf("objective that tells variants apart: %d iterations judged blind, %d variants skipped; want none", blindIters, skipped)
		}
		if !blindObj && v.pairs == 0 {
			t.Error("no variant was paid for: the test shows nothing")
		}
	}
	cfg := toyConfig("")
	toScreened(&cfg, 20)
	cfg.SkipVariants = true
	prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}},
		Initial: toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV), Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3}}
	if _, err := NewOptimizer(cfg, prob, rand.NewPCG(3, 3), nil); err == nil {
		t.Error("SkipVariants with a Codec that has no VariantKey was accepted")
	}
}
