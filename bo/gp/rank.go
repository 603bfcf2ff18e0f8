package gp

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Spearman returns the rank correlation of a and b (average ranks for ties), or NaN when either is constant or
// holds a NaN: how well a surrogate's posterior mean orders scores it was not fitted on (the optimiser's FitRank,
// nfbo fitcheck).
func Spearman(a, b []float64) float64 {
	if slices.ContainsFunc(a, math.IsNaN) || slices.ContainsFunc(b, math.IsNaN) {
		return math.NaN() // a NaN has no rank
	}
	return stat.Correlation(fracRanks(a), fracRanks(b), nil) // 0/0, NaN, when either is constant
}

// fracRanks returns the 0-based rank of each element of v, ties sharing the mean of their ranks. NaNs rank first,
// each alone (equal to nothing): every group holds at least its first element, so the scan always advances.
func fracRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	// cmp.Compare orders a NaN before every number, consistently, as a sort needs; numbers as < and > do.
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(v[i], v[j]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j-1) / 2
		}
		i = j
	}
	return r
}

// NormalScores writes into dst the normal scores of y: the standard normal quantile of each value's rank,
// Φ⁻¹((r+½)/n) with r its 0-based rank (ties sharing the mean of their ranks), so that equal values share a score.
// A GP fitted to them learns the order of y, not its scale: the few best scores of a skewed objective (most
// molecules near 0, a handful far above) are neither outliers that the noise absorbs nor a gap that flattens the
// rest (a Gaussian copula; Salinas et al. 2020, HEBO's output warping). len(dst) must equal len(y); y must hold
// no NaN.
func NormalScores(dst, y []float64) {
	if len(dst) != len(y) {
		panic("gp: NormalScores: length mismatch")
	}
	n := float64(len(y))
	for i, r := range fracRanks(y) {
		dst[i] = distuv.UnitNormal.Quantile((r + 0.5) / n)
	}
}
