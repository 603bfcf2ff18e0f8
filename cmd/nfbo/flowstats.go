package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/bo/flowstats"
	"github.com/nfbo/nfbo/modelcheck"
)

// newFlowstatsCmd returns "nfbo flowstats", flags around modelcheck.Flowstats: a model as the optimiser's move
// operator.
func newFlowstatsCmd() *Command {
	fs := flag.NewFlagSet("flowstats", flag.ContinueOnError)
	modelDir := fs.String("model", "", "model `directory` (required)")
	data := fs.String("data", "", "molecules the model was not trained on: SMILES lines or a CSV `file` with a smiles column (required)")
	n := fs.Int("n", 1000, "molecules of -data to use")
	anchorsFile := fs.String("anchors", "", "scored molecules to take the anchors from: a CSV `file` with a smiles column and a -task column (default: the first -top molecules of -data)")
	task := fs.String("task", "", "the score `column` of -anchors")
	top := fs.Int("top", 10, "anchors: the best -top molecules of -anchors")
	t := fs.Int("t", 88, "sequence length of the prior samples and of the locality table (88: GuacaMol, 64: PMO)")
	nllT := fs.String("nll-t", "64,88,109", "comma-separated sequence lengths at which to measure the NLL")
	samples := fs.Int("samples", 1000, "prior samples")
	perAnchor := fs.Int("per-anchor", 20, "candidates per anchor and trust-region length")
	lengths := fs.String("lengths", "0.8,0.4,0.2,0.1", "comma-separated trust-region lengths of the locality table")
	prob := fs.Float64("prob", 0.1, "probability that each latent dimension is perturbed")
	keep := fs.String("keep", "0.9,0.75,0.5", "comma-separated shares of each anchor's tokens whose latents a regrown candidate keeps, the rest drawn from the prior (\"\": none)")
	seed := fs.Uint64("seed", 1, "random seed")
	backend := fs.String("backend", "auto", "inference backend: go, ort or auto (pure Go on x86-64 with AVX2, else ONNX Runtime when found)")
	cmd := &Command{
		UsageLine: "flowstats -model DIR -data FILE [-anchors FILE -task COLUMN] [-t 88] [-nll-t 64,88,109]",
		Short:     "measure a model as the optimiser's move operator",
		Long: `Flowstats measures what makes a flow a good move operator for NF-BO:

  lengths   the lengths (tokens) of the molecules of -data against those of
            molecules decoded from -samples draws of the prior N(0, I) at -t
  NLL       the negative log density per position of the -data molecules at
            each length of -nll-t (unit-norm embeddings without noise; "all"
            counts the padding stops, "molecule" each molecule's tokens and
            its first stop), to check the model at the lengths BO uses
            (the same molecules at every length: those shorter than the
            shortest)
  density   with -anchors and -task, the rank correlation of the log density
            at -t of the scored molecules with their -task scores, beside
            their lengths': whether the density would rank candidates for
            the objective, or only their length
  locality  for each trust-region length L, the optimiser's perturbation
            (each latent dimension moved with probability -prob within ±4L)
            of the -top anchors, -per-anchor candidates each, decoded at -t:
            how many decode to their anchor, how many to no valid molecule,
            the mean token edit distance to the anchor and the mean length
            kept (of the valid ones), and how many distinct molecules
            other than the anchor; then for each share of -keep the same
            of the anchor regrown: its first tokens' latents kept, the rest
            drawn from the prior, so that the flow writes a new tail

Lengths and edits are those of the canonical molecules, which the optimiser
scores: the SELFIES decoder skips tokens that cannot bond.

Use molecules the model was not trained on for -data (the shipped model was
trained on ZINC250k and the GuacaMol 10k set).`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 || *modelDir == "" || *data == "" {
			return Usagef(cmd, "flowstats: -model and -data are required")
		}
		if (*anchorsFile == "") != (*task == "") {
			return Usagef(cmd, "flowstats: -anchors and -task go together")
		}
		if *n < 1 || *top < 1 || *samples < 1 || *perAnchor < 1 || *prob <= 0 || *prob > 1 {
			return Usagef(cmd, "flowstats: -n, -top, -samples and -per-anchor must be positive and -prob in (0, 1]")
		}
		ts, err := parseInts(*nllT)
		if err != nil {
			return Usagef(cmd, "flowstats: -nll-t: %v", err)
		}
		ls, err := parseFloats(*lengths)
		if err != nil {
			return Usagef(cmd, "flowstats: -lengths: %v", err)
		}
		var ks []float64
		if *keep != "" {
			if ks, err = parseFloats(*keep); err != nil || slices.Max(ks) > 1 {
				return Usagef(cmd, "flowstats: -keep: shares in (0, 1], comma-separated: %q", *keep)
			}
		}
		return modelcheck.Flowstats(ctx, cmd.Stdout, cmd.Stderr, modelcheck.FlowstatsSettings{
			Model: *modelDir, Data: *data, N: *n, Anchors: *anchorsFile, Task: *task, Top: *top, T: *t, NLLT: ts,
			Samples: *samples, Backend: *backend, Seed: *seed,
			Locality: flowstats.LocalityConfig{Lengths: ls, PerAnchor: *perAnchor, Prob: *prob, Keep: ks}})
	}
	return cmd
}

// parseInts parses comma-separated integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseFloats parses comma-separated positive numbers.
func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}
