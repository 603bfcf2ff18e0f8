package bo

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nfbo/nfbo/bo/gp"
)

// proposer is the seam between the variants (Variant), chosen once by NewOptimizer from Config.Variant: what the
// surrogate learns from, how the anchors' trust regions become a batch of new molecules, and what the trust
// region's novelty rule counts. referenceProposer is the reference (a deep-kernel SVGP over latents, Thompson
// sampling before decoding, reference.go); screenedProposer the default (decode first, an exact GP on the
// molecules' features, GA children beside the flow's candidates, screened.go). Each reads only its own settings
// (ReferenceSettings, ScreenedSettings) besides the shared ones.
type proposer interface {
	// fitInitial trains the surrogate on the initial data.
	fitInitial(ctx context.Context) error
	// propose returns the iteration's batch of new molecules around the anchors (indices into the data).
	propose(ctx context.Context, anchors []int) (*batch, error)
	// learn updates the surrogate after a batch brought fresh > 0 new molecules (not after the last batch).
	learn(ctx context.Context, fresh int) error
	// learnsBeside reports whether learn reads neither the flow nor the run's random source, so that it may
	// run beside a fine-tune (Optimizer.fineTuneAndLearn).
	learnsBeside() bool
	// inputs returns the surrogate's inputs for B = len(tokens)/T sequences, the molecules smiles (B keys).
	inputs(ctx context.Context, tokens []int, smiles []string) ([]float64, error)
	// novelty returns what the trust region's novelty rule counts of b: the candidates examined and the new
	// molecules among them.
	novelty(b *batch) (examined, fresh int)
	// trainsFlow reports whether the flow is fine-tuned every TrainEvery new calls.
	trainsFlow() bool
}

// choose sets o.prop to Config.Variant's proposer, once, and returns the surrogate that variant uses when
// Problem.Surrogate is nil. The variant checks what it needs of the Problem.
func (o *Optimizer) choose() (Surrogate, error) {
	r, err := o.cfg.Variant.rules()
	if err != nil {
		return nil, err
	}
	prop, surr, err := r.newProposer(o)
	if err != nil {
		return nil, err
	}
	o.prop = prop
	return surr, nil
}

// anchorBoxes encodes the anchors with the current flow and returns their latents (N×D), the centres of their
// trust-region boxes, and the per-position perturbation probabilities (N×T): TACS's, or PerturbProb flat.
func (o *Optimizer) anchorBoxes(ctx context.Context, anchors []int) (centres, probs []float64, err error) {
	cfg, t := o.cfg, o.t
	anchorTok := o.gather(anchors)
	centres = make([]float64, len(anchors)*o.d)
	o.phase("encoding the anchors")
	start := time.Now()
	if err := o.prob.Flow.Encode(ctx, centres, anchorTok); err != nil {
		return nil, nil, fmt.Errorf("bo: encode anchors: %w", err)
	}
	o.times.Encode += time.Since(start)
	probs = make([]float64, len(anchors)*t)
	if cfg.TACS.Tau > 0 {
		o.phase("TACS")
		start = time.Now()
		stop := -1 // a Problem need not name its stop id (the reference variant's do not)
		if o.prob.Vocab > 0 {
			stop = o.prob.Stop
		}
		if err := TACSProbabilities(ctx, probs, o.prob.Flow, o.prob.Codec, anchorTok, centres, cfg.TACS, cfg.PerturbProb, stop, o.rng); err != nil {
			return nil, nil, err
		}
		o.times.TACS += time.Since(start)
	} else {
		for i := range probs {
			probs[i] = cfg.PerturbProb
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return centres, probs, nil
}

// fitRank returns the Spearman correlation between the surrogate's mean at the new molecules (tokens B×T, keys
// smiles) and their scores, or NaN when the surrogate cannot predict.
func (o *Optimizer) fitRank(ctx context.Context, tokens []int, smiles []string, scores []float64) (float64, error) {
	p, ok := o.surr.(Predictor)
	if !ok || !o.st.Fitted {
		return math.NaN(), nil
	}
	x, err := o.prop.inputs(ctx, tokens, smiles)
	if err != nil {
		return 0, err
	}
	mean := make([]float64, len(scores))
	p.Predict(mean, x)
	return gp.Spearman(mean, scores), nil
}
