package bo

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// permCodec is toyCodec whose molecule is a sequence's multiset of tokens: a permutation of a sequence writes
// the same molecule in another order, as two SMILES of one molecule do.
type permCodec struct{ toyCodec }

func (permCodec) Identity(key string) string {
	f := strings.Split(strings.TrimSuffix(key, "."), ".")
	slices.Sort(f)
	return "#" + strings.Join(f, ".")
}

// cacheObjective pays for each molecule once, by identity, as chem/objective.Budget does by RDKit's canonical
// SMILES: a molecule paid for before, or initial, is answered from its cache without a call.
type cacheObjective struct {
	s      *toyScorer
	paid   map[string]float64
	calls  int
	cached int
}

func newCacheObjective(init Initial) *cacheObjective {
	c := &cacheObjective{s: &toyScorer{}, paid: map[string]float64{}}
	for i, s := range init.SMILES {
		c.paid[permCodec{}.Identity(s)] = init.Y[i]
	}
	return c
}

func (c *cacheObjective) Calls() int { return c.calls }

func (c *cacheObjective) Evaluate(ctx context.Context, smiles []string) ([]float64, []bool, error) {
	scores, paid := make([]float64, len(smiles)), make([]bool, len(smiles))
	for i, s := range smiles {
		id := permCodec{}.Identity(s)
		if y, ok := c.paid[id]; ok {
			scores[i] = y
			c.cached++
			continue
		}
		if err := c.s.Score(ctx, scores[i:i+1], smiles[i:i+1]); err != nil {
			return nil, nil, err
		}
		c.paid[id], paid[i] = scores[i], true
		c.calls++
	}
	return scores, paid, nil
}

// TestIdentityDuplicates: with a Codec that is an Identifier, the screened variant never picks a molecule the
// data or the batch hold under another key, so the objective's cache answers none of its picks; with keys alone it
// does. The reference variant keys molecules as it always has.
func TestIdentityDuplicates(t *testing.T) {
	init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
	run := func(cfg Config, codec Codec) (*cacheObjective, *Optimizer) {
		obj := newCacheObjective(init)
		prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: codec, Objective: obj, Initial: init,
			Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		return obj, runToBudget(t, cfg, prob)
	}
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	obj, o := run(cfg, permCodec{})
	if obj.cached != 0 {
		t.Errorf("with identities: %d picks answered from the cache, want 0", obj.cached)
	}
	_, _, keys := o.Data()
	ids := map[string]bool{}
	for _, k := range keys[len(init.Y):] {
		id := permCodec{}.Identity(k)
		if ids[id] {
			t.Errorf("molecule %s picked twice", id)
		}
		ids[id] = true
	}
	if obj, _ := run(cfg, toyCodec{}); obj.cached == 0 {
		t.Error("with keys alone no pick was answered from the cache: the test shows nothing")
	}

	ref := toyConfig("")
	_, a := run(ref, permCodec{})
	_, b := run(ref, toyCodec{})
	_, _, ka := a.Data()
	_, _, kb := b.Data()
	if !slices.Equal(ka, kb) {
		t.Error("the reference variant picks differently with an Identifier")
	}
}
