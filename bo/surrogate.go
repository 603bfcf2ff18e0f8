package bo

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/nfbo/nfbo/bo/gp"
)

// SamplerKind selects how joint posterior samples are drawn for Thompson sampling.
type SamplerKind int

const (
	// SamplerExact draws from the exact joint posterior through a Cholesky factor of the C×C covariance
	// (the reference's botorch path). It is the default.
	SamplerExact SamplerKind = iota
	// SamplerPathwise draws by pathwise conditioning with random Fourier features: no C×C matrix, approximate.
	SamplerPathwise
)

// String returns the sampler's name.
func (k SamplerKind) String() string {
	if k == SamplerPathwise {
		return "pathwise"
	}
	return "exact"
}

// tameScore is the largest |score| a surrogate learns as it is; beyond it Optimizer.targets scales the scores.
// The exact GP's sums of squares overflow from about 1e154, the SVGP's residuals sooner; no real objective
// answers anything near 2¹²⁸ ≈ 3.4e38.
const tameScore = 0x1p128

// targets returns the scores y as the surrogate is to learn them: y itself while every score so far lies within
// ±tameScore, else y divided by the power of two that brings the largest |score| so far below 1. A power of two
// scales exactly and keeps the order of the scores, which is all that Thompson sampling and FitRank read of the
// surrogate; without it a score of 1e155 made the exact GP's standard deviation +Inf and its posterior NaN. The
// scale depends on the data alone, so a resumed run scales as the uninterrupted one did.
func (o *Optimizer) targets(y []float64) []float64 {
	var m float64
	for _, v := range o.st.Y {
		m = max(m, math.Abs(v))
	}
	if m <= tameScore {
		return y
	}
	_, e := math.Frexp(m)
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = math.Ldexp(v, -e)
	}
	return out
}

// GPSurrogate adapts a *gp.SVGP to Surrogate. Samples include observation noise, as the reference's
// likelihood(GP(X)) does.
type GPSurrogate struct {
	Model     *gp.SVGP  // if nil, Fit creates it with Config from its first training data
	Config    gp.Config // model settings used when Fit creates the model
	D         int       // latent size; required when Fit creates the model
	Sampler   SamplerKind
	Features  int // random Fourier features for SamplerPathwise; if 0, the default is 1024
	BatchSize int // minibatch size for Fit; if 0, the default is 128
}

var _ Surrogate = (*GPSurrogate)(nil)

// Fit trains the model with its persistent Adam state.
func (g *GPSurrogate) Fit(ctx context.Context, z, y []float64, epochs int, rng *rand.Rand) error {
	if g.Model == nil {
		g.Model = gp.New(g.Config, g.D, z, len(y), rand.NewPCG(rng.Uint64(), rng.Uint64()))
	}
	return g.Model.Fit(ctx, z, y, gp.FitSettings{Epochs: epochs, BatchSize: g.BatchSize}, rng)
}

// Sample draws joint posterior samples with the configured sampler, which checks ctx as it goes.
func (g *GPSurrogate) Sample(ctx context.Context, dst, z []float64, nSamples int, rng *rand.Rand) error {
	if g.Sampler == SamplerPathwise {
		return g.Model.SamplePathwise(ctx, dst, z, nSamples, g.Features, true, rng)
	}
	return g.Model.SampleExact(ctx, dst, z, nSamples, true, rng)
}

// Predict writes the posterior mean at C = len(z)/D latents (C×D) into mean; NaN where the model cannot predict.
func (g *GPSurrogate) Predict(mean, z []float64) {
	if g.Model == nil || g.Model.Predict(mean, make([]float64, len(mean)), z, false) != nil {
		for i := range mean {
			mean[i] = math.NaN()
		}
	}
}

// MarshalBinary encodes the model and its optimiser state.
func (g *GPSurrogate) MarshalBinary() ([]byte, error) { return g.Model.MarshalBinary() }

// UnmarshalBinary replaces the model with one encoded by MarshalBinary.
func (g *GPSurrogate) UnmarshalBinary(b []byte) error {
	m := new(gp.SVGP)
	if err := m.UnmarshalBinary(b); err != nil {
		return err
	}
	g.Model = m
	return nil
}

// ExactGPSurrogate adapts a *gp.Exact to Surrogate: every Fit sets the training data and refits the
// hyperparameters by marginal likelihood (epochs is ignored), and Sample draws joint samples of the latent
// function, without observation noise, so that Thompson sampling ranks candidates by what the model believes
// of the objective rather than by the noise of one evaluation.
type ExactGPSurrogate struct {
	Model  *gp.Exact      // if nil, Fit creates it with Config
	Config gp.ExactConfig // model settings used when Fit creates the model
	D      int            // input size; required when Fit creates the model
}

var _ Surrogate = (*ExactGPSurrogate)(nil)

// Fit implements Surrogate.
func (g *ExactGPSurrogate) Fit(ctx context.Context, z, y []float64, _ int, _ *rand.Rand) error {
	if g.Model == nil {
		g.Model = gp.NewExact(g.Config, g.D)
	}
	return g.Model.Fit(ctx, z, y)
}

// Sample implements Surrogate.
func (g *ExactGPSurrogate) Sample(ctx context.Context, dst, z []float64, nSamples int, rng *rand.Rand) error {
	return g.Model.Sample(ctx, dst, z, nSamples, false, rng)
}

// Predict writes the posterior mean of the objective at C = len(z)/D points z (C×D) into mean (C).
func (g *ExactGPSurrogate) Predict(mean, z []float64) {
	g.Model.Predict(mean, make([]float64, len(mean)), z, false)
}

// MarshalBinary encodes the model and its training data.
func (g *ExactGPSurrogate) MarshalBinary() ([]byte, error) {
	if g.Model == nil {
		return nil, nil
	}
	return g.Model.MarshalBinary()
}

// UnmarshalBinary replaces the model with one encoded by MarshalBinary.
func (g *ExactGPSurrogate) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		g.Model = nil
		return nil
	}
	m := new(gp.Exact)
	if err := m.UnmarshalBinary(b); err != nil {
		return err
	}
	g.Model = m
	return nil
}

// Weight returns the weight of a two-kernel model on its first inputs as last fitted (gp.Exact.Weight); ok =
// false for one kernel, or before the first fit.
func (g *ExactGPSurrogate) Weight() (w float64, ok bool) {
	if g.Model == nil {
		return 0, false
	}
	return g.Model.Weight()
}

// Predictor is a Surrogate that can report its posterior mean, which the loop uses to measure the fit on each
// new batch before the batch is learnt (Progress.FitRank).
type Predictor interface {
	Predict(mean, z []float64)
}
