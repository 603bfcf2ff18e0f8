package baseline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// PriorSampler draws molecules from a generative model's prior, e.g. latents
// z ~ N(0, I) decoded by the flow, and returns their SELFIES.
type PriorSampler interface {
	SamplePrior(ctx context.Context, n int) ([]string, error)
}

// Prior is random search with the flow's prior as the proposal: each batch of
// Batch samples is decoded, de-duplicated against everything evaluated so
// far, and the new molecules are scored. It is the floor NF-BO must beat
// under the same budget.
type Prior struct {
	Sampler  PriorSampler
	Codec    Codec
	Batch    int // samples per batch (default 100)
	Recorder Recorder
	// MaxEmpty bounds the consecutive batches without a single new molecule
	// before Run gives up (default 20).
	MaxEmpty int
}

// Run samples until obj has made budget paid calls or ctx ends, and returns
// the initial and evaluated molecules, best first.
func (p *Prior) Run(ctx context.Context, obj Objective, init []Scored, budget int) ([]Scored, error) {
	batch, maxEmpty := cmp.Or(p.Batch, 100), cmp.Or(p.MaxEmpty, 20)
	seen := make(map[string]bool, len(init)+budget)
	pool := slices.Clone(init)
	for _, m := range init {
		seen[m.SELFIES] = true
	}
	best := func() float64 {
		b := 0.0
		for i, m := range pool {
			if i == 0 || m.Score > b {
				b = m.Score
			}
		}
		return b
	}
	empty := 0
	for it := 1; obj.Calls() < budget; it++ {
		if err := ctx.Err(); err != nil {
			return sortScored(pool), err
		}
		want := min(batch, budget-obj.Calls())
		samples, err := p.Sampler.SamplePrior(ctx, want)
		if err != nil {
			return sortScored(pool), fmt.Errorf("batch %d: sample prior: %w", it, err)
		}
		prog := Progress{Iteration: it, Proposed: len(samples)}
		var kids []Scored
		for _, s := range samples {
			smi, err := p.Codec.Decode(s)
			if err != nil || smi == "" {
				prog.Invalid++
				continue
			}
			can, err := p.Codec.Encode(smi)
			if err != nil || can == "" {
				prog.Invalid++
				continue
			}
			if seen[can] {
				prog.Duplicate++
				continue
			}
			seen[can] = true
			kids = append(kids, Scored{SELFIES: can, SMILES: smi})
		}
		if len(kids) == 0 {
			if empty++; empty >= maxEmpty {
				return sortScored(pool), fmt.Errorf("%w in %d consecutive prior batches", ErrNoProgress, empty)
			}
			continue
		}
		empty = 0
		smiles := make([]string, len(kids))
		for i, k := range kids {
			smiles[i] = k.SMILES
		}
		scores, isNew, err := obj.Evaluate(ctx, smiles)
		if err != nil {
			return sortScored(pool), fmt.Errorf("batch %d: %w", it, err)
		}
		for i := range kids {
			kids[i].Score = scores[i]
			if isNew[i] {
				prog.New++
			}
		}
		pool = append(pool, kids...)
		prog.Calls, prog.Best = obj.Calls(), best()
		if p.Recorder != nil {
			p.Recorder.Record(prog)
		}
	}
	return sortScored(pool), nil
}

func sortScored(s []Scored) []Scored {
	slices.SortStableFunc(s, func(a, b Scored) int { return cmp.Compare(b.Score, a.Score) })
	return s
}
