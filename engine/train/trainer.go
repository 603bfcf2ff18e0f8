package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/model"
)

// Defaults of Options, from the reference (nfbo_reference.md c and h).
const (
	// DefaultBatch is the pretraining batch size.
	DefaultBatch = 128
	// DefaultFineTuneBatch is the batch size of the BO loop's fine-tuning.
	DefaultFineTuneBatch = 32
)

// valSeed seeds the noise of validation passes, so that successive
// validations of one run see the same dequantisation noise and are
// comparable, and so that validation never touches the training stream.
const valSeed = 0x5eed_f10e

// ErrNonFinite reports a loss or gradient that is NaN or ±Inf; the step
// that produced it was not applied.
var ErrNonFinite = errors.New("train: non-finite loss or gradient")

// Options configure a Trainer. The zero value gives the reference's
// settings.
type Options struct {
	// Batch is the number of sequences per pretraining step (default 128).
	Batch int
	// FineTuneBatch is the number of sequences per fine-tuning step
	// (default 32).
	FineTuneBatch int
	// EvalBatch is the number of sequences per evaluation pass (default Batch).
	EvalBatch int
	// LearnRate is Adam's learning rate (default 1e-3).
	LearnRate float64
	// ClipNorm is the global gradient-norm bound (default 1; negative: off).
	ClipNorm float64
	// FreezeEmbeddings keeps the token embeddings as they are: their
	// gradient is dropped and Adam leaves them alone. Training can raise the
	// density by merging two tokens' embeddings until the decoder confuses
	// them (BENCHMARKS.md, "Random padded lengths"); a model whose
	// embeddings are well apart can train on without that risk.
	FreezeEmbeddings bool
	// RandomPad makes Pretrain train each sequence as if it were padded to
	// a length T_b drawn uniformly from [L_b, T], L_b being its length up to
	// and including its first PadToken, so that the model is good at every
	// sequence length the optimiser may use (its T is the longest molecule
	// of its data, often well below the pretraining T). Positions from T_b on
	// carry no loss; validation and FineTune use T. Off: every sequence is
	// T long, as in the reference.
	RandomPad bool
	// PadToken ends a molecule and pads its sequence (chem/vocab.Stop); it
	// is read only with RandomPad.
	PadToken int
	// Device runs every training step (Step, Pretrain, FineTune) and every
	// validation (Evaluate) through engine/step: a GPU (engine/gpustep), or
	// nil for CPU{}, this machine's cores. Checkpoints do not depend on it.
	Device step.Device
}

func (o Options) withDefaults() Options {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.FineTuneBatch <= 0 {
		o.FineTuneBatch = DefaultFineTuneBatch
	}
	if o.EvalBatch <= 0 {
		o.EvalBatch = o.Batch
	}
	if o.LearnRate <= 0 {
		o.LearnRate = DefaultLearnRate
	}
	if o.ClipNorm == 0 {
		o.ClipNorm = DefaultClipNorm
	}
	if o.Device == nil {
		o.Device = CPU{}
	}
	return o
}

// Trainer trains a SeqFlow's parameters in place in float32 through
// engine/step on Options.Device. It keeps one step per batch size on one
// resident state (weights and Adam's moments on the device), and brings the
// model.Params it was created with up to date whenever they are read
// (Params, Sync, checkpoints, the end of Pretrain and FineTune). A Trainer
// is not safe for concurrent use.
type Trainer struct {
	p    *model.Params
	opts Options
	adam *Adam
	src  *rand.PCG
	rng  *rand.Rand

	tensors []*model.Tensor
	index   map[*model.Tensor]int

	steps map[int]*step.Step // per batch size
	res   resident

	// Position in the pretraining data: epoch e visits the training set in
	// the order rand.New(rand.NewPCG(shuffleSeed, e)).Perm(n).
	step        int64
	epoch       int64
	cursor      int64
	shuffleSeed uint64
}

// NewTrainer returns a trainer of p (trained in place) whose noise, negative
// tokens, dropout masks and data order come from src. src is owned by the
// trainer from then on; its state is part of MarshalState.
func NewTrainer(p *model.Params, src *rand.PCG, opts Options) (*Trainer, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	if p.Config.T < 2 {
		return nil, fmt.Errorf("train: seq_len %d must be at least 2", p.Config.T)
	}
	opts = opts.withDefaults()
	tr := &Trainer{p: p, opts: opts, src: src, rng: rand.New(src),
		tensors: p.Tensors(), index: map[*model.Tensor]int{}, steps: map[int]*step.Step{}}
	for i, t := range tr.tensors {
		tr.index[t] = i
	}
	tr.adam = NewAdam(tr.tensors)
	tr.configureAdam()
	tr.shuffleSeed = tr.rng.Uint64()
	return tr, nil
}

// configureAdam applies the options to the trainer's Adam.
func (tr *Trainer) configureAdam() {
	tr.adam.LR = tr.opts.LearnRate
	tr.adam.ClipNorm = tr.opts.ClipNorm
	tr.adam.Frozen = nil
	if tr.opts.FreezeEmbeddings {
		tr.adam.Frozen = make([]bool, len(tr.tensors))
		tr.adam.Frozen[tr.index[tr.p.Embed]] = true
	}
}

// Params returns the parameters being trained (shared, not a copy),
// brought up to date first with the steps taken on the device (a failed
// download comes back from Sync and from the next step).
func (tr *Trainer) Params() *model.Params {
	tr.syncHost()
	return tr.p
}

// Adam returns the optimiser, e.g. to inspect its step count.
func (tr *Trainer) Adam() *Adam { return tr.adam }

// Steps returns the number of optimiser steps taken by Pretrain and Step.
func (tr *Trainer) Steps() int64 { return tr.step }

// Prepare allocates the steps for batches of B sequences and for
// Options.EvalBatch ahead of time, so that the first step's timing is the
// step's.
func (tr *Trainer) Prepare(ctx context.Context, B int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := tr.deviceStep(B); err != nil {
		return err
	}
	_, err := tr.deviceStep(tr.opts.EvalBatch)
	return err
}

// StepStats describe one optimiser step.
type StepStats struct {
	// Loss is the batch's training loss (mean over sequences of the sum over
	// positions of nll + λ·sim).
	Loss float64
	// NLL is the mean negative log density per token (nats).
	NLL float64
	// Sim is the mean similarity loss per token.
	Sim float64
	// GradNorm is the global gradient norm before clipping.
	GradNorm float64
	// Rejected counts positions whose noise still changed the nearest token
	// after 100 draws.
	Rejected int
	// Seqs is the number of sequences in the batch.
	Seqs int
}

// Step takes one optimiser step on seqs (at most Options.Batch sequences of
// length T, padded internally) and returns its statistics.
func (tr *Trainer) Step(ctx context.Context, seqs [][]int) (StepStats, error) {
	if err := ctx.Err(); err != nil {
		return StepStats{}, err
	}
	if len(seqs) == 0 || len(seqs) > tr.opts.Batch {
		return StepStats{}, fmt.Errorf("train: step on %d sequences, want 1..%d", len(seqs), tr.opts.Batch)
	}
	if err := checkSeqs(tr.p.Config, seqs); err != nil {
		return StepStats{}, err
	}
	st, err := tr.trainStep(seqs, nil, tr.opts.Batch)
	if err == nil {
		tr.step++
	}
	return st, err
}

// EvalStats summarise a forward pass over a set of sequences.
type EvalStats struct {
	// NLL is the mean negative log density per token (nats) of the
	// dequantised embeddings.
	NLL float64
	// Sim is the mean similarity loss per token.
	Sim float64
	// Seqs is the number of sequences evaluated.
	Seqs int
	// EmbedCos is the largest cosine between two distinct token embeddings
	// (ClosestEmbeddings); near 1 the decoder confuses the two.
	EmbedCos float64
}

// Evaluate returns the NLL and similarity loss per token of seqs, dropout
// off, in batches of Options.EvalBatch whose noise and negatives are drawn
// under keys fixed by valSeed and the batch's place (so repeated
// evaluations are comparable and the training random stream is untouched).
func (tr *Trainer) Evaluate(ctx context.Context, seqs [][]int) (EvalStats, error) {
	if err := checkSeqs(tr.p.Config, seqs); err != nil {
		return EvalStats{}, err
	}
	if err := tr.syncHost(); err != nil { // the embeddings' cosine reads them
		return EvalStats{}, err
	}
	return tr.evaluateDevice(ctx, seqs)
}

// add adds a batch of n sequences whose means per token are nll and sim.
func (es *EvalStats) add(nll, sim float64, n int) {
	es.NLL += nll * float64(n)
	es.Sim += sim * float64(n)
	es.Seqs += n
}

// finish turns the sums into means over the sequences and measures p's
// closest embeddings.
func (es *EvalStats) finish(p *model.Params) {
	if es.Seqs > 0 {
		es.NLL /= float64(es.Seqs)
		es.Sim /= float64(es.Seqs)
	}
	es.EmbedCos, _, _ = ClosestEmbeddings(p)
}

// Progress is one report of Pretrain to its Recorder.
type Progress struct {
	// Step is the number of optimiser steps done; TotalSteps the target.
	Step, TotalSteps int64
	// Epoch is the current pass over the training set (from 0).
	Epoch int64
	// StepStats are the last step's statistics.
	StepStats
	// SeqPerSec is the training throughput since this Pretrain call began.
	SeqPerSec float64
	// Elapsed is the time since this Pretrain call began; Remaining the
	// estimate for the steps left at the average step time so far.
	Elapsed, Remaining time.Duration
	// Val is the validation result when this step ran one, else nil.
	Val *EvalStats
	// Recon is the reconstruction check run with the validation
	// (PretrainConfig.Recon), else nil.
	Recon *ReconStats
	// LR is the learning rate this step was taken at when PretrainConfig.LearnRate set it, else 0.
	LR float64
	// Checkpoint is true when a checkpoint was written after this step.
	Checkpoint bool
	// Flat is true when this step's validation made PretrainConfig.Plateau flat: it is the last step.
	Flat bool
}

// ReconStats count the validation molecules the flow decodes back from
// their latents token for token.
type ReconStats struct{ OK, N int }

// A Recorder receives Pretrain's progress after every step. An error stops
// training and is returned by Pretrain.
type Recorder interface {
	Record(Progress) error
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(Progress) error

// Record calls f.
func (f RecorderFunc) Record(p Progress) error { return f(p) }

// PretrainConfig says how long Pretrain runs and what it reports.
type PretrainConfig struct {
	// Steps is the total number of optimiser steps to reach, counting steps
	// done before a resume.
	Steps int64
	// Val is the held-out set evaluated every ValEvery steps and at the end
	// (nil: no validation).
	Val [][]int
	// Recon, when positive, is the number of Val's first sequences whose
	// reconstruction (Reconstructed) is checked with every validation.
	Recon int
	// ValEvery is the validation interval in steps (0: only at the end).
	ValEvery int64
	// CheckpointEvery is the checkpoint interval in steps (0: only at the
	// end); Checkpoint is called then and after the last step.
	CheckpointEvery int64
	// Checkpoint persists the trainer (weights and MarshalState); nil: none.
	Checkpoint func(ctx context.Context, tr *Trainer) error
	// Recorder receives progress after every step (nil: none).
	Recorder Recorder
	// Plateau, when not nil, observes every validation; training ends after the validation that makes the
	// curve flat, with a checkpoint, or at once if it is flat already.
	Plateau *Plateau
	// LearnRate, when not nil, gives the learning rate of the step taken after step steps (Anneal.LR); it is
	// set on Adam before every step, so that Adam's state, and a checkpoint, hold the last step's. nil: Adam's
	// rate stays as it is.
	LearnRate func(step int64) float64
}

// Pretrain trains on train (token sequences of length T) until
// cfg.Steps optimiser steps are done, in batches of Options.Batch visited in
// a fresh random order each epoch; the last batch of an epoch is partial.
// It continues from the trainer's position, so a trainer restored with
// UnmarshalState resumes exactly where the checkpointed one stopped. It
// stops early when cfg.Plateau says the validation curve is flat, and
// returns ctx's error if cancelled (the last checkpoint stays valid).
func (tr *Trainer) Pretrain(ctx context.Context, train [][]int, cfg PretrainConfig) (err error) {
	defer func() { err = errors.Join(err, tr.syncHost()) }()
	if len(train) == 0 {
		return errors.New("train: empty training set")
	}
	if err := checkSeqs(tr.p.Config, train); err != nil {
		return fmt.Errorf("training set: %w", err)
	}
	if err := checkSeqs(tr.p.Config, cfg.Val); err != nil {
		return fmt.Errorf("validation set: %w", err)
	}
	if cfg.Plateau != nil && cfg.Plateau.Flat() {
		return nil
	}
	B := tr.opts.Batch
	n := int64(len(train))
	var perm []int
	permEpoch := int64(-1)
	start := time.Now()
	startStep := tr.step
	var seqsDone int64
	batch := make([][]int, 0, B)
	for tr.step < cfg.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if tr.cursor >= n {
			tr.epoch++
			tr.cursor = 0
		}
		if permEpoch != tr.epoch {
			perm = rand.New(rand.NewPCG(tr.shuffleSeed, uint64(tr.epoch))).Perm(int(n))
			permEpoch = tr.epoch
		}
		end := min(tr.cursor+int64(B), n)
		batch = batch[:0]
		for _, i := range perm[tr.cursor:end] {
			batch = append(batch, train[i])
		}
		var lens []int
		if tr.opts.RandomPad {
			lens = tr.drawLengths(batch)
		}
		var lr float64
		if cfg.LearnRate != nil {
			lr = cfg.LearnRate(tr.step)
			tr.adam.LR = lr
		}
		st, err := tr.trainStep(batch, lens, B)
		if err != nil {
			return fmt.Errorf("train: step %d: %w", tr.step+1, err)
		}
		tr.step++
		tr.cursor = end
		seqsDone += int64(len(batch))

		pr := Progress{Step: tr.step, TotalSteps: cfg.Steps, Epoch: tr.epoch, StepStats: st, LR: lr}
		last := tr.step == cfg.Steps
		if len(cfg.Val) > 0 && (last || (cfg.ValEvery > 0 && tr.step%cfg.ValEvery == 0)) {
			es, err := tr.Evaluate(ctx, cfg.Val)
			if ctx.Err() != nil {
				return ctx.Err() // interrupted, not failed: the caller checkpoints
			}
			if err != nil {
				return fmt.Errorf("train: validation at step %d: %w", tr.step, err)
			}
			pr.Val = &es
			if n := min(cfg.Recon, len(cfg.Val)); n > 0 {
				ok, err := Reconstructed(ctx, tr.p, cfg.Val[:n])
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					return fmt.Errorf("train: reconstruction check at step %d: %w", tr.step, err)
				}
				pr.Recon = &ReconStats{OK: ok, N: n}
			}
			if cfg.Plateau != nil && cfg.Plateau.Observe(tr.step, es.NLL) {
				pr.Flat, last = true, true
			}
		}
		if cfg.Checkpoint != nil && (last || (cfg.CheckpointEvery > 0 && tr.step%cfg.CheckpointEvery == 0)) {
			if err := cfg.Checkpoint(ctx, tr); err != nil {
				return fmt.Errorf("train: checkpoint at step %d: %w", tr.step, err)
			}
			pr.Checkpoint = true
		}
		pr.Elapsed = time.Since(start)
		pr.SeqPerSec = float64(seqsDone) / pr.Elapsed.Seconds()
		per := pr.Elapsed / time.Duration(tr.step-startStep)
		pr.Remaining = per * time.Duration(cfg.Steps-tr.step)
		if cfg.Recorder != nil {
			if err := cfg.Recorder.Record(pr); err != nil {
				return err
			}
		}
		if pr.Flat {
			return nil
		}
	}
	return nil
}

// drawLengths draws the padded length of each sequence of a batch for
// Options.RandomPad from the trainer's random stream.
func (tr *Trainer) drawLengths(seqs [][]int) []int {
	T := tr.p.Config.T
	lens := make([]int, len(seqs))
	for b, s := range seqs {
		L := T
		for t, x := range s {
			if x == tr.opts.PadToken {
				L = t + 1
				break
			}
		}
		L = max(L, 2)
		lens[b] = L + tr.rng.IntN(T-L+1)
	}
	return lens
}

// FineTune trains p for one epoch over seqs in a random order, in batches of
// Options.FineTuneBatch with dropout on, continuing the trainer's Adam state
// (the reference creates its optimiser once per BO run). This is the BO
// loop's flow update (nfbo_reference.md c.2). p must have the trainer's
// config; when it is not the trainer's own Params its weights are copied in
// before and out after. It does not move the pretraining data position. The
// result averages Loss, NLL and Sim over the epoch's sequences, sums
// Rejected and Seqs, and gives the last step's GradNorm.
func (tr *Trainer) FineTune(ctx context.Context, p *model.Params, seqs [][]int) (_ StepStats, errOut error) {
	if p.Config != tr.p.Config {
		return StepStats{}, fmt.Errorf("train: fine-tune params config %+v differs from the trainer's %+v", p.Config, tr.p.Config)
	}
	if err := checkSeqs(tr.p.Config, seqs); err != nil {
		return StepStats{}, fmt.Errorf("fine-tune set: %w", err)
	}
	if p != tr.p {
		if err := tr.syncHost(); err != nil { // the moments
			return StepStats{}, err
		}
		copyParams(tr.p, p)
		tr.hostChanged()
		defer copyParams(p, tr.p)
	}
	defer func() {
		if err := tr.syncHost(); err != nil && errOut == nil {
			errOut = err
		}
	}()
	B := tr.opts.FineTuneBatch
	perm := tr.rng.Perm(len(seqs))
	var total StepStats
	batch := make([][]int, 0, B)
	for i := 0; i < len(perm); i += B {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		batch = batch[:0]
		for _, j := range perm[i:min(i+B, len(perm))] {
			batch = append(batch, seqs[j])
		}
		st, err := tr.trainStep(batch, nil, B)
		if err != nil {
			return total, fmt.Errorf("train: fine-tune batch %d: %w", i/B+1, err)
		}
		w := float64(len(batch))
		total.Loss += st.Loss * w
		total.NLL += st.NLL * w
		total.Sim += st.Sim * w
		total.GradNorm = st.GradNorm
		total.Rejected += st.Rejected
		total.Seqs += len(batch)
	}
	if total.Seqs > 0 {
		n := float64(total.Seqs)
		total.Loss /= n
		total.NLL /= n
		total.Sim /= n
	}
	return total, nil
}

// stateMagic starts an encoded trainer state.
const stateMagic = "NFBOTRAIN1"

// MarshalState encodes everything a resumed run needs besides the weights:
// step count, data position (epoch, cursor, shuffle seed), the random
// source's state and the Adam state. Layout, little-endian: magic, step,
// epoch, cursor (int64), shuffle seed (uint64), then the PCG state and the
// Adam state (see Adam.MarshalBinary), each preceded by its length (uint32).
// It is the optimiser-state section of a model checkpoint.
func (tr *Trainer) MarshalState() ([]byte, error) {
	if err := tr.syncHost(); err != nil {
		return nil, err
	}
	rs, err := tr.src.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("train: random state: %w", err)
	}
	as, err := tr.adam.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(stateMagic)
	w := func(v any) { binary.Write(&buf, binary.LittleEndian, v) }
	w([]int64{tr.step, tr.epoch, tr.cursor})
	w(tr.shuffleSeed)
	w(uint32(len(rs)))
	buf.Write(rs)
	w(uint32(len(as)))
	buf.Write(as)
	return buf.Bytes(), nil
}

// UnmarshalState restores a state written by MarshalState into a trainer
// of the same configuration (the weights are restored separately, into the
// trainer's Params).
func (tr *Trainer) UnmarshalState(data []byte) error {
	if !bytes.HasPrefix(data, []byte(stateMagic)) {
		return errors.New("train: trainer state: bad magic")
	}
	r := bytes.NewReader(data[len(stateMagic):])
	rd := func(v any) error { return binary.Read(r, binary.LittleEndian, v) }
	var pos [3]int64
	var seed uint64
	var nr uint32
	if err := errors.Join(rd(&pos), rd(&seed), rd(&nr)); err != nil {
		return fmt.Errorf("train: trainer state header: %w", err)
	}
	rs := make([]byte, nr)
	if _, err := r.Read(rs); err != nil && nr > 0 {
		return fmt.Errorf("train: trainer state random source: %w", err)
	}
	var na uint32
	if err := rd(&na); err != nil {
		return fmt.Errorf("train: trainer state: %w", err)
	}
	as := make([]byte, na)
	if n, _ := r.Read(as); n != int(na) {
		return fmt.Errorf("train: trainer state: Adam section has %d of %d bytes", n, na)
	}
	var src rand.PCG
	if err := src.UnmarshalBinary(rs); err != nil {
		return fmt.Errorf("train: trainer state random source: %w", err)
	}
	adam := NewAdam(tr.tensors)
	if err := adam.UnmarshalBinary(as); err != nil {
		return err
	}
	*tr.src = src
	adam.Frozen = tr.adam.Frozen // the options', not the state's
	tr.adam = adam
	tr.step, tr.epoch, tr.cursor, tr.shuffleSeed = pos[0], pos[1], pos[2], seed
	tr.res.ahead = false // the restored state replaces the device's
	tr.hostChanged()
	return nil
}

// checkSeqs reports the first sequence of the wrong length or with a token
// outside [0, V).
func checkSeqs(cfg model.Config, seqs [][]int) error {
	for i, s := range seqs {
		if len(s) != cfg.T {
			return fmt.Errorf("train: sequence %d has %d tokens, want seq_len %d", i, len(s), cfg.T)
		}
		for t, x := range s {
			if x < 0 || x >= cfg.V {
				return fmt.Errorf("train: sequence %d position %d: token %d outside vocabulary [0, %d)", i, t, x, cfg.V)
			}
		}
	}
	return nil
}
