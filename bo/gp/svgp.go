package gp

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// KLScaling says how the KL term of the loss is divided.
type KLScaling int

const (
	// KLBatch divides the KL by the minibatch size B, as the reference does (gpytorch num_data = len(batch)).
	KLBatch KLScaling = iota
	// KLData divides the KL by N, the size of the whole training set: the standard SVGP ELBO scaling.
	KLData
)

// LossKind selects the data term of the loss.
type LossKind int

const (
	// LossPLL is the predictive log likelihood, log N(y; mean, var + σ²) (reference default).
	LossPLL LossKind = iota
	// LossELBO is the variational expected log likelihood, log N(y; mean, σ²) − var/(2σ²).
	LossELBO
)

// Config holds the surrogate's settings. A zero Config gives the reference's model.
type Config struct {
	Hidden           int       // P, width of both feature layers; if 0, the default is 64
	MaxInducing      int       // M is min(MaxInducing, N initial points); if 0, the default is 1024
	InducingJitter   float64   // εu added to k(Z,Z); if 0, the default is 1e-3; negative means none
	PredictiveJitter float64   // εp added to the predictive variance; if 0, the default is 1e-4; negative means none
	NoiseFloor       float64   // lower bound of σ²; if 0, the default is 1e-4; negative means none
	KL               KLScaling // zero value KLBatch, the reference's scaling
	Loss             LossKind  // zero value LossPLL, the reference's loss
}

func positiveOr(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (c Config) resolved() Config {
	if c.Hidden == 0 {
		c.Hidden = 64
	}
	if c.MaxInducing == 0 {
		c.MaxInducing = 1024
	}
	c.InducingJitter = positiveOr(c.InducingJitter, 1e-3)
	c.PredictiveJitter = positiveOr(c.PredictiveJitter, 1e-4)
	c.NoiseFloor = positiveOr(c.NoiseFloor, 1e-4)
	return c
}

// NotPDError reports a matrix that was not positive definite even after adding Jitter to its diagonal.
type NotPDError struct {
	What   string  // which matrix: "Kuu" or "candidate covariance"
	N      int     // its size
	Jitter float64 // the largest jitter tried
}

// Error describes the failure.
func (e *NotPDError) Error() string {
	return fmt.Sprintf("gp: %s (%d×%d) not positive definite with jitter %g", e.What, e.N, e.N, e.Jitter)
}

// Layout gives the offsets of the parameter groups inside the flat parameter vector. Matrices are row-major.
type Layout struct {
	W1       int // P×D first-layer weights
	B1       int // P first-layer bias
	W2       int // P×P second-layer weights
	B2       int // P second-layer bias
	Z        int // M×P inducing points (feature space)
	M        int // M whitened variational mean
	R        int // M×M whitened variational Cholesky factor; only the lower triangle is used
	Mu       int // constant mean
	RawScale int // outputscale s = softplus(raw)
	RawLen   int // lengthscale ℓ = softplus(raw)
	RawNoise int // noise σ² = floor + softplus(raw)
	Len      int // total number of parameters
}

func newLayout(d, p, m int) Layout {
	var l Layout
	off := 0
	take := func(k int) int { o := off; off += k; return o }
	l.W1 = take(p * d)
	l.B1 = take(p)
	l.W2 = take(p * p)
	l.B2 = take(p)
	l.Z = take(m * p)
	l.M = take(m)
	l.R = take(m * m)
	l.Mu = take(1)
	l.RawScale = take(1)
	l.RawLen = take(1)
	l.RawNoise = take(1)
	l.Len = off
	return l
}

// SVGP is the deep-kernel sparse variational GP surrogate. Create it with New; it is not safe for concurrent use.
type SVGP struct {
	cfg     Config
	d, p, m int
	lay     Layout
	theta   []float64

	// Opt is the optimiser used by Fit; its state persists across Fit calls and checkpoints.
	Opt Adam

	post *posterior // cached Cholesky of Kuu for prediction; nil after any parameter change
	ws   work
}

// New returns a surrogate for D-dimensional inputs. The first min(cfg.MaxInducing, n) rows of xInit (n×D,
// row-major) give the inducing points Z = φ(x) under the freshly initialised feature net. Weights and biases
// are drawn like PyTorch's nn.Linear, U(−1/√fan_in, 1/√fan_in); m ~ N(0, 1e-6), R = I, μ = 0 and the raw
// kernel and noise parameters are 0 (gpytorch's initial values).
func New(cfg Config, d int, xInit []float64, n int, src rand.Source) *SVGP {
	cfg = cfg.resolved()
	if d <= 0 || n <= 0 || len(xInit) != n*d {
		panic(fmt.Sprintf("gp: New: bad shape: d=%d n=%d len(xInit)=%d", d, n, len(xInit)))
	}
	rng := rand.New(src)
	p := cfg.Hidden
	m := min(cfg.MaxInducing, n)
	s := &SVGP{cfg: cfg, d: d, p: p, m: m, lay: newLayout(d, p, m)}
	s.theta = make([]float64, s.lay.Len)
	t := s.theta
	uni := func(dst []float64, bound float64) {
		for i := range dst {
			dst[i] = bound * (2*rng.Float64() - 1)
		}
	}
	uni(t[s.lay.W1:s.lay.W1+p*d], 1/math.Sqrt(float64(d)))
	uni(t[s.lay.B1:s.lay.B1+p], 1/math.Sqrt(float64(d)))
	uni(t[s.lay.W2:s.lay.W2+p*p], 1/math.Sqrt(float64(p)))
	uni(t[s.lay.B2:s.lay.B2+p], 1/math.Sqrt(float64(p)))
	for i := range m {
		t[s.lay.M+i] = 1e-3 * rng.NormFloat64()
		t[s.lay.R+i*m+i] = 1
	}
	s.Features(t[s.lay.Z:s.lay.Z+m*p], xInit[:m*d])
	return s
}

// Dims returns D (input size), P (feature width) and M (number of inducing points).
func (s *SVGP) Dims() (d, p, m int) { return s.d, s.p, s.m }

// Layout returns the offsets of the parameter groups in Params.
func (s *SVGP) Layout() Layout { return s.lay }

// Params returns the flat parameter vector. It aliases the model: a caller that writes it must call Changed.
func (s *SVGP) Params() []float64 { return s.theta }

// Changed tells the model that Params was modified, dropping cached posterior factors.
func (s *SVGP) Changed() { s.post = nil }

// Hyper returns the constrained hyperparameters: constant mean μ, outputscale s, lengthscale ℓ and noise σ².
func (s *SVGP) Hyper() (mu, scale, length, noise float64) {
	t := s.theta
	return t[s.lay.Mu], softplus(t[s.lay.RawScale]), softplus(t[s.lay.RawLen]),
		s.cfg.NoiseFloor + softplus(t[s.lay.RawNoise])
}

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// work holds reusable buffers; grow resizes a buffer without keeping its contents.
type work struct {
	h1, a1, h2, phi                   []float64 // B×P
	kuu, l, x                         []float64 // M×M
	kuf, a, bm, abar                  []float64 // M×B
	an, bn, rs, cs                    []float64 // norms and sums
	wphi, wz, phibar, h2bar, a1bar    []float64 // M×P and B×P
	mean, vari, dmean, dvar, tmpB, tm []float64
}

func grow(b *[]float64, n int) []float64 {
	if cap(*b) < n {
		*b = make([]float64, n)
	}
	*b = (*b)[:n]
	return *b
}

func gen(data []float64, r, c int) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: c, Data: data[:r*c]}
}

// Features writes φ(x) for B = len(x)/D rows of x (B×D) into dst (B×P).
func (s *SVGP) Features(dst, x []float64) {
	b := len(x) / s.d
	if len(x) != b*s.d || len(dst) != b*s.p {
		panic("gp: Features: bad shape")
	}
	h1 := grow(&s.ws.h1, b*s.p)
	a1 := grow(&s.ws.a1, b*s.p)
	h2 := grow(&s.ws.h2, b*s.p)
	s.forwardNet(dst, h1, a1, h2, x, b)
}

func (s *SVGP) forwardNet(phi, h1, a1, h2, x []float64, b int) {
	p, d, t, l := s.p, s.d, s.theta, s.lay
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(x, b, d), gen(t[l.W1:], p, d), 0, gen(h1, b, p))
	for i := range b {
		row := h1[i*p : (i+1)*p]
		for j := range row {
			row[j] += t[l.B1+j]
			a1[i*p+j] = row[j] * sigmoid(row[j])
		}
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(a1, b, p), gen(t[l.W2:], p, p), 0, gen(h2, b, p))
	for i := range b {
		row := h2[i*p : (i+1)*p]
		for j := range row {
			row[j] += t[l.B2+j]
			phi[i*p+j] = row[j] * sigmoid(row[j])
		}
	}
}

func rowNorms(dst, a []float64, r, p int) {
	for i := range r {
		var ss float64
		for _, v := range a[i*p : (i+1)*p] {
			ss += v * v
		}
		dst[i] = ss
	}
}

// rbfTo writes k (r×c) = scale·exp(−‖aᵢ−bⱼ‖²/(2ℓ²)) for a (r×P) and b (c×P); an, bn are workspaces of r and c.
// When same is true a and b are the same matrix and the diagonal is exactly scale. tmp holds c·P values.
func rbfTo(k, a []float64, r int, b []float64, c, p int, scale, ell float64, an, bn []float64, same bool, tmp []float64) {
	rowNorms(an, a, r, p)
	rowNorms(bn, b, c, p)
	gemmABt(k, 1, a, r, p, b, c, 0, tmp)
	g := -0.5 / (ell * ell)
	for i := range r {
		row := k[i*c : (i+1)*c]
		for j := range row {
			d2 := an[i] + bn[j] - 2*row[j]
			if d2 < 0 || (same && i == j) {
				d2 = 0
			}
			row[j] = scale * math.Exp(g*d2)
		}
	}
}

// cholKuu writes k(Z,Z) + εu·I (kernel part also into k0 when k0 != nil) and its lower Cholesky factor into l.
func (s *SVGP) cholKuu(l, k0 []float64, scale, ell float64) error {
	m, p := s.m, s.p
	z := s.theta[s.lay.Z : s.lay.Z+m*p]
	an := grow(&s.ws.an, m)
	bn := grow(&s.ws.bn, m)
	rbfTo(l, z, m, z, m, p, scale, ell, an, bn, true, grow(&s.ws.tmpB, m*p))
	if k0 != nil {
		copy(k0, l)
	}
	for i := range m {
		l[i*m+i] += s.cfg.InducingJitter
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: m, Stride: m, Data: l}); !ok {
		return &NotPDError{What: "Kuu", N: m, Jitter: s.cfg.InducingJitter}
	}
	for i := range m {
		clear(l[i*m+i+1 : (i+1)*m])
	}
	return nil
}

// Loss returns the loss of the minibatch x (B×D), y (B) and, if grad is not nil, writes its gradient with respect
// to every parameter into grad (len(Params())). numData is N, used only with KLData. A Kuu that is not positive
// definite is returned as *NotPDError.
func (s *SVGP) Loss(grad, x, y []float64, numData int) (float64, error) {
	b := len(y)
	if b == 0 || len(x) != b*s.d || (grad != nil && len(grad) != s.lay.Len) {
		panic(fmt.Sprintf("gp: Loss: bad shape: B=%d len(x)=%d D=%d", b, len(x), s.d))
	}
	lp := lossPass{x: x, b: b}
	lp.mu, lp.scale, lp.ell, lp.noise = s.Hyper()
	if err := s.lossForward(&lp); err != nil {
		return 0, err
	}
	loss, dnoise := s.dataTerm(&lp, y)
	nd := float64(b)
	if s.cfg.KL == KLData {
		nd = float64(numData)
	}
	loss += 0.5 * s.kl() / nd
	if grad == nil {
		return loss, nil
	}
	clear(grad)
	s.klGrad(grad, nd)
	dscale := s.momentGrad(grad, &lp)
	lbar, kbar := s.choleskyBackward(&lp)
	dell, ds := s.kuuGrad(grad, lbar, &lp)
	dscale += ds
	phibar := grow(&s.ws.phibar, b*s.p)
	dl, ds := s.kufGrad(grad, phibar, kbar, &lp)
	dell += dl
	dscale += ds
	t, lay := s.theta, s.lay
	grad[lay.RawScale] = dscale * sigmoid(t[lay.RawScale])
	grad[lay.RawLen] = dell * sigmoid(t[lay.RawLen])
	grad[lay.RawNoise] = dnoise * sigmoid(t[lay.RawNoise])
	s.backwardNet(grad, phibar, lp.h1, lp.a1, lp.h2, x, b)
	return loss, nil
}

// lossPass holds one Loss call's inputs, hyperparameters and forward intermediates (in s.ws's buffers) for the
// steps of its backward pass.
type lossPass struct {
	x                     []float64 // B×D
	b                     int
	mu, scale, ell, noise float64
	phi, h1, a1, h2       []float64 // B×P: features and the net's intermediates
	k0, l                 []float64 // M×M: k(Z,Z) and the Cholesky factor of Kuu
	kuf, a, bm            []float64 // M×B: Kuf, A = L⁻¹·Kuf, Bm = Rᵀ·A
	mean, vari            []float64 // B: predictive moments
	dmean, dvar           []float64 // B: the data term's derivatives with respect to them
}

// lossForward computes the features, Kuu and L, Kuf, A = L⁻¹·Kuf, Bm = Rᵀ·A and the predictive mean and
// variance of the minibatch.
func (s *SVGP) lossForward(lp *lossPass) error {
	b, p, m, t, lay, w := lp.b, s.p, s.m, s.theta, s.lay, &s.ws
	lp.phi = grow(&w.phi, b*p)
	lp.h1, lp.a1, lp.h2 = grow(&w.h1, b*p), grow(&w.a1, b*p), grow(&w.h2, b*p)
	s.forwardNet(lp.phi, lp.h1, lp.a1, lp.h2, lp.x, b)
	lp.k0 = grow(&w.kuu, m*m)
	lp.l = grow(&w.l, m*m)
	if err := s.cholKuu(lp.l, lp.k0, lp.scale, lp.ell); err != nil {
		return err
	}
	z := t[lay.Z : lay.Z+m*p]
	vm := t[lay.M : lay.M+m]
	r := t[lay.R : lay.R+m*m]
	lp.kuf = grow(&w.kuf, m*b)
	rbfTo(lp.kuf, z, m, lp.phi, b, p, lp.scale, lp.ell, grow(&w.an, m), grow(&w.bn, b), false, grow(&w.tmpB, b*p))
	a := grow(&w.a, m*b)
	copy(a, lp.kuf)
	trsmLeft(false, lp.l, m, a, b)
	bm := grow(&w.bm, m*b)
	copy(bm, a)
	mulLT(r, m, bm, b, grow(&w.tmpB, m*b))
	lp.a, lp.bm = a, bm

	mean := grow(&w.mean, b)
	vari := grow(&w.vari, b)
	blas64.Gemv(blas.Trans, 1, gen(a, m, b), blas64.Vector{N: m, Inc: 1, Data: vm}, 0, blas64.Vector{N: b, Inc: 1, Data: mean})
	for i := range b {
		mean[i] += lp.mu
		vari[i] = lp.scale + s.cfg.PredictiveJitter
	}
	for j := range m {
		arow, brow := a[j*b:(j+1)*b], bm[j*b:(j+1)*b]
		for i := range b {
			vari[i] += brow[i]*brow[i] - arow[i]*arow[i]
		}
	}
	lp.mean, lp.vari = mean, vari
	return nil
}

// dataTerm returns the data term of the loss (the ELBO's expected log-likelihood or the predictive
// log-likelihood, Config.Loss) and its derivative with respect to σ², and writes its derivatives with respect
// to the predictive mean and variance into lp.dmean and lp.dvar.
func (s *SVGP) dataTerm(lp *lossPass, y []float64) (loss, dnoise float64) {
	b, noise := lp.b, lp.noise
	mean, vari := lp.mean, lp.vari
	dmean := grow(&s.ws.dmean, b)
	dvar := grow(&s.ws.dvar, b)
	fb := float64(b)
	for i := range b {
		res := y[i] - mean[i]
		switch s.cfg.Loss {
		case LossELBO:
			loss -= (-0.5*math.Log(2*math.Pi*noise) - 0.5*(res*res+vari[i])/noise) / fb
			dmean[i] = -res / noise / fb
			dvar[i] = 0.5 / noise / fb
			dnoise -= (-0.5/noise + 0.5*(res*res+vari[i])/(noise*noise)) / fb
		default:
			v := vari[i] + noise
			loss -= (-0.5 * (math.Log(2*math.Pi*v) + res*res/v)) / fb
			dmean[i] = -res / v / fb
			dvar[i] = 0.5 * (1/v - res*res/(v*v)) / fb
			dnoise += dvar[i]
		}
	}
	lp.dmean, lp.dvar = dmean, dvar
	return loss, dnoise
}

// kl returns 2·KL(N(m, RRᵀ) ‖ N(0, I)).
func (s *SVGP) kl() float64 {
	m, t, lay := s.m, s.theta, s.lay
	vm := t[lay.M : lay.M+m]
	r := t[lay.R : lay.R+m*m]
	var kl float64
	for j := range m {
		kl += vm[j] * vm[j]
		for k := 0; k <= j; k++ {
			kl += r[j*m+k] * r[j*m+k]
		}
		kl -= 1 + 2*math.Log(math.Abs(r[j*m+j]))
	}
	return kl
}

// klGrad adds the gradient of ½·kl()/nd with respect to m and R to g.
func (s *SVGP) klGrad(g []float64, nd float64) {
	m, t, lay := s.m, s.theta, s.lay
	vm := t[lay.M : lay.M+m]
	r := t[lay.R : lay.R+m*m]
	for j := range m {
		g[lay.M+j] += vm[j] / nd
		for k := 0; k <= j; k++ {
			g[lay.R+j*m+k] += r[j*m+k] / nd
		}
		g[lay.R+j*m+j] -= 1 / r[j*m+j] / nd
	}
}

// momentGrad backpropagates the data term through the predictive moments: it adds μ̄, m̄ = A·dmean and
// R̄ = tril(2·(A·diag(dvar))·Bmᵀ) to g, leaves Ā = m·dmeanᵀ + 2·R·Bm·diag(dvar) − 2·A·diag(dvar) in s.ws.abar
// (and R·Bm in lp.bm), and returns s̄'s share from diag(Kff).
func (s *SVGP) momentGrad(g []float64, lp *lossPass) (dscale float64) {
	b, m, t, lay, w := lp.b, s.m, s.theta, s.lay, &s.ws
	vm := t[lay.M : lay.M+m]
	r := t[lay.R : lay.R+m*m]
	a, bm, dmean, dvar := lp.a, lp.bm, lp.dmean, lp.dvar
	for i := range b {
		g[lay.Mu] += dmean[i]
		dscale += dvar[i]
	}
	blas64.Gemv(blas.NoTrans, 1, gen(a, m, b), blas64.Vector{N: b, Inc: 1, Data: dmean}, 1, blas64.Vector{N: m, Inc: 1, Data: g[lay.M : lay.M+m]})
	ae := grow(&w.abar, m*b)
	for j := range m {
		for i := range b {
			ae[j*b+i] = a[j*b+i] * dvar[i]
		}
	}
	rbar := grow(&w.x, m*m)
	gemmABt(rbar, 2, ae, m, b, bm, m, 0, grow(&w.tmpB, m*b))
	for j := range m {
		for k := 0; k <= j; k++ {
			g[lay.R+j*m+k] += rbar[j*m+k]
		}
	}
	trmmLeft(false, r, m, bm, b)
	abar := ae
	for j := range m {
		for i := range b {
			abar[j*b+i] = vm[j]*dmean[i] + 2*dvar[i]*(bm[j*b+i]-a[j*b+i])
		}
	}
	return dscale
}

// choleskyBackward takes Ā (s.ws.abar) back through A = L⁻¹·Kuf: it returns W = Σ̄ ⊙ K0 (M×M, symmetric), the
// weight of k(Z,Z)'s entries, and K̄uf = L⁻ᵀ·Ā (M×B, in Ā's buffer). With L̄ = −tril(L⁻ᵀ·Ā·Aᵀ) folded into
// Murray's formula, Σ̄ = −sym(L⁻ᵀ·Φ(X)·L⁻¹) = −½·L⁻ᵀ·Y·L⁻¹ with X = Ā·Aᵀ and Y = Φ(X) + Φ(X)ᵀ (X's lower triangle
// mirrored).
func (s *SVGP) choleskyBackward(lp *lossPass) (wuu, kbar []float64) {
	b, m, w := lp.b, s.m, &s.ws
	l, abar := lp.l, w.abar[:m*b]
	xm := w.x[:m*m]
	gemmABt(xm, 1, abar, m, b, lp.a, m, 0, grow(&w.tmpB, m*b))
	for j := range m {
		for k := range j {
			xm[k*m+j] = xm[j*m+k]
		}
	}
	trsmRight(l, m, xm, m) // Y·L⁻¹
	vt := grow(&w.tm, m*m)
	transposeTo(vt, xm, m, m)
	trsmRight(l, m, vt, m) // (Y·L⁻¹)ᵀ·L⁻¹ = (L⁻ᵀ·Y·L⁻¹)ᵀ
	wuu = xm
	for j := range m {
		for k := 0; k <= j; k++ {
			v := -0.25 * (vt[j*m+k] + vt[k*m+j])
			wuu[j*m+k] = v * lp.k0[j*m+k]
			wuu[k*m+j] = wuu[j*m+k]
		}
	}
	kbar = abar
	solveLT(l, m, kbar, b, grow(&w.tmpB, m*b))
	return wuu, kbar
}

// kuuGrad adds Z̄'s share from k(Z,Z) to g, given its weights wuu (M×M), and returns ℓ̄'s and s̄'s shares.
func (s *SVGP) kuuGrad(g, wuu []float64, lp *lossPass) (dell, dscale float64) {
	m, p, w := s.m, s.p, &s.ws
	z := s.theta[s.lay.Z : s.lay.Z+m*p]
	zbar := g[s.lay.Z : s.lay.Z+m*p]
	ell := lp.ell
	il2 := 1 / (ell * ell)
	rs := grow(&w.rs, m)
	wz := grow(&w.wz, m*p)
	var sumW float64
	for j := range m {
		var acc float64
		for _, v := range wuu[j*m : (j+1)*m] {
			acc += v
		}
		rs[j] = acc
		sumW += acc
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(wuu, m, m), gen(z, m, p), 0, gen(wz, m, p))
	zn := grow(&w.an, m)
	rowNorms(zn, z, m, p)
	var wd2 float64
	for j := range m {
		wd2 += 2 * rs[j] * zn[j]
		for c := range p {
			wd2 -= 2 * z[j*p+c] * wz[j*p+c]
			zbar[j*p+c] += -2 * il2 * (rs[j]*z[j*p+c] - wz[j*p+c])
		}
	}
	return wd2 / (ell * ell * ell), sumW / lp.scale
}

// kufGrad adds Z̄'s share from Kuf to g and writes φ̄ (B×P) into phibar, given K̄uf (M×B, overwritten with
// W2 = K̄uf ⊙ Kuf), and returns ℓ̄'s and s̄'s shares.
func (s *SVGP) kufGrad(g, phibar, kbar []float64, lp *lossPass) (dell, dscale float64) {
	b, m, p, w := lp.b, s.m, s.p, &s.ws
	z := s.theta[s.lay.Z : s.lay.Z+m*p]
	zbar := g[s.lay.Z : s.lay.Z+m*p]
	phi, ell := lp.phi, lp.ell
	il2 := 1 / (ell * ell)
	w2 := kbar
	for i := range w2 {
		w2[i] *= lp.kuf[i]
	}
	rs := grow(&w.rs, m)
	cs := grow(&w.cs, b)
	clear(cs)
	var sumW float64
	for j := range m {
		var acc float64
		for i, v := range w2[j*b : (j+1)*b] {
			acc += v
			cs[i] += v
		}
		rs[j] = acc
		sumW += acc
	}
	wphi := grow(&w.wphi, m*p)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(w2, m, b), gen(phi, b, p), 0, gen(wphi, m, p))
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(w2, m, b), gen(z, m, p), 0, gen(phibar, b, p))
	zn := grow(&w.an, m)
	rowNorms(zn, z, m, p)
	fn := grow(&w.bn, b)
	rowNorms(fn, phi, b, p)
	var wd2 float64
	for j := range m {
		wd2 += rs[j] * zn[j]
		for c := range p {
			wd2 -= 2 * z[j*p+c] * wphi[j*p+c]
			zbar[j*p+c] += -il2 * (rs[j]*z[j*p+c] - wphi[j*p+c])
		}
	}
	for i := range b {
		wd2 += cs[i] * fn[i]
		for c := range p {
			phibar[i*p+c] = -il2 * (cs[i]*phi[i*p+c] - phibar[i*p+c])
		}
	}
	return wd2 / (ell * ell * ell), sumW / lp.scale
}

// backwardNet writes the feature net's parameter gradients into g, given φ̄ (B×P) and the forward intermediates.
func (s *SVGP) backwardNet(g, phibar, h1, a1, h2, x []float64, b int) {
	p, d, t, lay := s.p, s.d, s.theta, s.lay
	w := &s.ws
	h2bar := grow(&w.h2bar, b*p)
	for i := range h2bar {
		sg := sigmoid(h2[i])
		h2bar[i] = phibar[i] * sg * (1 + h2[i]*(1-sg))
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(h2bar, b, p), gen(a1, b, p), 0, gen(g[lay.W2:], p, p))
	a1bar := grow(&w.a1bar, b*p)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(h2bar, b, p), gen(t[lay.W2:], p, p), 0, gen(a1bar, b, p))
	for i := range a1bar {
		sg := sigmoid(h1[i])
		a1bar[i] *= sg * (1 + h1[i]*(1-sg))
	}
	for i := range b {
		for c := range p {
			g[lay.B2+c] += h2bar[i*p+c]
			g[lay.B1+c] += a1bar[i*p+c]
		}
	}
	at := grow(&w.tmpB, p*b) // a1barᵀ, so that the P×D product runs in the NoTrans×NoTrans kernel
	transposeTo(at, a1bar, b, p)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(at, p, b), gen(x, b, d), 0, gen(g[lay.W1:], p, d))
}

// FitSettings controls Fit. A zero value gives the reference's initial fit except for Epochs.
type FitSettings struct {
	Epochs    int     // passes over the data; if 0, the default is 1
	BatchSize int     // minibatch size; if 0, the default is 128 (min(N, 128) in effect)
	Clip      float64 // gradient-norm clip; if 0, the default is 1.0
}

// Fit trains every parameter with Adam (s.Opt) on x (N×D) and y (N), shuffling with rng each epoch. It checks
// ctx between minibatches.
func (s *SVGP) Fit(ctx context.Context, x, y []float64, set FitSettings, rng *rand.Rand) error {
	n := len(y)
	if n == 0 || len(x) != n*s.d {
		panic("gp: Fit: bad shape")
	}
	epochs := max(set.Epochs, 1)
	bs := set.BatchSize
	if bs == 0 {
		bs = 128
	}
	bs = min(bs, n)
	clip := orDefault(set.Clip, 1)
	s.post = nil
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	grad := make([]float64, s.lay.Len)
	xb := make([]float64, bs*s.d)
	yb := make([]float64, bs)
	for range epochs {
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for start := 0; start < n; start += bs {
			if err := ctx.Err(); err != nil {
				return err
			}
			end := min(start+bs, n)
			k := end - start
			for i, idx := range perm[start:end] {
				copy(xb[i*s.d:(i+1)*s.d], x[idx*s.d:(idx+1)*s.d])
				yb[i] = y[idx]
			}
			loss, err := s.Loss(grad, xb[:k*s.d], yb[:k], n)
			if err != nil {
				return fmt.Errorf("gp: fit: %w", err)
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return fmt.Errorf("gp: fit: loss is %v", loss)
			}
			ClipNorm(grad, clip)
			s.Opt.Update(s.theta, grad)
		}
	}
	return nil
}

// checkpoint is the serialised form of an SVGP.
type checkpoint struct {
	Cfg     Config
	D, P, M int
	Theta   []float64
	Opt     Adam
}

// MarshalBinary encodes the configuration, parameters and optimiser state.
func (s *SVGP) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(checkpoint{s.cfg, s.d, s.p, s.m, s.theta, s.Opt})
	return buf.Bytes(), err
}

// UnmarshalBinary restores a model written by MarshalBinary into s (which may be the zero value).
func (s *SVGP) UnmarshalBinary(data []byte) error {
	var c checkpoint
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return fmt.Errorf("gp: decode checkpoint: %w", err)
	}
	lay := newLayout(c.D, c.P, c.M)
	if len(c.Theta) != lay.Len {
		return errors.New("gp: checkpoint: parameter count does not match its shape")
	}
	*s = SVGP{cfg: c.Cfg, d: c.D, p: c.P, m: c.M, lay: lay, theta: c.Theta, Opt: c.Opt}
	return nil
}
