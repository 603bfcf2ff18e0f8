package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/gpustep"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

// pretrainArgsKey names the checkpoint section holding the settings a
// resumed run must reuse (data split, batch size, seed).
const pretrainArgsKey = "cmd/pretrain.args"

// pretrainPlateauKey names the checkpoint section holding the -patience
// rule's state (train.Plateau), so that a resumed run keeps counting.
const pretrainPlateauKey = "cmd/pretrain.plateau"

// pretrainArgs are the settings of a pretraining run that fix its data split
// and its random streams; they are stored in every checkpoint.
type pretrainArgs struct {
	Data    string  `json:"data"`
	Seed    uint64  `json:"seed"`
	ValFrac float64 `json:"val_frac"`
	Batch   int     `json:"batch"`
	// RandomPad trains each molecule at a random padded length
	// (train.Options.RandomPad); a resume may switch it on or off.
	RandomPad bool `json:"random_pad,omitempty"`
	// FreezeEmbed keeps the token embeddings fixed (train.Options.FreezeEmbeddings); a resume may switch it.
	FreezeEmbed bool `json:"freeze_embed,omitempty"`
	// Anneal is the learning-rate decay of -decay-steps, nil for a constant rate; a resume continues it
	// unless given a new one.
	Anneal *train.Anneal `json:"anneal,omitempty"`
}

func newPretrainCmd() *Command {
	c := &Command{
		UsageLine: "pretrain [-preset small|medium|paper] [-resume] [-init-only] [-steps N] [-batch B] [-decay-steps N] [-patience N] [-device cpu|cuda] -data FILE -out DIR",
		Short:     "pretrain a SeqFlow on a file of molecules",
		Long: `Pretrain trains a SeqFlow from scratch (or resumes one) on the molecules of
FILE and writes the model to DIR/` + model.CheckpointName + `.

FILE has one molecule per line, SMILES or SELFIES (a line made only of
bracketed symbols is SELFIES); a name ending in .gz is read through gzip. SMILES are converted
with the selfies 2.0.0 encoder. Lines that cannot be used (invalid SMILES, a
token outside the vocabulary, too long for -seq-len) are reported on
standard error as FILE:LINE: reason and skipped.

A fraction -val-frac of the molecules, drawn with -seed, is held out: it is
never trained on and gives the validation NLL per token reported every
-val-every steps. The loss is the reference's: NLL of the rejection-sampled
noisy embeddings plus the similarity loss, averaged over sequences; Adam
(lr 1e-3) with gradient clipping at norm 1.

Every validation also reports the largest cosine between two token
embeddings ("embed cos") and how many of the first -recon validation
molecules the flow decodes back token for token ("recon OK/N"), with a
warning when one fails: training can improve the NLL by merging two tokens'
embeddings, after which the decoder confuses them.

A checkpoint (weights, vocabulary, Adam state, random state and position in
the data) is written every -checkpoint-every steps, at the end and when the
run is interrupted. -resume continues the run in DIR exactly where its last
checkpoint stopped, with the same data split and batch size, until -steps
steps in total; the model's configuration comes from the checkpoint then.

-random-pad trains each molecule as if its sequence were padded to a length
drawn uniformly between its own length and T, instead of always T, so that
the model is good at the shorter T an optimisation run uses (T is the longest
molecule of its data there); validation stays at T. It is recorded in the
checkpoint and kept by -resume unless given again; it can be switched on
when resuming a run that trained without it.

-freeze-embed keeps the token embeddings as they are (recorded and kept by
-resume like -random-pad): a model whose embeddings are well apart can then
train on without merging two of them. -init-embed DIR starts a new run from
the token embeddings of the model in DIR, which must have the same
vocabulary; with -freeze-embed a larger model keeps a smaller one's token
geometry, known to reconstruct every molecule. Like -preset and -vocab, it
only shapes a new run: -resume takes everything from the checkpoint.

-decay-steps N lowers the learning rate along a half cosine from its current
value (1e-3 in a new run) to -lr-min over the N steps after this run's first,
so that the validation curve flattens within N steps; -steps defaults to the
end of the decay then. The schedule is saved in the checkpoint and continued
by -resume; giving -decay-steps again on a resume starts a new decay from the
rate the run has reached. -decay-start S fixes the decay to steps S to S+N
instead: the rate stays constant until step S, and the same command, with
-resume, continues the same schedule however often it is interrupted, so one
command trains a model to a flat curve across sessions.

-patience N stops training once N validations in a row have not lowered the
best validation NLL per token by -min-delta nats: the curve is flat. The last
step is checkpointed; the count is saved with the checkpoint and continues on
-resume (give -patience again; 0, the default, trains to -steps).

-init-only writes the randomly initialised model (step 0, with the same
split and seed) and stops: a reference point for "nfbo recon", which must
reconstruct every molecule even before any training.

-device cuda takes the training steps on GPU 0 (engine/gpustep: the same
step as on the CPU, its inputs drawn on the CPU from the same random
stream, so a run tracks the CPU's to float32 rounding); validation stays
on the CPU. Without a usable GPU it fails at once, before writing anything,
naming what is missing (NVRTC, the CUDA driver libcuda.so.1, the GPU,
cuBLAS; "nfbo gpu" reports the same). Checkpoints do not depend on the
device: a run may be resumed on either.`,
		Flag: flag.NewFlagSet("pretrain", flag.ContinueOnError),
	}
	f := c.Flag
	data := f.String("data", "", "molecules, one per line (required)")
	out := f.String("out", "", "output model `directory` (required)")
	preset := f.String("preset", "small", "model size: small, medium or paper")
	transform := f.String("transform", "", "coupling transform: nlsq or affine (default: the preset's)")
	vocabName := f.String("vocab", "guacamol", "vocabulary: guacamol, zinc, guacamol+zinc, lolbo, or build (from the data)")
	seqLen := f.Int("seq-len", 0, "sequence length T (default: 1 + the longest molecule)")
	resume := f.Bool("resume", false, "continue the run whose checkpoint is in -out")
	steps := f.Int64("steps", 0, "total optimiser steps (default: one epoch)")
	batch := f.Int("batch", train.DefaultBatch, "sequences per step")
	valFrac := f.Float64("val-frac", 0.05, "fraction of molecules held out for validation")
	valEvery := f.Int64("val-every", 500, "validation interval in steps (0: at the end only)")
	ckEvery := f.Int64("checkpoint-every", 500, "checkpoint interval in steps (0: at the end only)")
	logEvery := f.Int64("log-every", 10, "progress line interval in steps")
	seed := f.Uint64("seed", 1, "seed of the data split, initial weights and training noise")
	initOnly := f.Bool("init-only", false, "write the randomly initialised model (step 0) and stop")
	randomPad := f.Bool("random-pad", false, "train each molecule at a padded length drawn from [its length, T]")
	freezeEmbed := f.Bool("freeze-embed", false, "keep the token embeddings fixed")
	reconN := f.Int("recon", 200, "validation molecules whose reconstruction is checked at every validation (0: none)")
	patience := f.Int("patience", 0, "stop after this many validations without improvement (0: train to -steps)")
	minDelta := f.Float64("min-delta", 0.005, "the least decrease of the validation NLL per token (nats) that counts as an improvement")
	decaySteps := f.Int64("decay-steps", 0, "lower the learning rate to -lr-min along a half cosine over this many steps (0: constant rate)")
	lrMin := f.Float64("lr-min", 1e-5, "the learning rate at the end of -decay-steps")
	decayStart := f.Int64("decay-start", -1, "the step at which -decay-steps begins (default: this run's first step)")
	initEmbed := f.String("init-embed", "", "start from the token embeddings of the model in `DIR` (same vocabulary)")
	device := f.String("device", "cpu", "where the training steps run: cpu, or cuda (GPU 0)")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "pretrain: unexpected arguments %q", args)
		}
		if *data == "" || *out == "" {
			return Usagef(cmd, "pretrain: -data and -out are required")
		}
		if *batch < 1 || *steps < 0 || *logEvery < 1 || *valEvery < 0 || *ckEvery < 0 {
			return Usagef(cmd, "pretrain: -batch and -log-every must be positive, -steps, -val-every and -checkpoint-every not negative")
		}
		if !(*valFrac >= 0 && *valFrac < 1) {
			return Usagef(cmd, "pretrain: -val-frac %g must be in [0, 1)", *valFrac)
		}
		if *reconN < 0 {
			return Usagef(cmd, "pretrain: -recon %d must not be negative", *reconN)
		}
		if *seqLen < 0 {
			return Usagef(cmd, "pretrain: -seq-len %d must not be negative", *seqLen)
		}
		if *patience < 0 || !(*minDelta >= 0) {
			return Usagef(cmd, "pretrain: -patience %d and -min-delta %g must not be negative", *patience, *minDelta)
		}
		if *decaySteps < 0 || !(*lrMin >= 0 && *lrMin < train.DefaultLearnRate) {
			return Usagef(cmd, "pretrain: -decay-steps %d must not be negative and -lr-min %g must be in [0, %g)", *decaySteps, *lrMin, train.DefaultLearnRate)
		}
		if *decayStart < -1 || (*decayStart >= 0 && *decaySteps == 0) {
			return Usagef(cmd, "pretrain: -decay-start %d needs -decay-steps and must not be negative", *decayStart)
		}
		if *device != "cpu" && *device != "cuda" {
			return Usagef(cmd, "pretrain: -device %q: want cpu or cuda", *device)
		}
		pr := &pretrainRun{cmd: cmd, out: *out, steps: *steps, initOnly: *initOnly, valEvery: *valEvery, ckEvery: *ckEvery, logEvery: *logEvery, recon: *reconN,
			decaySteps: *decaySteps, decayStart: *decayStart, lrMin: *lrMin, initEmbed: *initEmbed,
			plateau: &train.Plateau{Patience: *patience, MinDelta: *minDelta},
			args:    pretrainArgs{Data: *data, Seed: *seed, ValFrac: *valFrac, Batch: *batch, RandomPad: *randomPad, FreezeEmbed: *freezeEmbed}}
		f.Visit(func(fl *flag.Flag) {
			pr.randomPadSet = pr.randomPadSet || fl.Name == "random-pad"
			pr.freezeSet = pr.freezeSet || fl.Name == "freeze-embed"
		})
		if *device == "cuda" {
			// Before anything is read or written: without a GPU the run stops here.
			g, err := gpustep.Open(cuda.OSEnv(), 0)
			if err != nil {
				return fmt.Errorf("pretrain: -device cuda: %w", err)
			}
			defer g.Close()
			info := g.Info()
			fmt.Fprintf(cmd.Stderr, "pretrain: training steps on GPU %d: %s (compute capability %d.%d, %.1f GiB)\n",
				info.Ordinal, info.Name, info.Major, info.Minor, float64(info.TotalMem)/(1<<30))
			pr.device = g
		}
		if *resume {
			return pr.resume(ctx)
		}
		return pr.start(ctx, *preset, *transform, *vocabName, *seqLen)
	}
	return c
}

// pretrainRun holds one invocation's settings.
type pretrainRun struct {
	cmd                         *Command
	out                         string
	steps                       int64
	initOnly                    bool // save step 0 and stop
	valEvery, ckEvery, logEvery int64
	recon                       int // validation molecules checked for reconstruction
	plateau                     *train.Plateau
	args                        pretrainArgs
	randomPadSet                bool        // -random-pad given: a resume takes it instead of the saved setting
	freezeSet                   bool        // the same for -freeze-embed
	decaySteps                  int64       // -decay-steps: a new decay from decayStart
	decayStart                  int64       // -decay-start: the decay's first step, -1 for this run's first step
	initEmbed                   string      // -init-embed: the model whose token embeddings a new run starts from
	lrMin                       float64     // -lr-min
	device                      step.Device // -device cuda: the GPU's; nil: the gorgonia graph on the CPU
}

// trainOptions returns the trainer's options for the run's settings.
func (pr *pretrainRun) trainOptions() train.Options {
	return train.Options{Batch: pr.args.Batch, RandomPad: pr.args.RandomPad, PadToken: vocab.Stop, FreezeEmbeddings: pr.args.FreezeEmbed,
		Device: pr.device}
}

func (pr *pretrainRun) start(ctx context.Context, preset, transform, vocabName string, seqLen int) error {
	mols, err := readMolecules(ctx, pr.cmd, pr.args.Data)
	if err != nil {
		return err
	}
	var voc *vocab.Vocab
	if vocabName == "build" {
		voc = vocab.Build(moleculeTokens(mols))
	} else if voc, err = vocab.Named(vocabName); err != nil {
		return Usagef(pr.cmd, "pretrain: -vocab: %v", err)
	}
	T := seqLen
	if T == 0 {
		for _, m := range mols {
			T = max(T, len(m.tokens)+1)
		}
	}
	cfg, err := model.Preset(preset, voc.Len(), T)
	if err != nil {
		return Usagef(pr.cmd, "pretrain: -preset: %v", err)
	}
	if transform != "" {
		if cfg.Transform, err = model.ParseTransform(transform); err != nil {
			return Usagef(pr.cmd, "pretrain: -transform: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("pretrain: %w (the longest molecule of %s has %d tokens)", err, pr.args.Data, T-1)
	}
	if err := os.MkdirAll(pr.out, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(pr.ckptPath()); err == nil {
		return fmt.Errorf("pretrain: %s exists; use -resume to continue it or choose another -out", pr.ckptPath())
	}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(pr.args.Seed, 2)))
	if err != nil {
		return err
	}
	if pr.initEmbed != "" {
		if err := initEmbeddings(p, voc, pr.initEmbed); err != nil {
			return fmt.Errorf("pretrain: -init-embed: %w", err)
		}
	}
	tr, err := train.NewTrainer(p, rand.NewPCG(pr.args.Seed, 3), pr.trainOptions())
	if err != nil {
		return err
	}
	return pr.run(ctx, tr, voc, mols)
}

func (pr *pretrainRun) resume(ctx context.Context) error {
	ck, err := model.LoadCheckpoint(pr.ckptPath())
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %w", err)
	}
	raw, ok := ck.Optim[pretrainArgsKey]
	if !ok {
		return fmt.Errorf("pretrain: -resume: %s was not written by nfbo pretrain", pr.ckptPath())
	}
	var saved pretrainArgs
	if err := json.Unmarshal(raw, &saved); err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", pr.ckptPath(), err)
	}
	if saved.Data != pr.args.Data {
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: note: resuming with -data %s; the run started with %s\n", pr.args.Data, saved.Data)
	}
	pr.args.Seed, pr.args.ValFrac, pr.args.Batch = saved.Seed, saved.ValFrac, saved.Batch
	if !pr.randomPadSet {
		pr.args.RandomPad = saved.RandomPad
	}
	if !pr.freezeSet {
		pr.args.FreezeEmbed = saved.FreezeEmbed
	}
	pr.args.Anneal = saved.Anneal
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", pr.ckptPath(), err)
	}
	mols, err := readMolecules(ctx, pr.cmd, pr.args.Data)
	if err != nil {
		return err
	}
	tr, err := train.Restore(ck, pr.trainOptions())
	if err != nil {
		return fmt.Errorf("pretrain: -resume: %s: %w", pr.ckptPath(), err)
	}
	if raw, ok := ck.Optim[pretrainPlateauKey]; ok {
		if err := json.Unmarshal(raw, pr.plateau); err != nil {
			return fmt.Errorf("pretrain: -resume: %s: %s: %w", pr.ckptPath(), pretrainPlateauKey, err)
		}
	}
	if pr.args.RandomPad != saved.RandomPad {
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: note: -random-pad=%v from step %d on (it was %v)\n", pr.args.RandomPad, tr.Steps(), saved.RandomPad)
	}
	if pr.args.FreezeEmbed != saved.FreezeEmbed {
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: note: -freeze-embed=%v from step %d on (it was %v)\n", pr.args.FreezeEmbed, tr.Steps(), saved.FreezeEmbed)
	}
	return pr.run(ctx, tr, voc, mols)
}

// anneal returns the decay that -decay-steps and -decay-start ask for. Without
// -decay-start it begins at the run's first step from the rate the run has
// reached (Adam's, restored by a resume), so that a new decay does not jump.
// With -decay-start it is a schedule fixed in steps, so the same command
// resumed any number of times keeps it: a resume past the start continues the
// saved decay, which must be the same one.
func (pr *pretrainRun) anneal(tr *train.Trainer) (train.Anneal, error) {
	lr := tr.Adam().LR
	if pr.decayStart < 0 {
		a := train.Anneal{From: tr.Steps(), To: tr.Steps() + pr.decaySteps, Peak: lr, Min: min(pr.lrMin, lr)}
		return a, a.Validate()
	}
	from, to := pr.decayStart, pr.decayStart+pr.decaySteps
	if saved := pr.args.Anneal; saved != nil && saved.From == from && saved.To == to {
		return *saved, nil
	}
	if tr.Steps() > from {
		return train.Anneal{}, fmt.Errorf("pretrain: -decay-start %d: the run is at step %d, past it, and its checkpoint holds no decay from step %d to %d to continue", from, tr.Steps(), from, to)
	}
	a := train.Anneal{From: from, To: to, Peak: lr, Min: min(pr.lrMin, lr)}
	return a, a.Validate()
}

// initEmbeddings sets p's token embeddings to those of the model in dir,
// whose vocabulary must be voc's.
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

// flatReason says why the validation curve counts as flat.
func (pr *pretrainRun) flatReason() string {
	p := pr.plateau
	return fmt.Sprintf("the validation curve is flat: %d validations since step %d have not lowered its NLL per token, %.4f, by %g",
		p.Since, p.BestStep, p.Best, p.MinDelta)
}

func (pr *pretrainRun) ckptPath() string { return filepath.Join(pr.out, model.CheckpointName) }

// run encodes the molecules, splits them and trains.
func (pr *pretrainRun) run(ctx context.Context, tr *train.Trainer, voc *vocab.Vocab, mols []molecule) error {
	cfg := tr.Params().Config
	var seqs [][]int
	skipped := 0
	for _, m := range mols {
		ids, err := voc.Encode(nil, m.tokens, cfg.T)
		if err != nil {
			var ee *vocab.EncodeError
			if errors.As(err, &ee) {
				ee.File, ee.Line, ee.Molecule = pr.args.Data, m.line, m.selfies
			}
			fmt.Fprintln(pr.cmd.Stderr, err)
			skipped++
			continue
		}
		seqs = append(seqs, ids)
	}
	if len(seqs) < 2 {
		return fmt.Errorf("pretrain: %s: %d usable molecules, need at least 2", pr.args.Data, len(seqs))
	}
	// The split depends only on the seed and the usable molecules, so a
	// resumed run holds out the same ones.
	perm := rand.New(rand.NewPCG(pr.args.Seed, 1)).Perm(len(seqs))
	nval := int(math.Round(pr.args.ValFrac * float64(len(seqs))))
	if pr.args.ValFrac > 0 {
		nval = max(nval, 1)
	}
	val := make([][]int, 0, nval)
	trainSet := make([][]int, 0, len(seqs)-nval)
	for i, j := range perm {
		if i < nval {
			val = append(val, seqs[j])
		} else {
			trainSet = append(trainSet, seqs[j])
		}
	}
	if pr.plateau.Patience > 0 && len(val) == 0 {
		return Usagef(pr.cmd, "pretrain: -patience needs validation molecules (-val-frac is 0)")
	}
	if pr.decaySteps > 0 {
		a, err := pr.anneal(tr)
		if err != nil {
			return err
		}
		pr.args.Anneal = &a
	}
	steps := pr.steps
	switch {
	case steps == 0 && pr.args.Anneal != nil && pr.args.Anneal.To > tr.Steps():
		steps = pr.args.Anneal.To
	case steps == 0:
		steps = tr.Steps() + int64((len(trainSet)+pr.args.Batch-1)/pr.args.Batch)
	}
	fmt.Fprintln(pr.cmd.Stderr, train.FormatHeader(train.Header{Molecules: len(seqs) + skipped, Skipped: skipped, Train: len(trainSet),
		Val: len(val), V: cfg.V, T: cfg.T, Transform: cfg.Transform.String(), Params: tr.Params().NumParams(), BLAS: train.BLASName(),
		From: tr.Steps(), To: steps, Batch: pr.args.Batch}))
	argsJSON, err := json.Marshal(pr.args)
	if err != nil {
		return err
	}
	var learnRate func(int64) float64
	if a := pr.args.Anneal; a != nil {
		learnRate = a.LR
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: learning rate %.4g falling along a half cosine to %.4g from step %d to step %d\n", a.Peak, a.Min, a.From, a.To)
	}
	save := func(ctx context.Context, tr *train.Trainer) error {
		plateauJSON, err := json.Marshal(pr.plateau)
		if err != nil {
			return err
		}
		ck, err := tr.Checkpoint(voc.Tokens(), map[string][]byte{pretrainArgsKey: argsJSON, pretrainPlateauKey: plateauJSON})
		if err != nil {
			return err
		}
		return model.SaveCheckpoint(pr.ckptPath(), ck)
	}
	if pr.initOnly {
		// A random model is a test subject of its own: the flow must be invertible before any training.
		if err := save(ctx, tr); err != nil {
			return err
		}
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: -init-only: wrote the model at step %d to %s\n", tr.Steps(), pr.ckptPath())
		return nil
	}
	if pr.plateau.Flat() {
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: %s; nothing to do (-patience 0 trains on)\n", pr.flatReason())
		return nil
	}
	compileStart := time.Now()
	if err := tr.Prepare(ctx, pr.args.Batch); err != nil {
		return err
	}
	fmt.Fprintf(pr.cmd.Stderr, "pretrain: graphs compiled in %.1fs\n", time.Since(compileStart).Seconds())
	rec := train.RecorderFunc(func(p train.Progress) error {
		if p.Step%pr.logEvery != 0 && p.Val == nil && p.Step != p.TotalSteps {
			return nil
		}
		line := train.FormatStep(p)
		if _, err := fmt.Fprintln(pr.cmd.Stdout, line); err != nil {
			return err
		}
		if p.Recon != nil && p.Recon.OK < p.Recon.N {
			cos, a, b := train.ClosestEmbeddings(tr.Params())
			fmt.Fprintf(pr.cmd.Stderr, "pretrain: warning: step %d: the flow reconstructs %d of %d validation molecules; the closest token embeddings, %s and %s, have cosine %.6f (a decoder that confuses tokens is no use to the optimiser)\n",
				p.Step, p.Recon.OK, p.Recon.N, voc.Token(a), voc.Token(b), cos)
		}
		return nil
	})
	err = tr.Pretrain(ctx, trainSet, train.PretrainConfig{Steps: steps, Val: val, ValEvery: pr.valEvery, Recon: pr.recon,
		CheckpointEvery: pr.ckEvery, Checkpoint: save, Recorder: rec, Plateau: pr.plateau, LearnRate: learnRate})
	if err == nil && pr.plateau.Flat() {
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: %s; stopped at step %d, checkpoint written to %s\n", pr.flatReason(), tr.Steps(), pr.ckptPath())
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted between steps: the weights are those of the last
		// completed step, so save them for -resume.
		if serr := save(context.WithoutCancel(ctx), tr); serr != nil {
			return errors.Join(err, serr)
		}
		fmt.Fprintf(pr.cmd.Stderr, "pretrain: interrupted at step %d; checkpoint written to %s\n", tr.Steps(), pr.ckptPath())
	}
	return err
}

// looksLikeSELFIES reports whether s is made only of bracketed symbols
// (and '.' between fragments). A leading '[' is not enough: SMILES such as
// "[NH3+]CC(=O)[O-]" start with one too (ZINC250k has thousands).
func looksLikeSELFIES(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return false
			}
			i += j + 1
		default:
			return false
		}
	}
	return true
}

// molecule is one usable line of the data file.
type molecule struct {
	line    int
	selfies string
	tokens  []string
}

func moleculeTokens(mols []molecule) [][]string {
	out := make([][]string, len(mols))
	for i, m := range mols {
		out[i] = m.tokens
	}
	return out
}

// readMolecules reads the SMILES or SELFIES lines of name (gzip when it ends
// in .gz), reporting unusable lines on cmd.Stderr as FILE:LINE: reason.
func readMolecules(ctx context.Context, cmd *Command, name string) ([]molecule, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(fh)
		if err != nil {
			return nil, fmt.Errorf("pretrain: %s: %w", name, err)
		}
		defer gz.Close()
		r = gz
	}
	var mols []molecule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		sf := text
		if !looksLikeSELFIES(text) {
			if sf, err = selfies.Encode(text); err != nil {
				fmt.Fprintf(cmd.Stderr, "%s:%d: SMILES %s: %v\n", name, line, smiles.Quote(text), err)
				continue
			}
		}
		tokens, err := selfies.Split(sf)
		if err != nil {
			fmt.Fprintf(cmd.Stderr, "%s:%d: SELFIES %s: %v\n", name, line, smiles.Quote(sf), err)
			continue
		}
		mols = append(mols, molecule{line: line, selfies: sf, tokens: tokens})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pretrain: read %s: %w", name, err)
	}
	return mols, nil
}
