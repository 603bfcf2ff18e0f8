package gp

import (
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Spearman returns the rank correlation of a and b (average ranks for ties), or NaN when either is constant: how
// well a surrogate's posterior mean orders scores it was not fitted on (the optimiser's FitRank, nfbo fitcheck).
func Spearman(a, b []float64) float64 {
	return stat.Correlation(fracRanks(a), fracRanks(b), nil) // 0/0, NaN, when either is constant
}

// fracRanks returns the 0-based rank of each element of v, ties sharing the mean of their ranks.
func fracRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case v[i] < v[j]:
			return -1
		case v[i] > v[j]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
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
