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
			if kid, ok := admit(p.Codec, seen, s, &prog); ok {
				kids = append(kids, kid)
			}
		}
		if len(kids) == 0 {
			if empty++; empty >= maxEmpty {
				return sortScored(pool), fmt.Errorf("%w in %d consecutive prior batches", ErrNoProgress, empty)
			}
			continue
		}
		empty = 0
		if err := score(ctx, obj, kids, &prog); err != nil {
			return sortScored(pool), fmt.Errorf("batch %d: %w", it, err)
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
