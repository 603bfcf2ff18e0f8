package bo

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo/gp"
)

// SurrogateUpdate says when the reference variant's surrogate is trained.
type SurrogateUpdate int

const (
	// UpdateOnce trains the surrogate once, before the loop, as the reference code does.
	UpdateOnce SurrogateUpdate = iota
	// UpdateEveryIteration also trains it for UpdateEpochs after every iteration on the newest batch plus the
	// top TopK points, re-encoded with the current flow (the paper's Algorithm 1).
	UpdateEveryIteration
)

// ReferenceSettings are the reference variant's own settings: a deep-kernel SVGP over latents, trained before
// the loop and optionally after every iteration.
type ReferenceSettings struct {
	GP           gp.Config       // surrogate model settings
	Sampler      SamplerKind     // Thompson sampler: exact (default) or pathwise
	Update       SurrogateUpdate // UpdateOnce (default, reference code) or UpdateEveryIteration (paper)
	InitEpochs   int             // epochs of the initial surrogate fit; if 0, the default is 100
	UpdateEpochs int             // epochs per iteration with UpdateEveryIteration; if 0, the default is 1
	BatchSize    int             // surrogate minibatch; if 0, the default is 128
}

// referenceVariant is the Reference variant's rules (variantRules), the official code's: the surrogate (the
// deep-kernel SVGP of ReferenceSettings.GP) models the objective over latents, Thompson sampling picks q of each
// anchor's C latent candidates, and only the picks are decoded; picks that decode to invalid or already-seen
// molecules (by key) are dropped.
type referenceVariant struct{}

// withDefaults implements variantRules: the reference keeps the preset's Config as it is.
func (referenceVariant) withDefaults(*Config) {}

// preset implements variantRules: the paper's settings are the reference's.
func (referenceVariant) preset(*Config, Preset) {}

// paidInitial implements variantRules: the preset's initial points.
func (referenceVariant) paidInitial(p Preset) int { return p.InitialPoints }

// resolve implements variantRules.
func (referenceVariant) resolve(c *Config) error {
	if set := nonZeroFields(c.ScreenedSettings); len(set) > 0 {
		return fmt.Errorf("bo: config: %s: settings of the screened variant, given to the reference one", strings.Join(set, ", "))
	}
	s := &c.ReferenceSettings
	s.InitEpochs = cmp.Or(s.InitEpochs, 100)
	s.UpdateEpochs = cmp.Or(s.UpdateEpochs, 1)
	s.BatchSize = cmp.Or(s.BatchSize, 128)
	return nil
}

// own implements variantRules.
func (referenceVariant) own(c *Config) { c.ScreenedSettings = ScreenedSettings{} }

// newProposer implements variantRules: the SVGP over latents (D = T·F).
func (referenceVariant) newProposer(o *Optimizer) (proposer, Surrogate, error) {
	s := o.cfg.ReferenceSettings
	return &referenceProposer{o: o, s: s}, &GPSurrogate{Config: s.GP, D: o.d, Sampler: s.Sampler, BatchSize: s.BatchSize}, nil
}

// referenceProposer is the reference variant's proposer: the SVGP trained before the loop (and after every
// iteration with UpdateEveryIteration); per anchor, Thompson sampling picks q of C latent candidates in its box,
// and only the picks are decoded.
type referenceProposer struct {
	o *Optimizer
	s ReferenceSettings
}

// fitInitial implements proposer: the initial data encoded, the SVGP trained for InitEpochs.
func (p *referenceProposer) fitInitial(ctx context.Context) error {
	o := p.o
	z := make([]float64, len(o.st.Y)*o.d)
	if err := o.prob.Flow.Encode(ctx, z, o.st.Tokens); err != nil {
		return fmt.Errorf("bo: encode initial data: %w", err)
	}
	if err := o.surr.Fit(ctx, z, o.targets(o.st.Y), p.s.InitEpochs, o.rng); err != nil {
		return fmt.Errorf("bo: initial surrogate fit: %w", err)
	}
	return nil
}

// propose implements proposer: the anchors' boxes, N·q Thompson picks among their candidates, decoded, and
// the new valid molecules among them.
func (p *referenceProposer) propose(ctx context.Context, anchors []int) (*batch, error) {
	o := p.o
	t, d := o.t, o.d
	centres, probs, err := o.anchorBoxes(ctx, anchors)
	if err != nil {
		return nil, err
	}
	latents, err := p.pick(ctx, centres, probs)
	if err != nil {
		return nil, err
	}
	decoded := make([]int, len(latents)/d*t)
	o.phase("decoding the proposals")
	start := time.Now()
	if err := o.prob.Flow.Decode(ctx, decoded, latents); err != nil {
		return nil, fmt.Errorf("bo: decode proposals: %w", err)
	}
	if o.prob.Rules != nil {
		keys := make([]string, 0, len(decoded)/t)
		canon := make([]int, t)
		for i := 0; i < len(decoded)/t; i++ {
			if s, ok := o.prob.Codec.Canonical(canon, decoded[i*t:(i+1)*t]); ok {
				keys = append(keys, s)
			}
		}
		if err := o.judge(ctx, keys); err != nil {
			return nil, err
		}
	}
	b := o.filter(decoded)
	b.Proposed = len(latents) / d
	o.times.Decode += time.Since(start)
	return b, nil
}

// learn implements proposer: with UpdateEveryIteration, UpdateEpochs on the newest batch and the top TopK.
func (p *referenceProposer) learn(ctx context.Context, fresh int) error {
	if p.s.Update != UpdateEveryIteration {
		return nil
	}
	return p.update(ctx, fresh)
}

// learnsBeside implements proposer: the update encodes the molecules with the fine-tuned flow and draws from
// the run's random source, so it follows the fine-tune.
func (p *referenceProposer) learnsBeside() bool { return false }

// inputs implements proposer: the sequences' latents under the current flow.
func (p *referenceProposer) inputs(ctx context.Context, tokens []int, _ []string) ([]float64, error) {
	o := p.o
	x := make([]float64, len(tokens)/o.t*o.d)
	if err := o.prob.Flow.Encode(ctx, x, tokens); err != nil {
		return nil, fmt.Errorf("bo: encode the new molecules: %w", err)
	}
	return x, nil
}

// trainsFlow implements proposer: the flow is fine-tuned every TrainEvery new calls.
func (p *referenceProposer) trainsFlow() bool { return true }

// novelty implements proposer: the picks, and the new molecules among them.
func (p *referenceProposer) novelty(b *batch) (examined, fresh int) { return b.Proposed, len(b.SMILES) }

// pick returns N·q latents (N·q×D): per anchor, C candidates in its box and q Thompson picks among them.
func (p *referenceProposer) pick(ctx context.Context, centres, probs []float64) ([]float64, error) {
	o := p.o
	cfg, d, t := o.cfg, o.d, o.t
	c, q := cfg.Candidates, cfg.Queries
	n := len(centres) / d
	draw := o.pointDrawer()
	unit := make([]float64, c*d)
	cand := make([]float64, c*d)
	samples := make([]float64, q*c)
	pick := make([]int, q)
	out := make([]float64, n*q*d)
	half := 8 * o.st.TR.Length / 2
	for a := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o.phase("candidates")
		start := time.Now()
		draw(unit, c)
		Perturb(cand, centres[a*d:(a+1)*d], half, probs[a*t:(a+1)*t], o.f, unit, o.rng)
		o.times.Candidates += time.Since(start)
		o.phase("Thompson sampling")
		start = time.Now()
		if err := o.surr.Sample(ctx, samples, cand, q, o.rng); err != nil {
			return nil, fmt.Errorf("bo: Thompson sampling, anchor %d: %w", a, err)
		}
		ThompsonSelect(pick, samples, c)
		o.times.Thompson += time.Since(start)
		for k, i := range pick {
			copy(out[(a*q+k)*d:(a*q+k+1)*d], cand[i*d:(i+1)*d])
		}
	}
	return out, nil
}

// update trains the surrogate on the newest batch plus the top TopK, re-encoded with the current flow.
func (p *referenceProposer) update(ctx context.Context, newest int) error {
	o := p.o
	n := len(o.st.Y)
	idx := make([]int, 0, newest+o.cfg.TopK)
	for i := n - newest; i < n; i++ {
		idx = append(idx, i)
	}
	idx = append(idx, o.topK(o.cfg.TopK)...)
	z := make([]float64, len(idx)*o.d)
	if err := o.prob.Flow.Encode(ctx, z, o.gather(idx)); err != nil {
		return fmt.Errorf("bo: encode surrogate update set: %w", err)
	}
	y := make([]float64, len(idx))
	for k, i := range idx {
		y[k] = o.st.Y[i]
	}
	if err := o.surr.Fit(ctx, z, o.targets(y), p.s.UpdateEpochs, o.rng); err != nil {
		return fmt.Errorf("bo: surrogate update: %w", err)
	}
	return nil
}
