package main

import (
	"context"
	"flag"
	"slices"

	"github.com/nfbo/nfbo/modelcheck"
)

// newFitcheckCmd returns "nfbo fitcheck", flags around modelcheck.Fitcheck: how well each surrogate ranks held-out
// molecules.
func newFitcheckCmd() *Command {
	fs := flag.NewFlagSet("fitcheck", flag.ContinueOnError)
	data := fs.String("data", "", "scored molecules: a CSV `file` with a smiles column and a column named like -task (required)")
	task := fs.String("task", "", "the score column (required)")
	modelDir := fs.String("model", "", "model `directory`, for the vocabulary and the latents (required)")
	trains := fs.String("train", "100,500", "comma-separated training-set sizes")
	test := fs.Int("test", 1000, "held-out molecules")
	seed := fs.Uint64("seed", 1, "seed of the split")
	cmd := &Command{
		UsageLine: "fitcheck -data FILE -task COLUMN -model DIR [-train 100,500] [-test 1000] [-seed 1]",
		Short:     "measure how well the surrogates rank held-out molecules",
		Long: `Fitcheck splits the scored molecules of -data at random into a held-out set
of -test molecules and training sets of each -train size, fits each surrogate
on a training set and prints the Spearman rank correlation between its
posterior mean and the scores of the held-out molecules:

  tokens       -features tokens (guacamol-10k's): an exact GP on token counts
  morgan       -features morgan: an exact GP on Morgan count fingerprints,
               Tanimoto kernel
  latent       an exact GP on the flow's latents
  latent-svgp  the reference's deep-kernel SVGP on latents, 100 epochs

A surrogate that ranks well steers the optimiser; one near 0 picks at random.
Use it to check that the surrogate can learn your objective from data you
have already paid for.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 || *data == "" || *task == "" || *modelDir == "" {
			return Usagef(cmd, "fitcheck: -data, -task and -model are required")
		}
		sizes, err := parseInts(*trains)
		if err != nil || slices.Min(sizes) < 2 {
			return Usagef(cmd, "fitcheck: -train %q: want sizes of at least 2", *trains)
		}
		if *test < 3 {
			return Usagef(cmd, "fitcheck: -test must be at least 3")
		}
		return modelcheck.Fitcheck(ctx, cmd.Stdout, cmd.Stderr,
			modelcheck.FitcheckSettings{Data: *data, Task: *task, Model: *modelDir, Train: sizes, Test: *test, Seed: *seed})
	}
	return cmd
}
