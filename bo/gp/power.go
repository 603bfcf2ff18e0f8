package gp

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// The box that YeoJohnson's λ is chosen in: beyond it the transform of standardised targets is ruled by the one or
// two most extreme scores ((z+1)^λ at λ = 4 turns a score 4 sd out into 625 times one at the mean).
const (
	powerLambdaLo, powerLambdaHi = -3.0, 3.0
	powerLambdaTol               = 1e-6
)

// YeoJohnson writes into dst the Yeo-Johnson power transform (Yeo and Johnson, 2000) of y standardised to mean 0
// and sd 1, with the exponent λ that makes the result most nearly Gaussian by the profile likelihood, and returns
// λ:
//
//	z ≥ 0:  ((z+1)^λ − 1)/λ          (log(z+1) at λ = 0)
//	z < 0:  −((1−z)^(2−λ) − 1)/(2−λ)  (−log(1−z) at λ = 2)
//
// λ = 1 is the identity; λ > 1 spreads the upper tail, λ < 1 draws it in. Unlike the normal scores of the ranks
// (NormalScores) it keeps the gaps' order and is smooth in y: a GP fitted to it still reads how much better a score
// is, only on a scale where the data are closer to Gaussian (HEBO's output warping, Cowen-Rivers et al., 2022; the
// standardisation first, as HEBO and scikit-learn's PowerTransformer do, makes λ free of the scores' units). λ is
// chosen in [−3, 3] by golden-section search, the likelihood being unimodal in λ for all but contrived data. With
// len(y) < 2 or all of y equal, dst is all zero and λ = 1. len(dst) must equal len(y); y must hold no NaN or Inf.
func YeoJohnson(dst, y []float64) (lambda float64) {
	if len(dst) != len(y) {
		panic("gp: YeoJohnson: length mismatch")
	}
	mu, sd := stat.PopMeanStdDev(y, nil)
	if len(y) < 2 || !(sd > 0) {
		clear(dst)
		return 1
	}
	for i, v := range y {
		dst[i] = (v - mu) / sd
	}
	// The Jacobian term of the log likelihood, Σ sign(z)·log(1+|z|), is the same for every λ.
	var jac float64
	for _, z := range dst {
		jac += math.Copysign(math.Log1p(math.Abs(z)), z)
	}
	z := make([]float64, len(dst))
	copy(z, dst)
	ll := func(l float64) float64 {
		yeoJohnson(dst, z, l)
		_, v := stat.PopMeanVariance(dst, nil)
		return -0.5*float64(len(z))*math.Log(v) + (l-1)*jac
	}
	lambda = goldenMax(ll, powerLambdaLo, powerLambdaHi, powerLambdaTol)
	yeoJohnson(dst, z, lambda)
	return lambda
}

// yeoJohnson writes the Yeo-Johnson transform of z at λ into dst.
func yeoJohnson(dst, z []float64, l float64) {
	for i, v := range z {
		switch {
		case v >= 0 && l == 0:
			dst[i] = math.Log1p(v)
		case v >= 0:
			dst[i] = math.Expm1(l*math.Log1p(v)) / l
		case l == 2:
			dst[i] = -math.Log1p(-v)
		default:
			dst[i] = -math.Expm1((2-l)*math.Log1p(-v)) / (2 - l)
		}
	}
}

// goldenMax returns the x in [lo, hi] that maximises the unimodal f, to within tol, by golden-section search.
func goldenMax(f func(float64) float64, lo, hi, tol float64) float64 {
	const r = 0.6180339887498949 // (√5 − 1)/2
	a, b := lo, hi
	c, d := b-r*(b-a), a+r*(b-a)
	fc, fd := f(c), f(d)
	for b-a > tol {
		if fc >= fd {
			b, d, fd = d, c, fc
			c = b - r*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + r*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}
