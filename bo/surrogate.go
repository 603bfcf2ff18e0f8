package bo

import (
	"context"
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
