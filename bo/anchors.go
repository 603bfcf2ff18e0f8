package bo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// SelectAnchors writes into dst the indices of len(dst) = N distinct data points to use as trust-region centres.
// With temperature > 0 they are drawn without replacement with P(i) ∝ exp(minmax(y)ᵢ/temperature), min-max
// scaling and renormalising over the points not yet drawn before each draw (the reference, temperature 0.01).
// With temperature 0 they are the N best (greedy, ties to the lower index). It panics when N > len(y).
func SelectAnchors(dst []int, y []float64, temperature float64, rng *rand.Rand) {
	n := len(dst)
	if n > len(y) {
		panic(fmt.Sprintf("bo: SelectAnchors: %d anchors from %d points", n, len(y)))
	}
	if temperature <= 0 {
		idx := make([]int, len(y))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
		copy(dst, idx[:n])
		return
	}
	left := make([]int, len(y))
	for i := range left {
		left[i] = i
	}
	w := make([]float64, len(y))
	for k := range n {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, i := range left {
			lo, hi = min(lo, y[i]), max(hi, y[i])
		}
		var sum float64
		for j, i := range left {
			e := 1.0 // all equal: uniform
			if hi > lo {
				e = math.Exp(((y[i]-lo)/(hi-lo) - 1) / temperature) // shifted by the max for stability
			}
			w[j] = e
			sum += e
		}
		u := rng.Float64() * sum
		pick := len(left) - 1
		for j := range left {
			u -= w[j]
			if u < 0 {
				pick = j
				break
			}
		}
		dst[k] = left[pick]
		left = append(left[:pick], left[pick+1:]...)
	}
}
