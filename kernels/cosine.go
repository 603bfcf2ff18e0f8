package kernels

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// NormalizeRowsTo writes to dst (r×c) the rows of x (r×c) divided by their
// Euclidean norms; a zero row stays zero. dst may alias x.
func NormalizeRowsTo(dst, x []float32, r, c int) {
	checkDims("NormalizeRowsTo", r, c)
	checkLen("NormalizeRowsTo", "dst", len(dst), r*c)
	checkLen("NormalizeRowsTo", "x", len(x), r*c)
	for i := 0; i < r; i++ {
		row := x[i*c : (i+1)*c]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		out := dst[i*c : (i+1)*c]
		if ss == 0 {
			clear(out)
			continue
		}
		inv := 1 / math.Sqrt(ss)
		for j, v := range row {
			out[j] = float32(float64(v) * inv)
		}
	}
}

// NearestCosineTo writes to dst[i] the index j of the row of unit (v×f) with
// the largest cosine similarity to row i of x (n×f): the left inverse of a
// unit-norm embedding, as in NF-BO's decoder. The rows of unit must have
// norm 1 (or be zero, scoring 0); scores is n×v scratch. As in the
// reference, a NaN similarity counts as 1 (so a zero or NaN row of x maps
// to index 0); ties go to the lowest index.
func NearestCosineTo(dst []int, x, unit, scores []float32, n, f, v int) {
	checkDims("NearestCosineTo", n, f, v)
	checkLen("NearestCosineTo", "dst", len(dst), n)
	checkLen("NearestCosineTo", "x", len(x), n*f)
	checkLen("NearestCosineTo", "unit", len(unit), v*f)
	checkLen("NearestCosineTo", "scores", len(scores), n*v)
	if n == 0 {
		return
	}
	if v == 0 {
		panic("kernels: NearestCosineTo: no rows to choose from (v = 0)")
	}
	if f > 0 {
		blas32.Implementation().Sgemm(blas.NoTrans, blas.Trans, n, v, f, 1, x, f, unit, f, 0, scores, v)
	} else {
		clear(scores[:n*v])
	}
	for i := 0; i < n; i++ {
		var ss float64
		for _, e := range x[i*f : (i+1)*f] {
			ss += float64(e) * float64(e)
		}
		inv := 1 / math.Sqrt(ss) // +Inf for a zero row: 0·Inf = NaN, as in the reference
		best, bestScore := 0, math.Inf(-1)
		for j, s := range scores[i*v : (i+1)*v] {
			cos := float64(s) * inv
			if cos != cos {
				cos = 1
			}
			if cos > bestScore {
				best, bestScore = j, cos
			}
		}
		dst[i] = best
	}
}
