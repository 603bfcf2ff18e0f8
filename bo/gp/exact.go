package gp

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Kernel selects the kernel of an Exact model.
type Kernel int

const (
	// Matern52 is s·(1 + √5r + 5r²/3)·exp(−√5r), r = ‖a−b‖/ℓ: BoTorch's and TuRBO's default.
	Matern52 Kernel = iota
	// RBF is s·exp(−r²/2).
	RBF
	// Tanimoto is s·⟨a,b⟩/(‖a‖² + ‖b‖² − ⟨a,b⟩) on non-negative inputs such as count fingerprints (1 for two
	// zero vectors): the molecular-similarity kernel of GAUCHE and of the fingerprint GPs of chemical BO. It has
	// no lengthscale; Fit chooses s and σ² alone.
	Tanimoto
	// TanimotoMatern is s·(w·T(a₁,b₁) + (1−w)·M(‖a₂−b₂‖/ℓ)): Tanimoto's kernel on the first ExactConfig.Split
	// inputs (count fingerprints), Matérn-5/2's on the rest (token counts), with the weight w ∈ (0, 1) fitted
	// with ℓ, s and σ², so that the marginal likelihood decides what each objective needs of either.
	TanimotoMatern
)

// String returns the kernel's name.
func (k Kernel) String() string {
	switch k {
	case RBF:
		return "rbf"
	case Tanimoto:
		return "tanimoto"
	case TanimotoMatern:
		return "tanimoto+matern52"
	}
	return "matern52"
}

// ExactConfig holds the settings of an Exact model. The zero value is the default.
type ExactConfig struct {
	Kernel Kernel
	// Split is, for TanimotoMatern, how many of the inputs (the first) the Tanimoto kernel reads.
	Split   int
	MaxIter int // L-BFGS iterations per Fit; if 0, the default is 50
}

// Bounds of the hyperparameters, on standardised targets (zero mean, unit variance). The lengthscale's are
// relative to the median pairwise distance of the training inputs at the first fit, so that the model is
// invariant to the scale of its inputs. The noise floor is BoTorch's (GreaterThan(1e-4)).
const (
	exactLenLo, exactLenHi     = 1.0 / 20, 20.0
	exactScaleLo, exactScaleHi = 0.05, 20.0
	exactNoiseLo, exactNoiseHi = 1e-4, 2.0
)

// Exact is exact Gaussian-process regression with a constant zero mean on standardised targets and one kernel on
// its D-dimensional inputs: isotropic and stationary (Matérn-5/2 or RBF), Tanimoto's on non-negative inputs, or
// the weighted sum of the two (TanimotoMatern, with a fourth hyperparameter, the weight):
//
//	ỹ = (y − mean(y)) / std(y),  ỹ ~ N(0, s·k(X,X; ℓ) + σ²·I)
//
// Fit chooses ℓ, s and σ² by maximising the log marginal likelihood (type-II maximum likelihood) with L-BFGS,
// starting from the previous fit, inside fixed boxes (ℓ within a factor 20 of the inputs' median pairwise
// distance, s in [0.05, 20], σ² in [1e-4, 2]), which keep the optimisation away from the degenerate optima of
// small data sets; with Tanimoto's kernel ℓ plays no part. One fit costs O(N³) per L-BFGS evaluation; it is
// meant for N up to a few thousand.
// Create it with NewExact; it is not safe for concurrent use.
type Exact struct {
	cfg  ExactConfig
	d    int
	raw  [3]float64 // unconstrained hyperparameters: ℓ, s, σ² through boxed sigmoids in log space
	mix  float64    // TanimotoMatern's weight w, unconstrained: w = sigmoid(mix)
	med  float64    // median pairwise distance at the first fit (0 before; 1 with Tanimoto's kernel)
	x    []float64  // N×D training inputs
	y    []float64  // N standardised targets
	yMu  float64    // target mean and standard deviation
	ySd  float64
	l    []float64 // N×N lower Cholesky factor of s·K + σ²·I
	alph []float64 // (s·K + σ²·I)⁻¹·ỹ
	tr   inputRows // x as pairs reads it: with its squared row norms and sparse blocks
}

// NewExact returns an unfitted model for D-dimensional inputs.
func NewExact(cfg ExactConfig, d int) *Exact {
	if d <= 0 {
		panic("gp: NewExact: D must be positive")
	}
	if cfg.MaxIter == 0 {
		cfg.MaxIter = 50
	}
	if cfg.Kernel == TanimotoMatern && (cfg.Split <= 0 || cfg.Split >= d) {
		panic(fmt.Sprintf("gp: NewExact: TanimotoMatern needs 0 < Split < D, got Split %d, D %d", cfg.Split, d))
	}
	return &Exact{cfg: cfg, d: d}
}

// boxed maps u to lo·(hi/lo)^sigmoid(u) and returns the value and its derivative in u.
func boxed(u, lo, hi float64) (v, dv float64) {
	sg := sigmoid(u)
	r := math.Log(hi / lo)
	v = lo * math.Exp(r*sg)
	return v, v * r * sg * (1 - sg)
}

// unboxed is the inverse of boxed.
func unboxed(v, lo, hi float64) float64 {
	p := math.Log(v/lo) / math.Log(hi/lo)
	p = min(max(p, 1e-6), 1-1e-6)
	return math.Log(p / (1 - p))
}

// hyper returns ℓ, s, σ² and their derivatives in the raw parameters.
func (e *Exact) hyper(raw [3]float64) (ell, s, noise float64, dEll, dS, dNoise float64) {
	ell, dEll = boxed(raw[0], exactLenLo*e.med, exactLenHi*e.med)
	s, dS = boxed(raw[1], exactScaleLo, exactScaleHi)
	noise, dNoise = boxed(raw[2], exactNoiseLo, exactNoiseHi)
	return
}

// Hyper returns the fitted lengthscale ℓ, outputscale s and noise variance σ², on standardised targets.
func (e *Exact) Hyper() (ell, scale, noise float64) {
	ell, scale, noise, _, _, _ = e.hyper(e.raw)
	return
}

// N returns the number of training points of the last fit.
func (e *Exact) N() int { return len(e.y) }

// covTo writes into dst (m entries) the covariance s·k of pairs' matrix pm (m entries a block) at the
// hyperparameters ℓ, s and w (TanimotoMatern's weight), and when dEll is not nil ∂/∂log ℓ of it into dEll and,
// for TanimotoMatern, ∂/∂mix into dMix.
func (e *Exact) covTo(dst, pm []float64, m int, ell, s, w float64, dEll, dMix []float64) {
	if e.cfg.Kernel != TanimotoMatern {
		for i, v := range pm[:m] {
			k, dl := e.kern(v, ell)
			dst[i] = s * k
			if dEll != nil {
				dEll[i] = s * dl
			}
		}
		return
	}
	for i := range m {
		t := pm[i]
		k, dl := matern52(pm[m+i], ell)
		dst[i] = s * (w*t + (1-w)*k)
		if dEll != nil {
			dEll[i] = s * (1 - w) * dl
			dMix[i] = s * (t - k) * w * (1 - w)
		}
	}
}

// kern returns k for an entry of pairs' matrix (a squared distance r², or Tanimoto's similarity, which it
// returns as it is) and lengthscale ℓ, with ∂k/∂log ℓ, both for s = 1.
func (e *Exact) kern(d2, ell float64) (k, dLogEll float64) {
	if e.cfg.Kernel == Tanimoto {
		return d2, 0
	}
	r2 := max(d2, 0) / (ell * ell)
	if e.cfg.Kernel == RBF {
		k = math.Exp(-r2 / 2)
		return k, k * r2
	}
	return matern52(d2, ell)
}

// matern52 returns the Matérn-5/2 kernel at squared distance d2 and lengthscale ℓ, with ∂k/∂log ℓ.
func matern52(d2, ell float64) (k, dLogEll float64) {
	r2 := max(d2, 0) / (ell * ell)
	r := math.Sqrt(r2)
	ex := math.Exp(-math.Sqrt(5) * r)
	k = (1 + math.Sqrt(5)*r + 5*r2/3) * ex
	return k, 5.0 / 3 * r2 * (1 + math.Sqrt(5)*r) * ex
}

// weight returns TanimotoMatern's w.
func (e *Exact) weight() float64 { return sigmoid(e.mix) }

// Weight returns TanimotoMatern's weight on the Tanimoto kernel's inputs as last fitted (ok = true), or ok =
// false for another kernel: which of the two inputs the marginal likelihood trusts.
func (e *Exact) Weight() (w float64, ok bool) {
	if e.cfg.Kernel != TanimotoMatern {
		return 0, false
	}
	return e.weight(), true
}

// sqDistTo writes the squared distances between the rows of a and b into dst (a.Rows×b.Rows), given their
// squared norms and sparse forms (nil for none).
func sqDistTo(dst []float64, a blas64.General, an []float64, as *sparseMatrix, b blas64.General, bn []float64, bs *sparseMatrix) {
	r, c := a.Rows, b.Rows
	dotsTo(dst, -2, a, as, b, bs)
	for i := range r {
		row := dst[i*c : (i+1)*c]
		for j := range row {
			row[j] = max(row[j]+an[i]+bn[j], 0)
		}
	}
}

// blocks returns how many r×c matrices pairs writes: 2 for TanimotoMatern (the similarities, then the squared
// distances), else 1.
func (e *Exact) blocks() int {
	if e.cfg.Kernel == TanimotoMatern {
		return 2
	}
	return 1
}

// norms writes the squared norms of the n rows of x (N×D) that pairs reads: blocks()·n of them, for
// TanimotoMatern the Tanimoto part's, then the Matérn part's.
func (e *Exact) norms(dst, x []float64, n int) {
	if e.cfg.Kernel != TanimotoMatern {
		sqNorms(dst[:n], x, e.d)
		return
	}
	k := e.cfg.Split
	for i := range n {
		dst[i], dst[n+i] = sumSquares(x[i*e.d:i*e.d+k]), sumSquares(x[i*e.d+k:(i+1)*e.d])
	}
}

// cols returns the columns [off, off+w) of the r rows of a (r×D) as a matrix that shares a's memory.
func (e *Exact) cols(a []float64, r, off, w int) blas64.General {
	return blas64.General{Rows: r, Cols: w, Stride: e.d, Data: a[off : (r-1)*e.d+off+w]}
}

// inputRows are r rows of inputs (r×D) as pairs reads them, with their squared norms (norms) and the sparse
// form of each column block that has one (sparseBlocks).
type inputRows struct {
	x      []float64
	r      int
	norms  []float64
	sparse [2]*sparseMatrix
}

// rows returns x's r rows with their norms (norms) and sparse blocks.
func (e *Exact) rows(x []float64, r int) inputRows {
	xn := make([]float64, e.blocks()*r)
	e.norms(xn, x, r)
	return inputRows{x: x, r: r, norms: xn, sparse: e.sparseBlocks(x, r)}
}

// sparseBlocks returns the sparse form (sparseRows) of each column block of the r rows of x that pairs takes a
// product of, nil where a block has none: for TanimotoMatern the Tanimoto part's, then the rest's.
func (e *Exact) sparseBlocks(x []float64, r int) [2]*sparseMatrix {
	var out [2]*sparseMatrix
	if e.cfg.Kernel != TanimotoMatern {
		out[0] = sparseRows(gen(x, r, e.d))
		return out
	}
	k := e.cfg.Split
	out[0], out[1] = sparseRows(e.cols(x, r, 0, k)), sparseRows(e.cols(x, r, k, e.d-k))
	return out
}

// pairs writes into dst what the kernel reads of each pair of rows of a and b: the squared distances (a.r×b.r),
// for Tanimoto the similarities, for TanimotoMatern both (2·a.r×b.r).
func (e *Exact) pairs(dst []float64, a, b inputRows) {
	r, c := a.r, b.r
	switch e.cfg.Kernel {
	case Tanimoto:
		tanimotoTo(dst, gen(a.x, r, e.d), a.norms, a.sparse[0], gen(b.x, c, e.d), b.norms, b.sparse[0])
	case TanimotoMatern:
		k, rest := e.cfg.Split, e.d-e.cfg.Split
		tanimotoTo(dst[:r*c], e.cols(a.x, r, 0, k), a.norms[:r], a.sparse[0], e.cols(b.x, c, 0, k), b.norms[:c], b.sparse[0])
		sqDistTo(dst[r*c:], e.cols(a.x, r, k, rest), a.norms[r:], a.sparse[1], e.cols(b.x, c, k, rest), b.norms[c:], b.sparse[1])
	default:
		sqDistTo(dst, gen(a.x, r, e.d), a.norms, a.sparse[0], gen(b.x, c, e.d), b.norms, b.sparse[0])
	}
}

// tanimotoTo writes the Tanimoto similarities of the rows of a and b, given their squared norms and sparse forms
// (nil for none), into dst.
func tanimotoTo(dst []float64, a blas64.General, an []float64, as *sparseMatrix, b blas64.General, bn []float64, bs *sparseMatrix) {
	r, c := a.Rows, b.Rows
	dotsTo(dst, 1, a, as, b, bs)
	for i := range r {
		row := dst[i*c : (i+1)*c]
		for j, dot := range row {
			if den := an[i] + bn[j] - dot; den > 0 {
				row[j] = dot / den
			} else {
				row[j] = 1 // two zero vectors
			}
		}
	}
}

// sqNorms writes the squared norms of the len(dst) rows of a (rows of d) into dst.
func sqNorms(dst, a []float64, d int) {
	for i := range dst {
		dst[i] = sumSquares(a[i*d : (i+1)*d])
	}
}

// sumSquares returns Σ vᵢ².
func sumSquares(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return s
}

// Fit sets the training data to x (N×D) and y (N) and refits the hyperparameters. It checks ctx between
// L-BFGS evaluations. The data are copied.
func (e *Exact) Fit(ctx context.Context, x, y []float64) error {
	n := len(y)
	if n == 0 || len(x) != n*e.d {
		panic("gp: Exact.Fit: bad shape")
	}
	e.x = append(e.x[:0], x...)
	nb := e.blocks()
	e.tr = e.rows(e.x, n)
	e.yMu, e.ySd = meanStd(y)
	e.y = slices.Grow(e.y[:0], n)[:n]
	for i, v := range y {
		e.y[i] = (v - e.yMu) / e.ySd
		if !finite(e.y[i]) || !finite(e.yMu) || !finite(e.ySd) {
			// A NaN here would reach every prediction; bo scales huge scores before they come (Optimizer.targets).
			e.l = nil
			return fmt.Errorf("gp: exact fit: target %d (%g) does not standardise (mean %g, sd %g): scale the targets", i, v, e.yMu, e.ySd)
		}
	}
	d2 := make([]float64, nb*n*n)
	e.pairs(d2, e.tr, e.tr)
	if e.med == 0 {
		e.med = 1 // Tanimoto's: no lengthscale to scale
		if e.cfg.Kernel != Tanimoto {
			e.med = medianOffDiag(d2[(nb-1)*n*n:], n) // the squared distances
		}
		e.raw = [3]float64{unboxed(e.med, exactLenLo*e.med, exactLenHi*e.med), unboxed(1, exactScaleLo, exactScaleHi),
			unboxed(0.1, exactNoiseLo, exactNoiseHi)}
	}
	if n >= 2 {
		w := newMLLWork(n)
		f := func(g, u []float64) float64 { return e.nll(w, d2, u, g) }
		u0 := e.raw[:]
		if nb == 2 {
			// The weight starts from w = 1/2 at every fit, not from the last one: once it saturates (w → 0 or 1,
			// where its gradient w(1−w) vanishes) a warm start could never bring it back as the data grow.
			u0 = append(u0, 0)
		}
		u, err := minimizeBFGS(ctx, f, u0, e.cfg.MaxIter)
		if err != nil {
			return fmt.Errorf("gp: exact fit: %w", err)
		}
		copy(e.raw[:], u)
		if nb == 2 {
			e.mix = u[3]
		}
	}
	return e.factor(d2)
}

// factor computes the Cholesky factor and α for the current hyperparameters from pairs' matrix d2, which it
// overwrites.
func (e *Exact) factor(d2 []float64) error {
	n := len(e.y)
	ell, s, noise, _, _, _ := e.hyper(e.raw)
	e.covTo(d2, d2, n*n, ell, s, e.weight(), nil, nil)
	d2 = d2[:n*n]
	for i := range n {
		d2[i*n+i] += noise
	}
	ok, err := cholesky(context.Background(), d2, n)
	if err != nil {
		return err
	}
	for i := range n {
		clear(d2[i*n+i+1 : (i+1)*n])
	}
	if !ok {
		return &NotPDError{What: "exact GP training covariance", N: n, Jitter: noise}
	}
	e.l = d2
	e.alph = append(e.alph[:0], e.y...)
	trsmLeft(false, e.l, n, e.alph, 1)
	trsmLeft(true, e.l, n, e.alph, 1)
	return nil
}

// minimizeBFGS minimises f (which writes its gradient into g) from x0 by BFGS with a backtracking Armijo line
// search, for at most maxIter iterations; it is meant for a handful of variables. It returns the best point
// found, which is x0 itself when f(x0) is not finite. It checks ctx between iterations.
func minimizeBFGS(ctx context.Context, f func(g, x []float64) float64, x0 []float64, maxIter int) ([]float64, error) {
	k := len(x0)
	x := slices.Clone(x0)
	g := make([]float64, k)
	fx := f(g, x)
	if math.IsNaN(fx) || math.IsInf(fx, 0) {
		return x, nil
	}
	h := make([]float64, k*k) // inverse Hessian approximation
	for i := range k {
		h[i*k+i] = 1
	}
	p, xn, gn, s, y := make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	for range maxIter {
		if err := ctx.Err(); err != nil {
			return x, err
		}
		var gnorm, slope float64
		for i := range k {
			var v float64
			for j := range k {
				v -= h[i*k+j] * g[j]
			}
			p[i] = v
			slope += v * g[i]
			gnorm = max(gnorm, math.Abs(g[i]))
		}
		if gnorm < 1e-6 {
			break
		}
		if slope >= 0 { // not a descent direction: restart from steepest descent
			for i := range k {
				p[i] = -g[i]
				clear(h[i*k : (i+1)*k])
				h[i*k+i] = 1
			}
			slope = 0
			for i := range k {
				slope -= g[i] * g[i]
			}
		}
		step, fn := 1.0, math.Inf(1)
		for range 30 {
			for i := range k {
				xn[i] = x[i] + step*p[i]
			}
			fn = f(gn, xn)
			if fn <= fx+1e-4*step*slope {
				break
			}
			step /= 2
		}
		if !(fn <= fx+1e-4*step*slope) {
			break // no decrease along p: converged as far as the line search can tell
		}
		var sy float64
		for i := range k {
			s[i], y[i] = xn[i]-x[i], gn[i]-g[i]
			sy += s[i] * y[i]
		}
		copy(x, xn)
		copy(g, gn)
		improved := fx - fn
		fx = fn
		if sy > 1e-12 {
			// H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ
			rho := 1 / sy
			hy := make([]float64, k)
			var yhy float64
			for i := range k {
				for j := range k {
					hy[i] += h[i*k+j] * y[j]
				}
				yhy += y[i] * hy[i]
			}
			for i := range k {
				for j := range k {
					h[i*k+j] += -rho*(hy[i]*s[j]+s[i]*hy[j]) + (rho*rho*yhy+rho)*s[i]*s[j]
				}
			}
		}
		if improved < 1e-9*max(1, math.Abs(fx)) {
			break
		}
	}
	return x, nil
}

// mllWork holds the buffers of one negative log marginal likelihood evaluation.
type mllWork struct{ k, dk, dw, inv, a []float64 }

func newMLLWork(n int) *mllWork {
	return &mllWork{k: make([]float64, n*n), dk: make([]float64, n*n), dw: make([]float64, n*n), inv: make([]float64, n*n),
		a: make([]float64, n)}
}

// nll returns the negative log marginal likelihood per point at raw hyperparameters u for squared distances d2
// (N×N), and writes its gradient in u into grad when grad is not nil. A covariance that is not positive
// definite gives +Inf, which the line search backs away from.
//
//	NLL = (ỹᵀK⁻¹ỹ + log det K + N log 2π) / (2N),  ∂NLL/∂θ = tr((K⁻¹ − ααᵀ)·∂K/∂θ) / (2N),  α = K⁻¹ỹ.
//
// u holds the raw ℓ, s and σ², and for TanimotoMatern the raw weight (mix) after them.
func (e *Exact) nll(w *mllWork, d2 []float64, u []float64, grad []float64) float64 {
	n := len(e.y)
	ell, s, noise, dEll, dS, dNoise := e.hyper([3]float64{u[0], u[1], u[2]})
	wt := 0.0
	if len(u) > 3 {
		wt = sigmoid(u[3])
	}
	e.covTo(w.k, d2, n*n, ell, s, wt, w.dk, w.dw) // w.dk: ∂K/∂log ℓ, w.dw: ∂K/∂mix
	for i := range n {
		w.k[i*n+i] += noise
	}
	copy(w.inv, w.k)
	if ok, _ := cholesky(context.Background(), w.inv, n); !ok {
		if grad != nil {
			clear(grad)
		}
		return math.Inf(1)
	}
	var logdet float64
	for i := range n {
		logdet += 2 * math.Log(w.inv[i*n+i])
		clear(w.inv[i*n+i+1 : (i+1)*n])
	}
	copy(w.a, e.y)
	trsmLeft(false, w.inv, n, w.a, 1)
	var quad float64
	for _, v := range w.a {
		quad += v * v
	}
	f := (quad + logdet + float64(n)*math.Log(2*math.Pi)) / (2 * float64(n))
	if grad == nil {
		return f
	}
	trsmLeft(true, w.inv, n, w.a, 1) // α
	// K⁻¹ from its Cholesky factor (LAPACK Dpotri on the lower triangle).
	if _, ok := lapack64.Potri(blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: n, Data: w.inv}); !ok {
		clear(grad)
		return math.Inf(1)
	}
	var gEll, gS, gNoise, gMix float64
	for i := range n {
		for j := 0; j <= i; j++ {
			wij := w.inv[i*n+j] - w.a[i]*w.a[j]
			mult := 2.0
			if i == j {
				mult = 1
			}
			gEll += mult * wij * w.dk[i*n+j]
			gMix += mult * wij * w.dw[i*n+j]
			kf := w.k[i*n+j]
			if i == j {
				kf -= noise
				gNoise += wij
			}
			gS += mult * wij * kf // ∂K/∂s = K_f / s, times s below
		}
	}
	c := 1 / (2 * float64(n))
	grad[0] = c * gEll / ell * dEll // ∂/∂ℓ = (∂/∂log ℓ)/ℓ
	grad[1] = c * gS / s * dS
	grad[2] = c * gNoise * dNoise
	if len(grad) > 3 {
		grad[3] = c * gMix
	}
	return f
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func meanStd(y []float64) (mu, sd float64) {
	for _, v := range y {
		mu += v
	}
	mu /= float64(len(y))
	for _, v := range y {
		sd += (v - mu) * (v - mu)
	}
	if len(y) > 1 {
		sd = math.Sqrt(sd / float64(len(y)-1))
	}
	if !(sd > 1e-12) {
		sd = 1 // constant targets: nothing to scale
	}
	return mu, sd
}

func medianOffDiag(d2 []float64, n int) float64 {
	if n < 2 {
		return 1
	}
	v := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := range i {
			v = append(v, math.Sqrt(d2[i*n+j]))
		}
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if !(m > 0) {
		return 1
	}
	return m
}

// Predict writes the posterior mean and variance of the latent function f (observationNoise false) or of y
// (true) at C = len(x)/D points x (C×D), on the scale of the training targets.
func (e *Exact) Predict(mean, variance, x []float64, observationNoise bool) {
	c := len(x) / e.d
	if len(mean) != c || len(variance) != c || len(x) != c*e.d {
		panic("gp: Exact.Predict: bad shape")
	}
	if e.l == nil {
		panic("gp: Exact.Predict before Fit")
	}
	kt, _ := e.cross(x, c) // N×C
	n := len(e.y)
	_, s, noise := e.Hyper()
	blas64.Gemv(blas.Trans, 1, gen(kt, n, c), blas64.Vector{N: n, Inc: 1, Data: e.alph}, 0, blas64.Vector{N: c, Inc: 1, Data: mean})
	trsmLeft(false, e.l, n, kt, c) // V = L⁻¹·K(X, x)
	for j := range c {
		var q float64
		for i := range n {
			v := kt[i*c+j]
			q += v * v
		}
		v := max(s-q, 1e-12)
		if observationNoise {
			v += noise
		}
		mean[j] = e.yMu + e.ySd*mean[j]
		variance[j] = v * e.ySd * e.ySd
	}
}

// cross returns s·k(X, x) (N×C) for C candidates x, and the candidates as pairs reads them.
func (e *Exact) cross(x []float64, c int) (kt []float64, cand inputRows) {
	n, nb := len(e.y), e.blocks()
	kt = make([]float64, nb*n*c)
	cand = e.rows(x, c)
	e.pairs(kt, e.tr, cand)
	ell, s, _ := e.Hyper()
	e.covTo(kt, kt, n*c, ell, s, e.weight(), nil, nil)
	return kt[:n*c], cand
}

// Sample draws S = nSamples joint posterior samples of f (observationNoise false) or y (true) at C = len(x)/D
// points into dst (S×C), on the scale of the training targets, through a Cholesky factor of the C×C posterior
// covariance (jitter from 1e-8·s upwards when it is not numerically positive definite). Cost O(C²·N + C³/3).
// It checks ctx between its steps.
func (e *Exact) Sample(ctx context.Context, dst, x []float64, nSamples int, observationNoise bool, rng *rand.Rand) error {
	c := len(x) / e.d
	if len(x) != c*e.d || len(dst) != nSamples*c {
		panic("gp: Exact.Sample: bad shape")
	}
	if e.l == nil {
		return errors.New("gp: Exact.Sample before Fit")
	}
	n := len(e.y)
	_, s, noise := e.Hyper()
	kt, cand := e.cross(x, c)
	mean := make([]float64, c)
	blas64.Gemv(blas.Trans, 1, gen(kt, n, c), blas64.Vector{N: n, Inc: 1, Data: e.alph}, 0, blas64.Vector{N: c, Inc: 1, Data: mean})
	trsmLeft(false, e.l, n, kt, c)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gp: exact sample: %w", err)
	}
	pm := make([]float64, e.blocks()*c*c)
	cov := pm[:c*c]
	var ok bool
	for try := 0; ; try++ {
		e.pairs(pm, cand, cand)
		ell, _, _ := e.Hyper()
		e.covTo(cov, pm, c*c, ell, s, e.weight(), nil, nil)
		// cov −= VᵀV (lower triangle)
		w := make([]float64, len(kt))
		for i, v := range kt {
			w[i] = -v
		}
		if err := lowerAtB(ctx, cov, c, kt, w, n); err != nil {
			return fmt.Errorf("gp: exact sample: %w", err)
		}
		add := 1e-6 * s
		if try > 0 {
			add = 1e-8 * s * math.Pow(10, float64(try+2))
		}
		if observationNoise {
			add += noise
		}
		for i := range c {
			cov[i*c+i] += add
		}
		var err error
		if ok, err = cholesky(ctx, cov, c); err != nil {
			return fmt.Errorf("gp: exact sample: %w", err)
		}
		if ok {
			break
		}
		if try == 5 {
			return &NotPDError{What: "exact GP candidate covariance", N: c, Jitter: add}
		}
	}
	drawJoint(dst, cov, mean, make([]float64, c*nSamples), nSamples, rng)
	for i, v := range dst {
		dst[i] = e.yMu + e.ySd*v
	}
	return nil
}

// exactState is the serialised form of an Exact model.
type exactState struct {
	Cfg      ExactConfig
	D        int
	Raw      [3]float64
	Mix      float64 // TanimotoMatern's raw weight
	Med      float64
	X, Y     []float64 // Y standardised, so that a restored model is bit-identical
	YMu, YSd float64
}

// MarshalBinary encodes the settings, hyperparameters and training data.
func (e *Exact) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(exactState{Cfg: e.cfg, D: e.d, Raw: e.raw, Mix: e.mix, Med: e.med, X: e.x, Y: e.y, YMu: e.yMu, YSd: e.ySd})
	return buf.Bytes(), err
}

// UnmarshalBinary restores a model written by MarshalBinary, refactorising its covariance without refitting.
func (e *Exact) UnmarshalBinary(data []byte) error {
	var st exactState
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&st); err != nil {
		return fmt.Errorf("gp: decode exact model: %w", err)
	}
	if st.D <= 0 || len(st.X) != len(st.Y)*st.D {
		return errors.New("gp: exact model: data do not match their shape")
	}
	if st.Cfg.Kernel == TanimotoMatern && (st.Cfg.Split <= 0 || st.Cfg.Split >= st.D) {
		return fmt.Errorf("gp: exact model: split %d of %d inputs", st.Cfg.Split, st.D)
	}
	*e = Exact{cfg: st.Cfg, d: st.D, raw: st.Raw, mix: st.Mix, med: st.Med, x: st.X, yMu: st.YMu, ySd: st.YSd}
	n := len(st.Y)
	if n == 0 {
		return nil
	}
	e.y = st.Y
	nb := e.blocks()
	e.tr = e.rows(e.x, n)
	d2 := make([]float64, nb*n*n)
	e.pairs(d2, e.tr, e.tr)
	return e.factor(d2)
}
