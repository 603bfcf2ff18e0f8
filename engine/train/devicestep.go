package train

import (
	"fmt"
	"math"

	"github.com/nfbo/nfbo/engine/step"
)

// stepBatch returns prepareBatch's inputs and the dropout masks (nil: none)
// as engine/step's Batch: the same tokens, negatives and lengths, and the
// noise and weights rounded to float32 as the graph's inputs round them.
func stepBatch(in *batchInputs, inter, ctx [][]float32) *step.Batch {
	b := &step.Batch{Tok: in.tok, Neg: in.neg, Lens: in.lens, InterMask: inter, CtxMask: ctx,
		Eps: make([]float32, len(in.eps)), Wt: make([]float32, len(in.wt))}
	for i, v := range in.eps {
		b.Eps[i] = float32(v)
	}
	for i, v := range in.wt {
		b.Wt[i] = float32(v)
	}
	return b
}

// deviceStep returns the engine/step training step for batches of B
// sequences on Options.Device, made on first use.
func (tr *Trainer) deviceStep(B int) (*step.Step, error) {
	if s, ok := tr.steps[B]; ok {
		return s, nil
	}
	s, err := step.New(tr.opts.Device, tr.p.Config, B, step.Options{FreezeEmbeddings: tr.opts.FreezeEmbeddings})
	if err != nil {
		return nil, err
	}
	tr.steps[B] = s
	return s, nil
}

// trainStepDevice is trainStep through engine/step on Options.Device: the
// inputs drawn from the trainer's random stream as for the graph
// (prepareBatch, then the masks fillDropout would draw), the weights and
// Adam's moments uploaded before and downloaded after, so that the
// parameters, the evaluation graphs sharing them and a checkpoint stay
// current.
func (tr *Trainer) trainStepDevice(seqs [][]int, lens []int, B int) (StepStats, error) {
	s, err := tr.deviceStep(B)
	if err != nil {
		return StepStats{}, err
	}
	cfg := tr.p.Config
	in := prepareBatch(tr.p, seqs, lens, B, cfg.Noise, tr.rng)
	var inter, ctx [][]float32
	if cfg.Dropout > 0 {
		inter, ctx = dropoutMasks(cfg, B, cfg.Dropout, tr.rng)
	}
	s.SetParams(tr.p)
	s.SetMoments(tr.adam.m, tr.adam.v)
	res, err := s.Run(stepBatch(in, inter, ctx))
	if err != nil {
		return StepStats{}, fmt.Errorf("train: device step (B=%d, T=%d): %w", B, cfg.T, err)
	}
	st := StepStats{Loss: res.Loss, NLL: res.NLL, Sim: res.Sim, Rejected: in.rejected, Seqs: in.real}
	norm := res.GradNorm
	if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return st, fmt.Errorf("%w: loss %g, gradient norm %g", ErrNonFinite, st.Loss, norm)
	}
	s.Apply(tr.adam.next(norm))
	if err := s.ParamsTo(tr.p); err != nil {
		return st, err
	}
	if err := s.MomentsTo(tr.adam.m, tr.adam.v); err != nil {
		return st, err
	}
	st.GradNorm = norm
	return st, nil
}
