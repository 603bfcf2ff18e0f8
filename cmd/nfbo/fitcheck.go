package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/optimize"
)

// newFitcheckCmd returns "nfbo fitcheck", which measures how well each surrogate ranks held-out molecules.
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

  tokens       the screened variant's: an exact GP on token counts
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
		var sizes []int
		maxTrain := 0
		for _, s := range strings.Split(*trains, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 2 {
				return Usagef(cmd, "fitcheck: -train %q: want sizes of at least 2", *trains)
			}
			sizes = append(sizes, n)
			maxTrain = max(maxTrain, n)
		}
		if *test < 3 {
			return Usagef(cmd, "fitcheck: -test must be at least 3")
		}
		return runFitcheck(ctx, cmd, *data, *task, *modelDir, sizes, maxTrain, *test, *seed)
	}
	return cmd
}

func runFitcheck(ctx context.Context, cmd *Command, data, task, modelDir string, sizes []int, maxTrain, test int, seed uint64) error {
	ck, err := model.LoadModelDir(modelDir)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("fitcheck: vocabulary of %s: %w", modelDir, err)
	}
	mols, t, hasScores, err := optimize.ReadMolecules(data, task, maxTrain+test, voc, ck.Params.Config.MaxT, cmd.Stderr)
	if err != nil {
		return err
	}
	if !hasScores {
		return fmt.Errorf("fitcheck: %s has no column %q", data, task)
	}
	if len(mols) < test+2 {
		return fmt.Errorf("fitcheck: %s: %d usable molecules, fewer than -test %d + 2", data, len(mols), test)
	}
	flow, err := seqflow.New(ck, t, seqflow.Options{Warn: cmd.Stderr})
	if err != nil {
		return fmt.Errorf("fitcheck: model %s: %w", modelDir, err)
	}
	defer flow.Close()
	n := len(mols)
	tok := make([]int, 0, n*t)
	y := make([]float64, n)
	for i, m := range mols {
		tok = append(tok, m.IDs[:t]...)
		y[i] = m.Score
	}
	_, f := flow.Shape()
	d := t * f
	lat := make([]float64, n*d)
	if err := flow.Encode(ctx, lat, tok); err != nil {
		return fmt.Errorf("fitcheck: encode: %w", err)
	}
	w := bo.TokenFeatureLen(voc.Len())
	feat := make([]float64, n*w)
	bo.TokenFeatures(feat, tok, t, voc.Len(), vocab.Stop)

	perm := rand.New(rand.NewPCG(seed, 0x66697463)).Perm(n)
	testIdx, trainIdx := perm[:test], perm[test:]
	rows2 := func(x []float64, width int, idx []int) []float64 {
		out := make([]float64, 0, len(idx)*width)
		for _, i := range idx {
			out = append(out, x[i*width:(i+1)*width]...)
		}
		return out
	}
	yTest := make([]float64, test)
	for k, i := range testIdx {
		yTest[k] = y[i]
	}
	fmt.Fprintf(cmd.Stdout, "%s, column %s: %d molecules, %d held out, T=%d\n\n", data, task, n, test, t)
	fmt.Fprintln(cmd.Stdout, "| train | tokens | latent | latent-svgp | seconds (tokens / latent / svgp) |")
	fmt.Fprintln(cmd.Stdout, "|---|---|---|---|---|")
	for _, size := range sizes {
		idx := trainIdx[:min(size, len(trainIdx))]
		yTr := make([]float64, len(idx))
		for k, i := range idx {
			yTr[k] = y[i]
		}
		mean := make([]float64, test)
		vari := make([]float64, test)
		var rho [3]float64
		var secs [3]float64
		for j, in := range []struct {
			x     []float64
			width int
		}{{feat, w}, {lat, d}} {
			start := time.Now()
			e := gp.NewExact(gp.ExactConfig{}, in.width)
			if err := e.Fit(ctx, rows2(in.x, in.width, idx), yTr); err != nil {
				return fmt.Errorf("fitcheck: fit: %w", err)
			}
			e.Predict(mean, vari, rows2(in.x, in.width, testIdx), false)
			rho[j], secs[j] = bo.Spearman(mean, yTest), time.Since(start).Seconds()
		}
		start := time.Now()
		xs := rows2(lat, d, idx)
		s := gp.New(gp.Config{}, d, xs, len(idx), rand.NewPCG(seed, 2))
		if err := s.Fit(ctx, xs, yTr, gp.FitSettings{Epochs: 100}, rand.New(rand.NewPCG(seed, 3))); err != nil {
			return fmt.Errorf("fitcheck: svgp fit: %w", err)
		}
		if err := s.Predict(mean, vari, rows2(lat, d, testIdx), false); err != nil {
			return fmt.Errorf("fitcheck: svgp predict: %w", err)
		}
		rho[2], secs[2] = bo.Spearman(mean, yTest), time.Since(start).Seconds()
		fmt.Fprintf(cmd.Stdout, "| %d | %.3f | %.3f | %.3f | %.1f / %.1f / %.1f |\n", len(idx), rho[0], rho[1], rho[2], secs[0], secs[1], secs[2])
	}
	return nil
}
