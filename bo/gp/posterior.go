package gp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// posterior caches what prediction needs from the current parameters.
type posterior struct {
	l                       []float64 // M×M lower Cholesky factor of Kuu
	mu, scale, ell, noise   float64
	epsP                    float64
	phi, kuf, a, bm, tmp, n []float64 // per-call buffers (C×P, M×C, M×C, M×C, M×C, C)
	cov, mean, e            []float64 // SampleExact buffers (C×C, C, C×S)
}

func (s *SVGP) prepare() (*posterior, error) {
	if s.post != nil {
		return s.post, nil
	}
	mu, scale, ell, noise := s.Hyper()
	p := &posterior{mu: mu, scale: scale, ell: ell, noise: noise, epsP: s.cfg.PredictiveJitter}
	p.l = make([]float64, s.m*s.m)
	if err := s.cholKuu(p.l, nil, scale, ell); err != nil {
		return nil, err
	}
	s.post = p
	return p, nil
}

// projectK computes, for C = len(x)/D candidates, φ (C×P) and Kuf (M×C).
func (s *SVGP) projectK(p *posterior, x []float64) (c int) {
	c = len(x) / s.d
	if c == 0 || len(x) != c*s.d {
		panic("gp: posterior: len(x) is not a positive multiple of D")
	}
	m := s.m
	phi := grow(&p.phi, c*s.p)
	s.Features(phi, x)
	kuf := grow(&p.kuf, m*c)
	z := s.theta[s.lay.Z : s.lay.Z+m*s.p]
	rbfTo(kuf, z, m, phi, c, s.p, p.scale, p.ell, grow(&s.ws.an, m), grow(&s.ws.bn, c), false, grow(&s.ws.tmpB, c*s.p))
	return c
}

// project computes, for C = len(x)/D candidates, φ (C×P), Kuf (M×C), A = L⁻¹·Kuf and Bm = Rᵀ·A.
func (s *SVGP) project(p *posterior, x []float64) (c int) {
	c = s.projectK(p, x)
	m, kuf := s.m, p.kuf
	a := grow(&p.a, m*c)
	copy(a, kuf)
	trsmLeft(false, p.l, m, a, c)
	bm := grow(&p.bm, m*c)
	copy(bm, a)
	mulLT(s.theta[s.lay.R:s.lay.R+m*m], m, bm, c, grow(&p.tmp, m*c))
	return c
}

// Predict writes the posterior mean and variance at C = len(x)/D points x (C×D) into mean and variance (each of
// length C). With observationNoise the variance is that of y (σ² added), otherwise that of f.
func (s *SVGP) Predict(mean, variance, x []float64, observationNoise bool) error {
	p, err := s.prepare()
	if err != nil {
		return err
	}
	c := s.project(p, x)
	if len(mean) != c || len(variance) != c {
		panic("gp: Predict: len(mean) or len(variance) != C")
	}
	m := s.m
	blas64.Gemv(blas.Trans, 1, gen(p.a, m, c), blas64.Vector{N: m, Inc: 1, Data: s.theta[s.lay.M : s.lay.M+m]}, 0, blas64.Vector{N: c, Inc: 1, Data: mean})
	base := p.scale + p.epsP
	if observationNoise {
		base += p.noise
	}
	for i := range c {
		mean[i] += p.mu
		variance[i] = base
	}
	for j := range m {
		ar, br := p.a[j*c:(j+1)*c], p.bm[j*c:(j+1)*c]
		for i := range c {
			variance[i] += br[i]*br[i] - ar[i]*ar[i]
		}
	}
	return nil
}

// JointCovTo writes the posterior mean (C) and the full symmetric joint covariance cov (C×C, row-major, both
// triangles) at C = len(x)/D points x (C×D): k(X,X) + εp·I − AᵀA + (RᵀA)ᵀ(RᵀA), plus σ²·I with observationNoise.
// It checks ctx between its steps and before each block of nb rows of the O(C²·M) product; once ctx is done it
// returns ctx.Err() wrapped ("gp: joint covariance: …"), leaving cov and mean partly written.
func (s *SVGP) JointCovTo(ctx context.Context, cov, mean, x []float64, observationNoise bool) error {
	if c := len(x) / s.d; len(cov) != c*c || len(mean) != c {
		panic("gp: JointCovTo: bad shape")
	}
	p, err := s.prepare()
	if err != nil {
		return err
	}
	if err := s.jointCov(ctx, p, cov, mean, x, observationNoise); err != nil {
		return fmt.Errorf("gp: joint covariance: %w", err)
	}
	return nil
}

// jointCov is JointCovTo for a prepared posterior and cov, mean of the right shape; its only error is
// ctx.Err(), unwrapped.
func (s *SVGP) jointCov(ctx context.Context, p *posterior, cov, mean, x []float64, observationNoise bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := s.project(p, x)
	if err := ctx.Err(); err != nil {
		return err
	}
	m := s.m
	blas64.Gemv(blas.Trans, 1, gen(p.a, m, c), blas64.Vector{N: m, Inc: 1, Data: s.theta[s.lay.M : s.lay.M+m]}, 0, blas64.Vector{N: c, Inc: 1, Data: mean})
	for i := range c {
		mean[i] += p.mu
	}
	phi := p.phi
	rbfTo(cov, phi, c, phi, c, s.p, p.scale, p.ell, grow(&p.n, c), grow(&s.ws.an, c), true, grow(&s.ws.tmpB, c*s.p))
	if err := ctx.Err(); err != nil {
		return err
	}
	// Aᵀ(S − I)A = Aᵀ·W with W = R·(RᵀA) − A (M×C); bm is overwritten.
	trmmLeft(false, s.theta[s.lay.R:s.lay.R+m*m], m, p.bm, c)
	for i, v := range p.a {
		p.bm[i] -= v
	}
	if err := lowerAtB(ctx, cov, c, p.a, p.bm, m); err != nil {
		return err
	}
	add := p.epsP
	if observationNoise {
		add += p.noise
	}
	for i := range c {
		cov[i*c+i] += add
		for j := range i {
			cov[j*c+i] = cov[i*c+j]
		}
	}
	return nil
}

// SampleExact draws S joint posterior samples at C = len(x)/D points x (C×D) into dst (S×C, row-major: row k is
// sample k), by a Cholesky factor of the joint covariance. If the factorisation fails, jitter starting at 1e-8
// times the mean diagonal is added, ×10 per try for up to 6 tries; after that it returns *NotPDError.
// Cost: O(C²·M + C³/3 + C²·S) time; C² + C·S float64 of memory, kept for the next call.
//
// It checks ctx between its steps and before each block of nb rows of the O(C²·M) covariance product and of
// the O(C³) factorisation, so that the longest stretch between checks is an O(M²·C) step (the projection on
// the inducing points); once ctx is done it returns ctx.Err() wrapped ("gp: exact sample: …", so
// errors.Is(err, context.Canceled) holds), leaves dst unchanged and draws nothing from rng.
func (s *SVGP) SampleExact(ctx context.Context, dst, x []float64, nSamples int, observationNoise bool, rng *rand.Rand) error {
	c := len(x) / s.d
	if len(dst) != nSamples*c {
		panic("gp: SampleExact: len(dst) != S·C")
	}
	p, err := s.prepare()
	if err != nil {
		return err
	}
	cov := grow(&p.cov, c*c) // reused across calls: 8·C² bytes
	mean := grow(&p.mean, c)
	if err := s.jointCov(ctx, p, cov, mean, x, observationNoise); err != nil {
		return fmt.Errorf("gp: exact sample: %w", err)
	}
	var md float64
	for i := range c {
		md += cov[i*c+i]
	}
	md /= float64(c)
	jitter := 0.0
	for try := 0; ; try++ {
		ok, err := cholesky(ctx, cov, c)
		if err != nil {
			return fmt.Errorf("gp: exact sample: %w", err)
		}
		if ok {
			break
		}
		if try == 6 {
			return &NotPDError{What: "candidate covariance", N: c, Jitter: jitter}
		}
		jitter = 1e-8 * md * math.Pow(10, float64(try))
		if err := s.jointCov(ctx, p, cov, mean, x, observationNoise); err != nil {
			return fmt.Errorf("gp: exact sample: %w", err)
		}
		for i := range c {
			cov[i*c+i] += jitter
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gp: exact sample: %w", err)
	}
	drawJoint(dst, cov, mean, grow(&p.e, c*nSamples), nSamples, rng)
	return nil
}

// SamplePathwise draws S approximate joint posterior samples at C = len(x)/D points into dst (S×C) by pathwise
// conditioning (Wilson et al. 2020, "Efficiently sampling functions from Gaussian process posteriors"): a prior
// path from J random Fourier features of the RBF kernel, updated with the inducing variables,
//
//	f(x) = μ + f₀(x) + k(x,Z)·Kuu⁻¹·(u − f₀(Z) − √εu·ξ),  u − μ = L·(m + R·ε),
//
// plus independent N(0, εp [+ σ²]) per point. A fresh random basis is drawn at each call, so the marginal
// moments over calls are those of the exact posterior. If features is 0, the default is 1024.
// Cost: O(C·J·(P + S) + C·M·(P + S) + M²·S) time, no C×C matrix and no M²·C term. It checks ctx on entry and
// before the candidate-side products; once ctx is done it returns ctx.Err() wrapped ("gp: pathwise sample: …")
// and leaves dst unchanged.
func (s *SVGP) SamplePathwise(ctx context.Context, dst, x []float64, nSamples, features int, observationNoise bool, rng *rand.Rand) error {
	if features == 0 {
		features = 1024
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gp: pathwise sample: %w", err)
	}
	p, err := s.prepare()
	if err != nil {
		return err
	}
	c := s.projectK(p, x)
	if len(dst) != nSamples*c {
		panic("gp: SamplePathwise: len(dst) != S·C")
	}
	m, pp, j, ns := s.m, s.p, features, nSamples
	// Basis: ω ~ N(0, I/ℓ²) (J×P), b ~ U(0, 2π), weights w ~ N(0, 1) (J×S).
	omega := make([]float64, j*pp)
	for i := range omega {
		omega[i] = rng.NormFloat64() / p.ell
	}
	bias := make([]float64, j)
	for i := range bias {
		bias[i] = 2 * math.Pi * rng.Float64()
	}
	wts := make([]float64, j*ns)
	for i := range wts {
		wts[i] = rng.NormFloat64()
	}
	amp := math.Sqrt(2 * p.scale / float64(j))
	prior := func(dst []float64, pts []float64, n int) { // dst (n×S) = f₀(pts)
		feat := make([]float64, n*j)
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(pts, n, pp), gen(omega, j, pp), 0, gen(feat, n, j))
		for r := range n {
			row := feat[r*j : (r+1)*j]
			for k := range row {
				row[k] = amp * math.Cos(row[k]+bias[k])
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(feat, n, j), gen(wts, j, ns), 0, gen(dst, n, ns))
	}
	fz := make([]float64, m*ns)
	z := s.theta[s.lay.Z : s.lay.Z+m*pp]
	prior(fz, z, m)
	su := math.Sqrt(s.cfg.InducingJitter)
	for i := range fz {
		fz[i] += su * rng.NormFloat64()
	}
	// V = m + R·E − L⁻¹·(f₀(Z) + √εu·ξ); α = L⁻ᵀ·V.
	v := make([]float64, m*ns)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	trmmLeft(false, s.theta[s.lay.R:s.lay.R+m*m], m, v, ns)
	trsmLeft(false, p.l, m, fz, ns)
	vm := s.theta[s.lay.M : s.lay.M+m]
	for r := range m {
		for k := range ns {
			v[r*ns+k] += vm[r] - fz[r*ns+k]
		}
	}
	// α = L⁻ᵀ·V; f = μ + f₀(X) + Kufᵀ·α.
	solveLT(p.l, m, v, ns, make([]float64, m*ns))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gp: pathwise sample: %w", err)
	}
	fx := make([]float64, c*ns)
	prior(fx, p.phi, c)
	kt := make([]float64, c*m) // Kufᵀ, so that the product runs in the NoTrans×NoTrans kernel
	transposeTo(kt, p.kuf, m, c)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(kt, c, m), gen(v, m, ns), 1, gen(fx, c, ns))
	sd := p.epsP
	if observationNoise {
		sd += p.noise
	}
	sd = math.Sqrt(sd)
	for k := range ns {
		row := dst[k*c : (k+1)*c]
		for i := range c {
			row[i] = p.mu + fx[i*ns+k] + sd*rng.NormFloat64()
		}
	}
	return nil
}
