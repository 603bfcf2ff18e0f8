package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// resident is the trainer's state on Options.Device: the weights and
// Adam's moments live there from the first step to the last, shared by the
// steps of every batch size, and the host's copies (the Params the trainer
// was made with, Adam's m and v) are brought up to date only when something
// reads them: a validation, a checkpoint, Params, the end of Pretrain and
// FineTune.
type resident struct {
	state *step.State
	// ahead: the device holds steps the host's copies lack; behind: the
	// host's copies changed (a restore, a fine-tune of other Params) and
	// the device must take them before its next step.
	ahead, behind bool
	// err is a failed download by Params, which cannot return it; the next
	// step or sync does.
	err error
}

// submitter is a Device that takes a step's calls in one crossing to the
// thread that owns it (engine/gpustep.Device.Do).
type submitter interface {
	Do(f func() error) error
}

// deviceStep returns the engine/step training step for batches of B
// sequences on Options.Device, made on first use, on the trainer's
// resident state.
func (tr *Trainer) deviceStep(B int) (*step.Step, error) {
	if s, ok := tr.steps[B]; ok {
		return s, nil
	}
	if tr.res.state == nil {
		st, err := step.NewState(tr.opts.Device, tr.p.Config)
		if err != nil {
			return nil, err
		}
		tr.res.state, tr.res.behind = st, true
	}
	s, err := step.New(tr.opts.Device, tr.p.Config, B, step.Options{FreezeEmbeddings: tr.opts.FreezeEmbeddings, State: tr.res.state})
	if err != nil {
		return nil, err
	}
	tr.steps[B] = s
	return s, nil
}

// deviceInputs returns the host's part of a device step on seqs padded to
// lens (nil: T) in a batch of B: the tokens t-major (the rows of the B −
// len(seqs) padding sequences repeat the first), the lengths, and the key
// of its draws.
func (tr *Trainer) deviceInputs(seqs [][]int, lens []int, B int, key kernels.PhiloxKey) *step.Inputs {
	T := tr.p.Config.T
	in := &step.Inputs{Tok: make([]int32, T*B), Lens: make([]int32, B), Real: len(seqs), Key: key}
	for b := range B {
		s, l := seqs[0], T
		if b < len(seqs) {
			s = seqs[b]
			if lens != nil {
				l = lens[b]
			}
		}
		in.Lens[b] = int32(l)
		for t := range T {
			in.Tok[t*B+b] = int32(s[t])
		}
	}
	return in
}

// trainStep runs one optimiser step on seqs (1 ≤ len(seqs) ≤ B, already
// checked) padded to lens (nil: T) with the step for batch size B, through
// engine/step on Options.Device: the tokens and lengths uploaded (the B −
// len(seqs) padding sequences of weight 0), the noise, negatives and
// dropout masks drawn there under a key from the trainer's random stream,
// Adam's step (its clipping too) taken there; the host reads the step's
// sums back, and the weights stay on the device.
func (tr *Trainer) trainStep(seqs [][]int, lens []int, B int) (StepStats, error) {
	s, err := tr.deviceStep(B)
	if err != nil {
		return StepStats{}, err
	}
	if err := tr.syncDevice(); err != nil {
		return StepStats{}, err
	}
	cfg := tr.p.Config
	in := tr.deviceInputs(seqs, lens, B, kernels.KeyOf(tr.rng.Uint64()))
	tr.res.ahead = true
	coef := tr.adam.next(0) // its scale is the device's to compute
	var res step.Result
	err = tr.onDevice(func() (err error) {
		res, err = s.Train(in, coef, tr.adam.ClipNorm)
		return err
	})
	if err != nil {
		tr.adam.step--
		return StepStats{}, fmt.Errorf("train: device step (B=%d, T=%d): %w", B, cfg.T, err)
	}
	st := StepStats{Loss: res.Loss, NLL: res.NLL, Sim: res.Sim, GradNorm: res.GradNorm, Rejected: res.Rejected, Seqs: len(seqs)}
	if !step.Finite(res.Loss, res.GradNorm*res.GradNorm) {
		tr.adam.step-- // the device left everything as it was
		return st, fmt.Errorf("%w: loss %g, gradient norm %g", ErrNonFinite, st.Loss, st.GradNorm)
	}
	return st, nil
}

// evaluateDevice is Evaluate's work on Options.Device: each batch's noise and
// negatives drawn there under a key fixed by valSeed and the batch's place,
// dropout off, the sums read back; the weights stay where they are.
func (tr *Trainer) evaluateDevice(ctx context.Context, seqs [][]int) (EvalStats, error) {
	B := tr.opts.EvalBatch
	s, err := tr.deviceStep(B)
	if err != nil {
		return EvalStats{}, err
	}
	if err := tr.syncDevice(); err != nil {
		return EvalStats{}, err
	}
	var es EvalStats
	for i := 0; i < len(seqs); i += B {
		if err := ctx.Err(); err != nil {
			return EvalStats{}, err
		}
		part := seqs[i:min(i+B, len(seqs))]
		in := tr.deviceInputs(part, nil, B, kernels.KeyOf(valSeed+uint64(i)))
		var res step.Result
		err := tr.onDevice(func() (err error) {
			res, err = s.Eval(in)
			return err
		})
		if err != nil {
			return EvalStats{}, fmt.Errorf("train: device validation (B=%d): %w", B, err)
		}
		es.add(res.NLL, res.Sim, len(part))
	}
	es.finish(tr.p)
	return es, nil
}

// onDevice runs f, a step's calls of Options.Device, in one crossing where
// the Device takes them so (a GPU), else as it is.
func (tr *Trainer) onDevice(f func() error) error {
	if sub, ok := tr.opts.Device.(submitter); ok {
		return sub.Do(f)
	}
	return f()
}

// syncDevice uploads the host's weights and moments when they changed
// since the device last had them.
func (tr *Trainer) syncDevice() error {
	if err := tr.res.err; err != nil {
		return err
	}
	if !tr.res.behind || tr.res.state == nil {
		return nil
	}
	tr.res.state.SetParams(tr.p)
	tr.res.state.SetMoments(tr.adam.m, tr.adam.v)
	tr.res.behind = false
	return nil
}

// syncHost downloads the device's weights and moments into the host's
// copies when the device has taken steps since.
func (tr *Trainer) syncHost() error {
	if err := tr.res.err; err != nil {
		return err
	}
	if !tr.res.ahead {
		return nil
	}
	st := tr.res.state
	if err := errors.Join(st.ParamsTo(tr.p), st.MomentsTo(tr.adam.m, tr.adam.v)); err != nil {
		tr.res.err = fmt.Errorf("train: reading the weights back from the device: %w", err)
		return tr.res.err
	}
	tr.res.ahead = false
	return nil
}

// hostChanged records that the host's weights or moments were written, so
// that the device takes them before its next step.
func (tr *Trainer) hostChanged() { tr.res.behind = tr.res.state != nil }

// Sync brings the Params the trainer was made with, and Adam's moments, up
// to date with the steps taken on the device (a no-op when it has taken
// none since the last sync).
// Pretrain, FineTune, Evaluate, Checkpoint and Params do it themselves;
// Sync returns the error where Params cannot.
func (tr *Trainer) Sync() error { return tr.syncHost() }

// copyParams copies src's weights into dst (of the same config).
func copyParams(dst, src *model.Params) {
	d, s := dst.Tensors(), src.Tensors()
	for i := range d {
		copy(d[i].Data, s[i].Data)
	}
}
