package kernels

import "math"

// expf is math.Exp; the affine scale is computed in float64 and rounded.
func expf(x float64) float64 { return math.Exp(x) }

// AffineParams is the number of raw coupling-net outputs per scalar of the
// affine transform u = o0 + exp(0.5·o1)·w.
const AffineParams = 2

// AffineForwardTo maps n data-side scalars w to dst = o0 + exp(0.5·o1)·w,
// with raw n×2 (parameter index fastest), and returns Σ log(du/dw) = Σ 0.5·o1.
// dst may alias w.
func AffineForwardTo(dst, w, raw []float32, n int) (logDet float64) {
	checkDims("AffineForwardTo", n)
	checkLen("AffineForwardTo", "dst", len(dst), n)
	checkLen("AffineForwardTo", "w", len(w), n)
	checkLen("AffineForwardTo", "raw", len(raw), n*AffineParams)
	for i := 0; i < n; i++ {
		o0, o1 := raw[2*i], raw[2*i+1]
		s := 0.5 * float64(o1)
		dst[i] = float32(float64(o0) + expf(s)*float64(w[i]))
		logDet += s
	}
	return logDet
}

// AffineInverseTo maps n base-side scalars u back to dst = (u − o0)·exp(−0.5·o1)
// and returns Σ log(du/dw) = Σ 0.5·o1. dst may alias u.
func AffineInverseTo(dst, u, raw []float32, n int) (logDet float64) {
	checkDims("AffineInverseTo", n)
	checkLen("AffineInverseTo", "dst", len(dst), n)
	checkLen("AffineInverseTo", "u", len(u), n)
	checkLen("AffineInverseTo", "raw", len(raw), n*AffineParams)
	for i := 0; i < n; i++ {
		o0, o1 := raw[2*i], raw[2*i+1]
		s := 0.5 * float64(o1)
		dst[i] = float32((float64(u[i]) - float64(o0)) * expf(-s))
		logDet += s
	}
	return logDet
}
