package main

import (
	"context"
	"flag"
	"strings"

	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/modelcheck"
)

// newReconCmd returns "nfbo recon", flags around modelcheck.Recon: the exit status is 1 unless every molecule
// was encoded and reconstructed.
func newReconCmd() *Command {
	c := &Command{
		UsageLine: "recon [-format auto|smiles|selfies] [-backend auto|go|ort|cuda] [-batch N] [-finetune FILE2 [-epochs N] [-freeze-embed]] -model DIR FILE",
		Short:     "check that the flow reconstructs molecules token for token",
		Long: `Recon encodes every molecule of FILE into the SeqFlow latent space and
decodes it back, then prints the fraction reconstructed token for token and
lists every molecule that was not.

FILE has one molecule per line, SMILES or SELFIES (-format auto takes a line
made only of bracketed symbols for SELFIES), in the line's first field (a
name or an id may follow); blank lines are skipped. SMILES are converted
with the selfies 2.0.0 encoder. DIR is a model directory holding
` + model.CheckpointName + ` (or the checkpoint file itself); its vocabulary
and sequence length T apply.

-backend chooses who runs the flow: go (pure Go), ort (ONNX Runtime, an
error if its library cannot be loaded), auto (ONNX Runtime when its
library is found, else pure Go with a warning) or cuda (GPU 0, -finetune's
training steps too; an error without one). The ONNX Runtime library is
$NFBO_ORT_LIB or third_party/onnxruntime/lib/libonnxruntime.so.1.

A molecule that cannot be encoded (invalid SMILES, a token outside the
vocabulary, more than T−1 tokens) is reported on standard error as
FILE:LINE: reason and left out of the fraction. The exit status is 0 when
every molecule was encoded and reconstructed, 1 otherwise.

-finetune FILE2 first fine-tunes the flow as the optimiser does after new
objective calls (one epoch over the molecules of FILE2, same format rules,
batches of 32, a fresh Adam, random state from -seed) and then checks the
fine-tuned flow: invertibility must survive every fine-tune. -epochs N
fine-tunes N epochs, reporting after each the closest pair of token
embeddings and any token the decoder takes for another (two embeddings
merged: molecules with it cannot reconstruct); -freeze-embed keeps the
embeddings fixed, as the optimiser's screened variant does.`,
		Flag: flag.NewFlagSet("recon", flag.ContinueOnError),
	}
	modelDir := c.Flag.String("model", "", "model directory or checkpoint `file` (required)")
	format := c.Flag.String("format", "auto", "input format: auto, smiles or selfies")
	batch := c.Flag.Int("batch", 256, "molecules encoded and decoded per batch")
	backend := c.Flag.String("backend", "auto", "who runs the flow: "+strings.Join(seqflow.Backends, ", ")+" (cuda: the GPU)")
	finetune := c.Flag.String("finetune", "", "fine-tune one epoch on the molecules of this `file` first")
	seed := c.Flag.Uint64("seed", 1, "random seed of -finetune")
	epochs := c.Flag.Int("epochs", 1, "epochs of -finetune")
	freeze := c.Flag.Bool("freeze-embed", false, "keep the token embeddings fixed in -finetune")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if *modelDir == "" {
			return Usagef(cmd, "recon: -model is required")
		}
		if len(args) != 1 {
			return Usagef(cmd, "recon: want exactly one FILE, got %d arguments", len(args))
		}
		if *format != "auto" && *format != "smiles" && *format != "selfies" {
			return Usagef(cmd, "recon: -format %q: want auto, smiles or selfies", *format)
		}
		if err := seqflow.CheckBackend(*backend); err != nil {
			return Usagef(cmd, "recon: -%v", err)
		}
		if *batch < 1 {
			return Usagef(cmd, "recon: -batch %d: must be positive", *batch)
		}
		if *epochs < 1 {
			return Usagef(cmd, "recon: -epochs %d: must be positive", *epochs)
		}
		c, err := modelcheck.Recon(ctx, cmd.Stdout, cmd.Stderr, modelcheck.ReconSettings{
			Model: *modelDir, File: args[0], Format: *format, Backend: *backend, Batch: *batch,
			FineTune: *finetune, Seed: *seed, Epochs: *epochs, FreezeEmbed: *freeze})
		if err == nil && !c.All() {
			return &ExitError{Code: 1}
		}
		return err
	}
	return c
}
