package modelcheck

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/chem/fingerprint"
	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/model"
)

// FitcheckSettings are the settings of Fitcheck, the flags of "nfbo fitcheck".
type FitcheckSettings struct {
	// Data is a CSV of scored molecules with a smiles column and the Task column; Model the model directory
	// that gives the vocabulary and the latents.
	Data, Task, Model string
	// Train are the training-set sizes (each at least 2), Test the number of held-out molecules (at least 3).
	Train []int
	Test  int
	// Seed seeds the split and the SVGP.
	Seed uint64
}

// Fitcheck splits the scored molecules at random into a held-out set and training sets of each size, fits
// each surrogate (an exact GP on token counts, as the screened variant; one on Morgan count fingerprints with the
// Tanimoto kernel, as -features morgan; an exact GP on the flow's latents; the reference's deep-kernel SVGP on
// latents) and writes, one Markdown row per size as it goes, the Spearman rank
// correlation between its posterior mean and the held-out scores to stdout.
func Fitcheck(ctx context.Context, stdout, stderr io.Writer, set FitcheckSettings) error {
	ck, err := model.LoadModelDir(set.Model)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("fitcheck: vocabulary of %s: %w", set.Model, err)
	}
	warn := func(msg string) { fmt.Fprintf(stderr, "fitcheck: %s\n", msg) }
	skips := molfile.NewSkips("", warn)
	mols, t, hasScores, err := molfile.ReadMolecules(set.Data, set.Task, maxInt(set.Train)+set.Test, voc, ck.Params.Config.MaxT, skips)
	if err != nil {
		return err
	}
	if line := skips.Summary(len(mols)+skips.Len(), "the model's vocabulary", ck.Params.Config.MaxT); line != "" {
		warn(fmt.Sprintf("%s: %s", set.Data, line))
	}
	if !hasScores {
		return fmt.Errorf("fitcheck: %s has no column %q", set.Data, set.Task)
	}
	if len(mols) < set.Test+2 {
		return fmt.Errorf("fitcheck: %s: %d usable molecules, fewer than -test %d + 2", set.Data, len(mols), set.Test)
	}
	flow, err := seqflow.New(ck, t, seqflow.Options{Warn: stderr})
	if err != nil {
		return fmt.Errorf("fitcheck: model %s: %w", set.Model, err)
	}
	defer flow.Close()
	n := len(mols)
	d := fitData{y: make([]float64, n), featW: bo.TokenFeatureLen(voc.Len())}
	tok := make([]int, 0, n*t)
	for i, m := range mols {
		tok = append(tok, m.IDs[:t]...)
		d.y[i] = m.Score
	}
	_, f := flow.Shape()
	d.latW = t * f
	d.lat = make([]float64, n*d.latW)
	if err := flow.Encode(ctx, d.lat, tok); err != nil {
		return fmt.Errorf("fitcheck: encode: %w", err)
	}
	d.feat = make([]float64, n*d.featW)
	bo.TokenFeatures(d.feat, tok, t, voc.Len(), vocab.Stop)
	fp := fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth)
	d.fpW = fp.Width()
	d.fp = make([]float64, n*d.fpW)
	keys := make([]string, n)
	for i, m := range mols {
		keys[i] = m.Key
	}
	if err := fp.Features(d.fp, keys, nil); err != nil {
		return fmt.Errorf("fitcheck: %w", err)
	}

	perm := rand.New(rand.NewPCG(set.Seed, 0x66697463)).Perm(n)
	testIdx, trainIdx := perm[:set.Test], perm[set.Test:]
	fmt.Fprintf(stdout, "%s, column %s: %d molecules, %d held out, T=%d\n\n", set.Data, set.Task, n, set.Test, t)
	fmt.Fprintln(stdout, "| train | tokens | morgan | latent | latent-svgp | seconds (tokens / morgan / latent / svgp) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
	for _, size := range set.Train {
		if err := d.row(ctx, stdout, trainIdx[:min(size, len(trainIdx))], testIdx, set.Seed); err != nil {
			return err
		}
	}
	return nil
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// fitData are the molecules as each surrogate sees them: token counts (featW per molecule), Morgan count
// fingerprints (fpW), latents (latW), and their scores.
type fitData struct {
	feat, fp, lat    []float64
	featW, fpW, latW int
	y                []float64
}

// rows returns the rows idx of x, width values each, one after the other.
func rows(x []float64, width int, idx []int) []float64 {
	out := make([]float64, 0, len(idx)*width)
	for _, i := range idx {
		out = append(out, x[i*width:(i+1)*width]...)
	}
	return out
}

// row fits the four surrogates on the molecules idx and writes the table row of their rank correlations on
// the molecules testIdx.
func (d *fitData) row(ctx context.Context, w io.Writer, idx, testIdx []int, seed uint64) error {
	yTest := make([]float64, len(testIdx))
	for k, i := range testIdx {
		yTest[k] = d.y[i]
	}
	yTr := make([]float64, len(idx))
	for k, i := range idx {
		yTr[k] = d.y[i]
	}
	mean := make([]float64, len(testIdx))
	vari := make([]float64, len(testIdx))
	var rho, secs [4]float64
	for j, in := range []struct {
		x      []float64
		width  int
		kernel gp.Kernel
	}{{d.feat, d.featW, gp.Matern52}, {d.fp, d.fpW, gp.Tanimoto}, {d.lat, d.latW, gp.Matern52}} {
		start := time.Now()
		e := gp.NewExact(gp.ExactConfig{Kernel: in.kernel}, in.width)
		if err := e.Fit(ctx, rows(in.x, in.width, idx), yTr); err != nil {
			return fmt.Errorf("fitcheck: fit: %w", err)
		}
		e.Predict(mean, vari, rows(in.x, in.width, testIdx), false)
		rho[j], secs[j] = gp.Spearman(mean, yTest), time.Since(start).Seconds()
	}
	start := time.Now()
	xs := rows(d.lat, d.latW, idx)
	s := gp.New(gp.Config{}, d.latW, xs, len(idx), rand.NewPCG(seed, 2))
	if err := s.Fit(ctx, xs, yTr, gp.FitSettings{Epochs: 100}, rand.New(rand.NewPCG(seed, 3))); err != nil {
		return fmt.Errorf("fitcheck: svgp fit: %w", err)
	}
	if err := s.Predict(mean, vari, rows(d.lat, d.latW, testIdx), false); err != nil {
		return fmt.Errorf("fitcheck: svgp predict: %w", err)
	}
	rho[3], secs[3] = gp.Spearman(mean, yTest), time.Since(start).Seconds()
	_, err := fmt.Fprintf(w, "| %d | %.3f | %.3f | %.3f | %.3f | %.1f / %.1f / %.1f / %.1f |\n", len(idx), rho[0], rho[1], rho[2], rho[3],
		secs[0], secs[1], secs[2], secs[3])
	return err
}
