package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/bo/flowstats"
	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/optimize"
)

// newFlowstatsCmd returns "nfbo flowstats", which measures a model as the optimiser's move operator.
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
	seed := fs.Uint64("seed", 1, "random seed")
	backend := fs.String("backend", "auto", "inference backend: go, ort or auto")
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
  locality  for each trust-region length L, the optimiser's perturbation
            (each latent dimension moved with probability -prob within ±4L)
            of the -top anchors, -per-anchor candidates each, decoded at -t:
            how many decode to their anchor, how many to no valid molecule,
            the mean token edit distance to the anchor and the mean length
            kept (of the valid ones)

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
		return runFlowstats(ctx, cmd, flowstatsArgs{model: *modelDir, data: *data, n: *n, anchors: *anchorsFile,
			task: *task, top: *top, t: *t, nllT: ts, samples: *samples, backend: *backend,
			loc: flowstats.LocalityConfig{Lengths: ls, PerAnchor: *perAnchor, Prob: *prob}, seed: *seed})
	}
	return cmd
}

type flowstatsArgs struct {
	model, data, anchors, task, backend string
	n, top, t, samples                  int
	nllT                                []int
	loc                                 flowstats.LocalityConfig
	seed                                uint64
}

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

// readScored reads up to count molecules of path (and their -task scores when task is set) as token
// sequences padded to the model's MaxT, skipping those the vocabulary cannot spell.
func readScored(cmd *Command, path, task string, count int, voc *vocab.Vocab, maxT int) ([]optimize.Molecule, error) {
	var skipped lineCounter
	mols, _, hasScores, err := optimize.ReadMolecules(path, task, count, voc, maxT, &skipped)
	if err != nil {
		return nil, err
	}
	if task != "" && !hasScores {
		return nil, fmt.Errorf("flowstats: %s has no column %q", path, task)
	}
	if skipped > 0 {
		fmt.Fprintf(cmd.Stderr, "flowstats: %s: %d of %d molecules skipped (duplicates or not spelt by the vocabulary)\n", path, skipped, len(mols)+int(skipped))
	}
	return mols, nil
}

// lineCounter counts the lines written to it (ReadMolecules' messages, one per skipped molecule).
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte("\n")))
	return len(p), nil
}

func runFlowstats(ctx context.Context, cmd *Command, a flowstatsArgs) error {
	ck, err := model.LoadModelDir(a.model)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("flowstats: vocabulary of %s: %w", a.model, err)
	}
	maxT := ck.Params.Config.MaxT
	for _, t := range append([]int{a.t}, a.nllT...) {
		if t < 2 || t > maxT {
			return fmt.Errorf("flowstats: sequence length %d outside [2, %d] (the model's max_seq_len)", t, maxT)
		}
	}
	mols, err := readScored(cmd, a.data, "", a.n, voc, maxT)
	if err != nil {
		return err
	}
	w := cmd.Stdout
	fmt.Fprintf(w, "model %s: %d parameters, trained at T = %d; %d molecules of %s\n\n",
		a.model, ck.Params.NumParams(), ck.Params.Config.T, len(mols), a.data)

	// Decoding: a move operator must first give back what it encodes.
	var fit [][]int
	for _, m := range mols {
		if m.N < a.t {
			fit = append(fit, m.IDs[:a.t])
		}
	}
	atT := ck.Params.Clone()
	atT.Config.T = a.t
	recon, err := train.Reconstructed(ctx, atT, fit)
	if err != nil {
		return fmt.Errorf("flowstats: reconstruction: %w", err)
	}
	cos, ea, eb := train.ClosestEmbeddings(ck.Params)
	fmt.Fprintf(w, "Decoding at T = %d: %d of %d molecules (those shorter than T) reconstructed token for token; closest token embeddings %s and %s, cosine %.6f\n\n",
		a.t, recon, len(fit), voc.Token(ea), voc.Token(eb), cos)

	flow, err := seqflow.New(ck, a.t, seqflow.Options{Backend: a.backend, Warn: cmd.Stderr})
	if err != nil {
		return fmt.Errorf("flowstats: model %s: %w", a.model, err)
	}
	defer flow.Close()
	rng := rand.New(rand.NewPCG(a.seed, 0x666c6f77))

	// Lengths.
	dataLen := make([]int, len(mols))
	for i, m := range mols {
		dataLen[i] = m.N
	}
	codec, err := molseq.New(voc, a.t)
	if err != nil {
		return err
	}
	prior, invalid, err := flowstats.PriorLengths(ctx, flow, codec, a.samples, vocab.Stop, rng)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Lengths of the canonical molecules (SELFIES tokens); %d of %d prior samples decode to no valid molecule:\n\n", invalid, a.samples)
	fmt.Fprintln(w, "| lengths (tokens) | n | mean | std | min | q25 | median | q75 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range []struct {
		name string
		l    []int
	}{{"data", dataLen}, {fmt.Sprintf("prior samples, T = %d", a.t), prior}} {
		s := flowstats.SummariseLengths(r.l)
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f |\n",
			r.name, s.N, s.Mean, s.Std, s.Min, s.Q25, s.Median, s.Q75, s.Max)
	}

	// NLL per position at each T, on the same molecules: those that fit the shortest T.
	minT := slices.Min(a.nllT)
	var seqs [][]int
	for _, m := range mols {
		if m.N < minT {
			seqs = append(seqs, m.IDs)
		}
	}
	fmt.Fprintf(w, "\nNLL on the %d molecules shorter than %d tokens:\n\n", len(seqs), minT)
	fmt.Fprintln(w, "| T | molecules | NLL per position, all | NLL per position, molecule |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range a.nllT {
		r, err := flowstats.NLLAt(ctx, ck.Params, t, seqs, vocab.Stop)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %d | %d | %.3f | %.3f |\n", t, r.Measured, r.All, r.Molecule)
	}

	// Locality around the anchors.
	src, anchors := mols, mols
	if a.anchors != "" {
		src, err = readScored(cmd, a.anchors, a.task, 1<<30, voc, maxT)
		if err != nil {
			return err
		}
		anchors = append([]optimize.Molecule(nil), src...)
		sort.SliceStable(anchors, func(i, j int) bool { return anchors[i].Score > anchors[j].Score })
	}
	tok := make([]int, 0, a.top*a.t)
	var picked int
	for _, m := range anchors {
		if picked == a.top {
			break
		}
		if m.N >= a.t {
			continue // does not fit T with its stop
		}
		tok = append(tok, m.IDs[:a.t]...)
		picked++
	}
	if picked == 0 {
		return fmt.Errorf("flowstats: no anchor shorter than T = %d", a.t)
	}
	rows, err := flowstats.Locality(ctx, flow, codec, tok, vocab.Stop, a.loc, rng)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("the first %d molecules of %s", picked, a.data)
	if a.anchors != "" {
		what = fmt.Sprintf("the best %d molecules by %s of %s", picked, a.task, a.anchors)
	}
	fmt.Fprintf(w, "\nlocality at T = %d: anchors %s (mean length %.1f tokens), %d candidates each, each dimension perturbed with probability %g within ±4L\n\n",
		a.t, what, rows[0].AnchorLen, rows[0].Candidates/picked, a.loc.Prob)
	fmt.Fprintln(w, "| trust-region length L | candidates decoding to the anchor | invalid | mean token edits | length kept |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %g | %d / %d | %d | %.1f | %.0f %% |\n", r.Length, r.Same, r.Candidates, r.Invalid, r.MeanEdits, 100*r.LengthKept)
	}
	return nil
}
