package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/gpustep"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/pretrain"
)

// newPretrainCmd returns "nfbo pretrain": flags around pretrain.Run, printing its step lines on standard output
// and its notes on standard error.
func newPretrainCmd() *Command {
	c := &Command{
		UsageLine: "pretrain [-preset small|medium|paper] [-resume] [-init-only] [-steps N] [-batch B] [-decay-steps N] [-patience N] [-device cpu|cuda] -data FILE -out DIR",
		Short:     "pretrain a SeqFlow on a file of molecules",
		Long:      pretrainHelp,
		Flag:      flag.NewFlagSet("pretrain", flag.ContinueOnError),
	}
	f := c.Flag
	var s pretrain.Settings
	f.StringVar(&s.Data, "data", "", "molecules, one per line (required)")
	f.StringVar(&s.Out, "out", "", "output model `directory` (required)")
	f.StringVar(&s.Preset, "preset", "small", "model size: small, medium or paper")
	f.StringVar(&s.Transform, "transform", "", "coupling transform: nlsq or affine (default: the preset's)")
	f.StringVar(&s.Vocab, "vocab", pretrain.DefaultVocab, "vocabulary: guacamol+zinc (the shipped model's), guacamol, zinc, lolbo, or build (from the data)")
	f.IntVar(&s.SeqLen, "seq-len", 0, "sequence length T (default: 1 + the longest molecule)")
	f.BoolVar(&s.Resume, "resume", false, "continue the run whose checkpoint is in -out")
	f.Int64Var(&s.Steps, "steps", 0, "total optimiser steps (default: one epoch)")
	f.IntVar(&s.Batch, "batch", train.DefaultBatch, "sequences per step")
	f.Float64Var(&s.ValFrac, "val-frac", 0.05, "fraction of molecules held out for validation")
	f.Int64Var(&s.ValEvery, "val-every", 500, "validation interval in steps (0: at the end only)")
	f.Int64Var(&s.CheckpointEvery, "checkpoint-every", 500, "checkpoint interval in steps (0: at the end only)")
	logEvery := f.Int64("log-every", 10, "progress line interval in steps")
	f.Uint64Var(&s.Seed, "seed", 1, "seed of the data split, initial weights and training noise")
	f.BoolVar(&s.InitOnly, "init-only", false, "write the randomly initialised model (step 0) and stop")
	randomPad := f.Bool("random-pad", false, "train each molecule at a padded length drawn from [its length, T]")
	freezeEmbed := f.Bool("freeze-embed", false, "keep the token embeddings fixed")
	f.IntVar(&s.Recon, "recon", 200, "validation molecules whose reconstruction is checked at every validation (0: none)")
	f.IntVar(&s.Patience, "patience", 0, "stop after this many validations without improvement (0: train to -steps)")
	f.Float64Var(&s.MinDelta, "min-delta", 0.005, "the least decrease of the validation NLL per token (nats) that counts as an improvement")
	f.Int64Var(&s.DecaySteps, "decay-steps", 0, "lower the learning rate to -lr-min along a half cosine over this many steps (0: constant rate)")
	f.Float64Var(&s.LRMin, "lr-min", 1e-5, "the learning rate at the end of -decay-steps")
	f.Int64Var(&s.DecayStart, "decay-start", -1, "the step at which -decay-steps begins (default: this run's first step)")
	f.StringVar(&s.InitEmbed, "init-embed", "", "start from the token embeddings of the model in `DIR` (same vocabulary)")
	device := f.String("device", "cpu", "where the training steps run: cpu, or cuda (GPU 0)")
	tf32 := f.Bool("tf32", false, "with -device cuda: products on TF32 tensor cores (faster, 10-bit mantissas; off: full float32)")
	profile := f.Bool("profile", false, "with -device cuda: print what each step asks of the GPU and its phases' GPU time at every progress line")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "pretrain: unexpected arguments %q", args)
		}
		if *logEvery < 1 {
			return Usagef(cmd, "pretrain: -log-every must be positive")
		}
		if *device != "cpu" && *device != "cuda" {
			return Usagef(cmd, "pretrain: -device %q: want cpu or cuda", *device)
		}
		if *profile && *device != "cuda" {
			return Usagef(cmd, "pretrain: -profile needs -device cuda")
		}
		if *tf32 && *device != "cuda" {
			return Usagef(cmd, "pretrain: -tf32 needs -device cuda")
		}
		pr := pretrainPrinter{cmd: cmd, logEvery: *logEvery}
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
			s.Device = g
			if *tf32 {
				if err := g.SetTF32(true); err != nil {
					return fmt.Errorf("pretrain: -tf32: %w", err)
				}
				fmt.Fprintln(cmd.Stderr, "pretrain: products on TF32 tensor cores")
			}
			if *profile {
				g.SetProfile(true)
				pr.gpu = g
			}
		}
		// A flag given overrides the checkpoint's setting on -resume; one not given leaves it.
		f.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "random-pad":
				s.RandomPad = randomPad
			case "freeze-embed":
				s.FreezeEmbed = freezeEmbed
			}
		})
		err := pretrain.Run(ctx, s, &pr)
		var ae *pretrain.ArgError
		if errors.As(err, &ae) {
			return Usagef(cmd, "pretrain: %v", ae.Err)
		}
		return err
	}
	return c
}

// pretrainPrinter prints a pretraining run's progress: a step line every logEvery steps (and at every
// validation and the last step) on standard output, which "nfbo curve" reads, and notes on standard error.
type pretrainPrinter struct {
	cmd      *Command
	logEvery int64
	// With -profile: the GPU, and its counts and step at the last line.
	gpu      *gpustep.Device
	counts   gpustep.Counts
	lastStep int64
}

// Note prints line on standard error.
func (p *pretrainPrinter) Note(line string) { fmt.Fprintln(p.cmd.Stderr, line) }

// Step prints the step's line when it is due, and with -profile the profile since the last line.
func (p *pretrainPrinter) Step(pr train.Progress) error {
	if pr.Step%p.logEvery != 0 && pr.Val == nil && pr.Step != pr.TotalSteps {
		return nil
	}
	if _, err := fmt.Fprintln(p.cmd.Stdout, train.FormatStep(pr)); err != nil {
		return err
	}
	if p.gpu != nil {
		p.printProfile(pr)
	}
	return nil
}

// printProfile prints, on standard error, what each step since the last line asked of the GPU on average and
// the GPU time of its phases (a validation or checkpoint in the interval adds its downloads, which the line
// says).
func (p *pretrainPrinter) printProfile(pr train.Progress) {
	n := pr.Step - p.lastStep
	if p.lastStep == 0 || n <= 0 {
		n = max(pr.Step, 1)
	}
	c := p.gpu.Counts()
	d := c.Sub(p.counts)
	per := gpustep.Counts{H2D: d.H2D / n, D2H: d.D2H / n, Syncs: d.Syncs / n, Launches: d.Launches / n, Allocs: d.Allocs / n}
	var b strings.Builder
	fmt.Fprintf(&b, "profile: steps %d-%d: per step %v", pr.Step-n+1, pr.Step, per)
	var total time.Duration
	for _, ph := range p.gpu.Phases() {
		fmt.Fprintf(&b, "; %s %.2f ms", ph.Name, float64(ph.Time.Microseconds())/1e3/float64(max(ph.Count, 1)))
		total += ph.Time / time.Duration(max(ph.Count, 1))
	}
	fmt.Fprintf(&b, "; step %.2f ms on the GPU", float64(total.Microseconds())/1e3)
	if pr.Val != nil || pr.Checkpoint {
		b.WriteString(" (the interval holds a validation or checkpoint)")
	}
	fmt.Fprintln(p.cmd.Stderr, b.String())
	p.counts, p.lastStep = c, pr.Step
	p.gpu.SetProfile(true)
}

// pretrainHelp is "nfbo help pretrain".
const pretrainHelp = `Pretrain trains a SeqFlow from scratch (or resumes one) on the molecules of
FILE and writes the model to DIR/` + model.CheckpointName + `.

FILE has one molecule per line, SMILES or SELFIES (a line made only of
bracketed symbols is SELFIES), in the line's first field (a name or an id
may follow, as in .smi files); a name ending in .gz is read through gzip.
SMILES are converted with the selfies 2.0.0 encoder. Lines that cannot be
used (invalid SMILES, a token outside the vocabulary, too long for -seq-len)
are skipped: the first 20 are reported on standard error as FILE:LINE:
reason, then one line counts them all by reason, naming the unknown tokens
that kept most molecules out.

-vocab guacamol+zinc, the default, is the shipped model's vocabulary:
NF-BO's GuacaMol tokens, then the ZINC tokens they lack (stereocentres,
double-bond geometry, charges). A model trained with it shares the shipped
model's token ids (-init-embed data/models/small works). -vocab build makes
the vocabulary from the data instead, for libraries with other elements.

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
device: a run may be resumed on either.`
