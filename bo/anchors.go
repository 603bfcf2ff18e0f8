package bo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// AnchorRule is how the anchors' sampling weights are computed from the scores.
type AnchorRule int

const (
	// AnchorsMinMax is the official code's rule: P(i) ∝ exp(minmax(y)ᵢ/τ), the scores min-max scaled over the
	// points not yet drawn, τ = 0.01 by default. It puts almost all the mass on the top few points.
	AnchorsMinMax AnchorRule = iota
	// AnchorsRaw is the paper's rule (Algorithm 1): P(i) ∝ exp(yᵢ/τ) on the raw scores, τ = 0.1 by default.
	// Its greediness depends on the objective's scale.
	AnchorsRaw
)

// String returns the rule's name as the -anchor-rule flag spells it.
func (r AnchorRule) String() string {
	switch r {
	case AnchorsMinMax:
		return "minmax"
	case AnchorsRaw:
		return "raw"
	}
	return fmt.Sprintf("AnchorRule(%d)", int(r))
}

// ParseAnchorRule returns the rule named s ("minmax" or "raw").
func ParseAnchorRule(s string) (AnchorRule, error) {
	switch s {
	case "minmax":
		return AnchorsMinMax, nil
	case "raw":
		return AnchorsRaw, nil
	}
	return 0, fmt.Errorf("bo: unknown anchor rule %q (want minmax or raw)", s)
}

// DefaultTemperature returns the rule's default softmax temperature.
func (r AnchorRule) DefaultTemperature() float64 {
	if r == AnchorsRaw {
		return 0.1
	}
	return 0.01
}

// SelectAnchors writes into dst the indices of len(dst) = N distinct data points to use as trust-region centres,
// drawn with AnchorsMinMax (the reference's rule); see SelectAnchorsRule.
func SelectAnchors(dst []int, y []float64, temperature float64, rng *rand.Rand) {
	SelectAnchorsRule(dst, y, AnchorsMinMax, temperature, rng)
}

// SelectAnchorsRule writes into dst the indices of len(dst) = N distinct data points to use as trust-region
// centres. With temperature > 0 they are drawn without replacement with P(i) ∝ exp(sᵢ/temperature),
// renormalising over the points not yet drawn before each draw, where s is y min-max scaled over those points
// (AnchorsMinMax) or y itself (AnchorsRaw). With temperature 0 they are the N best (greedy, ties to the lower
// index). It panics when N > len(y).
func SelectAnchorsRule(dst []int, y []float64, rule AnchorRule, temperature float64, rng *rand.Rand) {
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
		span, half := hi-lo, 1.0
		if math.IsInf(span, 0) { // scores beyond ±MaxFloat64/2: min-max scale their halves, which cannot overflow
			span, half = hi/2-lo/2, 0.5
		}
		var sum float64
		for j, i := range left {
			e := 1.0 // all equal: uniform
			switch {
			case rule == AnchorsRaw:
				e = math.Exp((y[i] - hi) / temperature) // shifted by the max for stability
			case hi > lo:
				e = math.Exp(((y[i]*half-lo*half)/span - 1) / temperature)
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

// DistinctScores returns, in increasing order, the index of the first point of each distinct value in y: one
// representative of each plateau of equal scores.
func DistinctScores(y []float64) []int {
	seen := make(map[float64]struct{}, len(y))
	var idx []int
	for i, v := range y {
		if _, ok := seen[v]; ok {
			continue
		}
		seen[v] = struct{}{}
		idx = append(idx, i)
	}
	return idx
}
