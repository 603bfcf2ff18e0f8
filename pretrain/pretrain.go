// Package pretrain is a pretraining run of a SeqFlow on a file of molecules, the workflow around
// engine/train's training loop: it reads the molecules, holds out a validation set, starts a model from a
// preset (or resumes the run whose checkpoint is in the output directory, with the same split, batch and
// random streams), anneals the learning rate, stops on a flat validation curve, checkpoints and reports its
// progress to a Reporter. "nfbo pretrain" is flags around Run.
package pretrain

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

// The checkpoint sections the workflow adds to engine/train's. Their names keep the prefix of the CLI that
// first wrote them, so that checkpoints written before this package existed still resume.
const (
	// argsKey holds the settings a resumed run must reuse (data split, batch size, seed): savedArgs.
	argsKey = "cmd/pretrain.args"
	// plateauKey holds the Patience rule's state (train.Plateau), so that a resumed run keeps counting.
	plateauKey = "cmd/pretrain.plateau"
)

// ArgError is a setting that cannot work (a value out of range, an unknown preset, -patience without
// validation molecules): the CLI exits 2 with it.
type ArgError struct{ Err error }

// Error returns the problem.
func (e *ArgError) Error() string { return e.Err.Error() }

// Unwrap returns the problem.
func (e *ArgError) Unwrap() error { return e.Err }

func argErrorf(format string, args ...any) error { return &ArgError{fmt.Errorf(format, args...)} }

// DefaultVocab is the vocabulary of a new run that names none: the shipped model's (data/models/small), NF-BO's
// GuacaMol tokens followed by the ZINC tokens they lack, ZINC's stereo tokens among them. GuacaMol's alone leaves
// out every molecule with a stereocentre or a double bond's geometry: 157,337 of ZINC250k's 249,455.
const DefaultVocab = "guacamol+zinc"

// Settings are a pretraining run's settings, the flags of "nfbo pretrain" (messages name the flags). Those
// marked "new run" only shape a new run: Resume takes them from the checkpoint.
type Settings struct {
	// Data is the file of molecules (Read); Out the model directory, which gets model.CheckpointName.
	Data, Out string
	// Resume continues the run whose checkpoint is in Out until Steps steps in total.
	Resume bool
	// Preset (model.Preset), Transform ("" for the preset's) and Vocab (vocab.Named, or "build" from the
	// data; "" for DefaultVocab) shape the model: new run.
	Preset, Transform, Vocab string
	// SeqLen is the sequence length T; 0 means 1 + the longest molecule: new run.
	SeqLen int
	// InitEmbed is a model directory whose token embeddings (same vocabulary) a new run starts from; "" for none.
	InitEmbed string
	// Steps is the total number of optimiser steps; 0 means the end of the decay when there is one, else one
	// epoch more.
	Steps int64
	// Batch is the sequences per step, ValFrac the fraction of molecules held out and Seed the seed of the
	// split, the initial weights and the training noise: new run.
	Batch   int
	ValFrac float64
	Seed    uint64
	// ValEvery and CheckpointEvery are the intervals in steps of validation and checkpoints (0: at the end only).
	ValEvery, CheckpointEvery int64
	// Recon is how many validation molecules each validation checks for reconstruction (0: none).
	Recon int
	// InitOnly writes the randomly initialised model (step 0) and stops.
	InitOnly bool
	// RandomPad (train.Options.RandomPad) and FreezeEmbed (train.Options.FreezeEmbeddings); nil means the
	// checkpoint's on a resume, off in a new run.
	RandomPad, FreezeEmbed *bool
	// Patience stops training after this many validations in a row that have not lowered the best validation
	// NLL per token by MinDelta nats (0: train to Steps).
	Patience int
	MinDelta float64
	// DecaySteps lowers the learning rate along a half cosine to LRMin over this many steps (0: a constant
	// rate, or the checkpoint's decay on a resume), from step DecayStart (-1: this run's first step).
	DecaySteps, DecayStart int64
	LRMin                  float64
	// Device runs the training steps and validations (engine/step on engine/gpustep's GPU); nil means this
	// machine's cores (train.CPU). Checkpoints do not depend on it: a run may be resumed on another.
	Device step.Device
}

// Check checks the settings that need neither the data nor the checkpoint; a bad one is an *ArgError.
func (s Settings) Check() error {
	switch {
	case s.Data == "" || s.Out == "":
		return argErrorf("-data and -out are required")
	case s.Batch < 1 || s.Steps < 0 || s.ValEvery < 0 || s.CheckpointEvery < 0:
		return argErrorf("-batch must be positive, -steps, -val-every and -checkpoint-every not negative")
	case !(s.ValFrac >= 0 && s.ValFrac < 1):
		return argErrorf("-val-frac %g must be in [0, 1)", s.ValFrac)
	case s.Recon < 0:
		return argErrorf("-recon %d must not be negative", s.Recon)
	case s.SeqLen < 0:
		return argErrorf("-seq-len %d must not be negative", s.SeqLen)
	case s.Patience < 0 || !(s.MinDelta >= 0):
		return argErrorf("-patience %d and -min-delta %g must not be negative", s.Patience, s.MinDelta)
	case s.DecaySteps < 0 || !(s.LRMin >= 0 && s.LRMin < train.DefaultLearnRate):
		return argErrorf("-decay-steps %d must not be negative and -lr-min %g must be in [0, %g)", s.DecaySteps, s.LRMin, train.DefaultLearnRate)
	case s.DecayStart < -1 || (s.DecayStart >= 0 && s.DecaySteps == 0):
		return argErrorf("-decay-start %d needs -decay-steps and must not be negative", s.DecayStart)
	}
	return nil
}

// CheckpointPath returns the file the run writes its checkpoints to.
func (s Settings) CheckpointPath() string { return filepath.Join(s.Out, model.CheckpointName) }

// Reporter is told what a run does. Run calls it from its own goroutine, in order.
type Reporter interface {
	// Note reports one line for people: a molecule left out (FILE:LINE: reason), the run's header
	// (train.FormatHeader), a note or a warning.
	Note(line string)
	// Step reports the progress after every optimiser step; an error stops the run.
	Step(p train.Progress) error
}

// savedArgs are the settings of a run that fix its data split and its random streams; every checkpoint holds
// them (argsKey) and a resume takes them from there. The JSON names are those of existing checkpoints.
type savedArgs struct {
	Data    string  `json:"data"`
	Seed    uint64  `json:"seed"`
	ValFrac float64 `json:"val_frac"`
	Batch   int     `json:"batch"`
	// RandomPad trains each molecule at a random padded length (train.Options.RandomPad); a resume may
	// switch it on or off.
	RandomPad bool `json:"random_pad,omitempty"`
	// FreezeEmbed keeps the token embeddings fixed (train.Options.FreezeEmbeddings); a resume may switch it.
	FreezeEmbed bool `json:"freeze_embed,omitempty"`
	// Anneal is the learning-rate decay, nil for a constant rate; a resume continues it unless given a new one.
	Anneal *train.Anneal `json:"anneal,omitempty"`
}

// run is one call of Run: the settings, what the checkpoint keeps, and where progress goes.
type run struct {
	set     Settings
	args    savedArgs
	plateau *train.Plateau
	rep     Reporter
}

// Run makes or resumes (s.Resume) the pretraining run in s.Out and trains it to s.Steps, until the validation
// curve is flat or ctx is done, reporting to rep. An interrupted run writes a checkpoint of its last step
// before it returns ctx's error. A setting that cannot work is an *ArgError.
func Run(ctx context.Context, s Settings, rep Reporter) error {
	if err := s.Check(); err != nil {
		return err
	}
	r := &run{set: s, rep: rep, plateau: &train.Plateau{Patience: s.Patience, MinDelta: s.MinDelta},
		args: savedArgs{Data: s.Data, Seed: s.Seed, ValFrac: s.ValFrac, Batch: s.Batch,
			RandomPad: s.RandomPad != nil && *s.RandomPad, FreezeEmbed: s.FreezeEmbed != nil && *s.FreezeEmbed}}
	if s.Resume {
		return r.resume(ctx)
	}
	return r.start(ctx)
}

// notef reports a formatted note.
func (r *run) notef(format string, args ...any) { r.rep.Note(fmt.Sprintf(format, args...)) }

// trainOptions returns the trainer's options for the run's settings.
func (r *run) trainOptions() train.Options {
	return train.Options{Batch: r.args.Batch, RandomPad: r.args.RandomPad, PadToken: vocab.Stop, FreezeEmbeddings: r.args.FreezeEmbed,
		Device: r.set.Device}
}

// start makes a new model and trains it.
func (r *run) start(ctx context.Context) error {
	s := r.set
	skips := molfile.NewSkips("pretrain", r.rep.Note)
	mols, err := Read(ctx, s.Data, func(line string) { skips.Add(line, nil) })
	if err != nil {
		return err
	}
	vocabName := cmp.Or(s.Vocab, DefaultVocab)
	var voc *vocab.Vocab
	if vocabName == "build" {
		voc = vocab.Build(tokenLists(mols))
	} else if voc, err = vocab.Named(vocabName); err != nil {
		return argErrorf("-vocab: %v", err)
	}
	T := s.SeqLen
	if T == 0 {
		for _, m := range mols {
			T = max(T, len(m.Tokens)+1)
		}
	}
	cfg, err := model.Preset(s.Preset, voc.Len(), T)
	if err != nil {
		return argErrorf("-preset: %v", err)
	}
	if s.Transform != "" {
		if cfg.Transform, err = model.ParseTransform(s.Transform); err != nil {
			return argErrorf("-transform: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("pretrain: %w (the longest molecule of %s has %d tokens)", err, s.Data, T-1)
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(s.CheckpointPath()); err == nil {
		return fmt.Errorf("pretrain: %s exists; use -resume to continue it or choose another -out", s.CheckpointPath())
	}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(r.args.Seed, 2)))
	if err != nil {
		return err
	}
	if s.InitEmbed != "" {
		if err := initEmbeddings(p, voc, s.InitEmbed); err != nil {
			return fmt.Errorf("pretrain: -init-embed: %w", err)
		}
	}
	tr, err := train.NewTrainer(p, rand.NewPCG(r.args.Seed, 3), r.trainOptions())
	if err != nil {
		return err
	}
	return r.train(ctx, tr, voc, "the vocabulary "+vocabName, mols, skips)
}

// resume restores the run from its checkpoint, with the split, batch and seed it was made with, and trains on.
func (r *run) resume(ctx context.Context) error {
	path := r.set.CheckpointPath()
	ck, err := model.LoadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %w", err)
	}
	raw, ok := ck.Optim[argsKey]
	if !ok {
		return fmt.Errorf("pretrain: -resume: %s was not written by nfbo pretrain", path)
	}
	var saved savedArgs
	if err := json.Unmarshal(raw, &saved); err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", path, err)
	}
	if saved.Data != r.args.Data {
		r.notef("pretrain: note: resuming with -data %s; the run started with %s", r.args.Data, saved.Data)
	}
	r.args.Seed, r.args.ValFrac, r.args.Batch = saved.Seed, saved.ValFrac, saved.Batch
	if r.set.RandomPad == nil {
		r.args.RandomPad = saved.RandomPad
	}
	if r.set.FreezeEmbed == nil {
		r.args.FreezeEmbed = saved.FreezeEmbed
	}
	r.args.Anneal = saved.Anneal
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", path, err)
	}
	skips := molfile.NewSkips("pretrain", r.rep.Note)
	mols, err := Read(ctx, r.args.Data, func(line string) { skips.Add(line, nil) })
	if err != nil {
		return err
	}
	tr, err := train.Restore(ck, r.trainOptions())
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", path, err)
	}
	if raw, ok := ck.Optim[plateauKey]; ok {
		if err := json.Unmarshal(raw, r.plateau); err != nil {
			return fmt.Errorf("pretrain: -resume: %s: %s: %w", path, plateauKey, err)
		}
	}
	if r.args.RandomPad != saved.RandomPad {
		r.notef("pretrain: note: -random-pad=%v from step %d on (it was %v)", r.args.RandomPad, tr.Steps(), saved.RandomPad)
	}
	if r.args.FreezeEmbed != saved.FreezeEmbed {
		r.notef("pretrain: note: -freeze-embed=%v from step %d on (it was %v)", r.args.FreezeEmbed, tr.Steps(), saved.FreezeEmbed)
	}
	return r.train(ctx, tr, voc, "the checkpoint's vocabulary", mols, skips)
}

// initEmbeddings sets p's token embeddings to those of the model in dir, whose vocabulary must be voc's.
func initEmbeddings(p *model.Params, voc *vocab.Vocab, dir string) error {
	ck, err := model.LoadModelDir(dir)
	if err != nil {
		return err
	}
	if len(ck.Vocab) != voc.Len() {
		return fmt.Errorf("%s has %d tokens, the run's vocabulary %d", dir, len(ck.Vocab), voc.Len())
	}
	for i, tok := range ck.Vocab {
		if tok != voc.Token(i) {
			return fmt.Errorf("%s: token %d is %s, the run's vocabulary has %s there", dir, i, tok, voc.Token(i))
		}
	}
	return p.CopyEmbeddings(ck.Params)
}

// train encodes the molecules, splits them, sets the schedule and trains, checkpointing as it goes. vocName names
// voc in the summary of the molecules left out, which skips has counted since the data were read.
func (r *run) train(ctx context.Context, tr *train.Trainer, voc *vocab.Vocab, vocName string, mols []Molecule, skips *molfile.Skips) error {
	cfg := tr.Params().Config
	unread := skips.Len()
	trainSet, val, skipped := r.split(voc, mols, cfg.T, skips)
	if line := skips.Summary(len(mols)+unread, vocName, cfg.T); line != "" {
		if skips.Unknown() > 0 {
			line += " (-vocab build takes every token of the data)"
		}
		r.rep.Note("pretrain: " + line)
	}
	if len(trainSet)+len(val) < 2 {
		return fmt.Errorf("pretrain: %s: %d usable molecules, need at least 2", r.args.Data, len(trainSet)+len(val))
	}
	if r.plateau.Patience > 0 && len(val) == 0 {
		return argErrorf("-patience needs validation molecules (-val-frac is 0)")
	}
	steps, err := r.schedule(tr, len(trainSet))
	if err != nil {
		return err
	}
	r.rep.Note(train.FormatHeader(train.Header{Molecules: len(trainSet) + len(val) + skipped, Skipped: skipped, Train: len(trainSet),
		Val: len(val), V: cfg.V, T: cfg.T, Transform: cfg.Transform.String(), Params: tr.Params().NumParams(), BLAS: train.BLASName(),
		From: tr.Steps(), To: steps, Batch: r.args.Batch}))
	save, err := r.saver(voc)
	if err != nil {
		return err
	}
	var learnRate func(int64) float64
	if a := r.args.Anneal; a != nil {
		learnRate = a.LR
		r.notef("pretrain: learning rate %.4g falling along a half cosine to %.4g from step %d to step %d", a.Peak, a.Min, a.From, a.To)
	}
	if r.set.InitOnly {
		// A random model is a test subject of its own: the flow must be invertible before any training.
		if err := save(ctx, tr); err != nil {
			return err
		}
		r.notef("pretrain: -init-only: wrote the model at step %d to %s", tr.Steps(), r.set.CheckpointPath())
		return nil
	}
	if r.plateau.Flat() {
		r.notef("pretrain: %s; nothing to do (-patience 0 trains on)", r.flatReason())
		return nil
	}
	return r.pretrain(ctx, tr, voc, trainSet, val, steps, learnRate, save)
}

// pretrain allocates the training steps and runs engine/train's loop, writing a checkpoint when ctx is done.
func (r *run) pretrain(ctx context.Context, tr *train.Trainer, voc *vocab.Vocab, trainSet, val [][]int, steps int64,
	learnRate func(int64) float64, save func(context.Context, *train.Trainer) error) error {
	prepStart := time.Now()
	if err := tr.Prepare(ctx, r.args.Batch); err != nil {
		return err
	}
	r.notef("pretrain: training steps allocated in %.1fs", time.Since(prepStart).Seconds())
	rec := train.RecorderFunc(func(p train.Progress) error {
		if err := r.rep.Step(p); err != nil {
			return err
		}
		if p.Recon != nil && p.Recon.OK < p.Recon.N {
			cos, a, b := train.ClosestEmbeddings(tr.Params())
			r.notef("pretrain: warning: step %d: the flow reconstructs %d of %d validation molecules; the closest token embeddings, %s and %s, have cosine %.6f (a decoder that confuses tokens is no use to the optimiser)",
				p.Step, p.Recon.OK, p.Recon.N, voc.Token(a), voc.Token(b), cos)
		}
		return nil
	})
	err := tr.Pretrain(ctx, trainSet, train.PretrainConfig{Steps: steps, Val: val, ValEvery: r.set.ValEvery, Recon: r.set.Recon,
		CheckpointEvery: r.set.CheckpointEvery, Checkpoint: save, Recorder: rec, Plateau: r.plateau, LearnRate: learnRate})
	if err == nil && r.plateau.Flat() {
		r.notef("pretrain: %s; stopped at step %d, checkpoint written to %s", r.flatReason(), tr.Steps(), r.set.CheckpointPath())
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted between steps: the weights are those of the last completed step, so save them for -resume.
		if serr := save(context.WithoutCancel(ctx), tr); serr != nil {
			return errors.Join(err, serr)
		}
		r.notef("pretrain: interrupted at step %d; checkpoint written to %s", tr.Steps(), r.set.CheckpointPath())
	}
	return err
}

// split encodes the molecules at length T, reporting those the vocabulary cannot spell to skips, and holds out
// the validation set. The split depends only on the seed and the usable molecules, so a resumed run holds out the
// same ones.
func (r *run) split(voc *vocab.Vocab, mols []Molecule, T int, skips *molfile.Skips) (trainSet, val [][]int, skipped int) {
	var seqs [][]int
	for _, m := range mols {
		ids, err := voc.Encode(nil, m.Tokens, T)
		if err != nil {
			var ee *vocab.EncodeError
			if errors.As(err, &ee) {
				ee.File, ee.Line, ee.Molecule = r.args.Data, m.Line, m.SELFIES
			}
			skips.Add(err.Error(), err)
			skipped++
			continue
		}
		seqs = append(seqs, ids)
	}
	if len(seqs) < 2 {
		return seqs, nil, skipped
	}
	perm := rand.New(rand.NewPCG(r.args.Seed, 1)).Perm(len(seqs))
	nval := int(math.Round(r.args.ValFrac * float64(len(seqs))))
	if r.args.ValFrac > 0 {
		nval = max(nval, 1)
	}
	val = make([][]int, 0, nval)
	trainSet = make([][]int, 0, len(seqs)-nval)
	for i, j := range perm {
		if i < nval {
			val = append(val, seqs[j])
		} else {
			trainSet = append(trainSet, seqs[j])
		}
	}
	return trainSet, val, skipped
}

// schedule sets the run's learning-rate decay (a new one when DecaySteps asks, else the checkpoint's) and
// returns the step to train to.
func (r *run) schedule(tr *train.Trainer, trainLen int) (int64, error) {
	if r.set.DecaySteps > 0 {
		a, err := r.anneal(tr)
		if err != nil {
			return 0, err
		}
		r.args.Anneal = &a
	}
	steps := r.set.Steps
	switch {
	case steps == 0 && r.args.Anneal != nil && r.args.Anneal.To > tr.Steps():
		steps = r.args.Anneal.To
	case steps == 0:
		steps = tr.Steps() + int64((trainLen+r.args.Batch-1)/r.args.Batch)
	}
	return steps, nil
}

// anneal returns the decay that DecaySteps and DecayStart ask for. Without DecayStart it begins at the run's
// first step from the rate the run has reached (Adam's, restored by a resume), so that a new decay does not
// jump. With DecayStart it is a schedule fixed in steps, so the same command resumed any number of times keeps
// it: a resume past the start continues the saved decay, which must be the same one.
func (r *run) anneal(tr *train.Trainer) (train.Anneal, error) {
	lr := tr.Adam().LR
	if r.set.DecayStart < 0 {
		a := train.Anneal{From: tr.Steps(), To: tr.Steps() + r.set.DecaySteps, Peak: lr, Min: min(r.set.LRMin, lr)}
		return a, a.Validate()
	}
	from, to := r.set.DecayStart, r.set.DecayStart+r.set.DecaySteps
	if saved := r.args.Anneal; saved != nil && saved.From == from && saved.To == to {
		return *saved, nil
	}
	if tr.Steps() > from {
		return train.Anneal{}, fmt.Errorf("pretrain: -decay-start %d: the run is at step %d, past it, and its checkpoint holds no decay from step %d to %d to continue", from, tr.Steps(), from, to)
	}
	a := train.Anneal{From: from, To: to, Peak: lr, Min: min(r.set.LRMin, lr)}
	return a, a.Validate()
}

// saver returns the function that writes the run's checkpoint: the trainer's state with the run's settings
// and the plateau rule's count, as they are when it is called.
func (r *run) saver(voc *vocab.Vocab) (func(context.Context, *train.Trainer) error, error) {
	argsJSON, err := json.Marshal(r.args)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tr *train.Trainer) error {
		plateauJSON, err := json.Marshal(r.plateau)
		if err != nil {
			return err
		}
		ck, err := tr.Checkpoint(voc.Tokens(), map[string][]byte{argsKey: argsJSON, plateauKey: plateauJSON})
		if err != nil {
			return err
		}
		return model.SaveCheckpoint(r.set.CheckpointPath(), ck)
	}, nil
}

// flatReason says why the validation curve counts as flat.
func (r *run) flatReason() string {
	p := r.plateau
	return fmt.Sprintf("the validation curve is flat: %d validations since step %d have not lowered its NLL per token, %.4f, by %g",
		p.Since, p.BestStep, p.Best, p.MinDelta)
}
