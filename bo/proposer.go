package bo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nfbo/nfbo/bo/gp"
)

// proposer is the seam between the two variants, chosen once by NewOptimizer from Config.Screen: what the
// surrogate learns from, how the anchors' trust regions become a batch of new molecules, and what the trust
// region's novelty rule counts. latentProposer is the reference (a deep-kernel SVGP over latents, Thompson
// sampling before decoding, latent.go); tokenProposer the screened default (decode first, an exact GP on token
// counts, GA children beside the flow's candidates, screen.go). Each reads only its own settings
// (LatentSettings, TokenSettings) besides the shared ones.
type proposer interface {
	// fitInitial trains the surrogate on the initial data.
	fitInitial(ctx context.Context) error
	// propose returns the iteration's batch of new molecules around the anchors (indices into the data).
	propose(ctx context.Context, anchors []int) (*batch, error)
	// learn updates the surrogate after a batch brought fresh > 0 new molecules (not after the last batch).
	learn(ctx context.Context, fresh int) error
	// inputs returns the surrogate's inputs for B = len(tokens)/T sequences, the molecules smiles (B keys).
	inputs(ctx context.Context, tokens []int, smiles []string) ([]float64, error)
	// novelty returns what the trust region's novelty rule counts of b: the candidates examined and the new
	// molecules among them.
	novelty(b *batch) (examined, fresh int)
}

// choose sets o.prop to Config.Screen's proposer, once, and returns the surrogate that variant uses when
// Problem.Surrogate is nil. It checks what the variant needs of the Problem.
func (o *Optimizer) choose() (Surrogate, error) {
	cfg, prob := o.cfg, o.prob
	if cfg.Screen == ScreenLatent {
		s := cfg.LatentSettings
		o.prop = &latentProposer{o: o, s: s}
		return &GPSurrogate{Config: s.GP, D: o.d, Sampler: s.Sampler, BatchSize: s.BatchSize}, nil
	}
	if prob.Vocab <= 0 || prob.Stop < 0 || prob.Stop >= prob.Vocab {
		return nil, fmt.Errorf("bo: token screening needs the vocabulary size and stop id (got %d, %d)", prob.Vocab, prob.Stop)
	}
	if cfg.Offspring > 0 && len(prob.Alphabet) == 0 {
		return nil, errors.New("bo: offspring need a mutation alphabet (Problem.Alphabet)")
	}
	if cfg.Library > 0 && (len(prob.Library) == 0 || len(prob.Library)%o.t != 0) {
		return nil, fmt.Errorf("bo: Library = %d needs Problem.Library, rows of T = %d token ids (got %d ids)",
			cfg.Library, o.t, len(prob.Library))
	}
	o.prop = &tokenProposer{o: o, s: cfg.TokenSettings}
	d, fw := TokenFeatureLen(prob.Vocab), 0
	if prob.Features != nil {
		d, fw = prob.Features.Width(), prob.Features.Width()
	}
	exact, err := cfg.Inputs.exactConfig(cfg.Exact, fw, prob.Vocab)
	if err != nil {
		return nil, err
	}
	return &ExactGPSurrogate{Config: exact, D: d}, nil
}

// tokenProposer is the screened variant (ScreenTokens): its methods are in screen.go.
type tokenProposer struct {
	o *Optimizer
	s TokenSettings
	// reads counts, per chunk, the anchors of the last batch that read it (lookahead.read): which chunks the
	// next batch decodes ahead. Only speed depends on it, so it is not checkpointed.
	reads []int
	alone bool // decode each anchor's chunks alone, never ahead (a test compares the picks)
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
		stop := -1 // the reference variant's problems need not name their stop id
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
