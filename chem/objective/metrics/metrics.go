// Package metrics computes the scores by which molecular optimisers are
// compared: Top-k, PMO's AUC Top-k and GuacaMol's benchmark score.
//
// Every function takes scores, not molecules. For Top-k and AUC Top-k they
// are the scores of the paid calls in call order (objective.Budget.Scores,
// or the score column of the evaluation log), one per distinct molecule.
// The sums are done in the order the reference Python code does them
// (numpy's pairwise summation for np.mean, Python's left-to-right sum for
// GuacaMol), so that results agree to the last bit.
package metrics

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// FiniteScale returns f(scores) where its sums would overflow: f itself when its value is finite, or when a
// score is not, else f of the scores divided by the power of two that brings the largest below 1, multiplied
// back. A power of two scales exactly, so f must scale as its scores do (f(c·x) = c·f(x): a mean, a Top-k, a
// standard deviation); every figure here is a mean of scores, no larger than the largest: a Top-10 of 1e308 is
// 1e308, where summing first made it +Inf.
func FiniteScale(scores []float64, f func([]float64) float64) float64 {
	v := f(scores)
	if !math.IsInf(v, 0) && !math.IsNaN(v) {
		return v
	}
	var m float64
	for _, s := range scores {
		if math.IsInf(s, 0) || math.IsNaN(s) {
			return v
		}
		m = max(m, math.Abs(s))
	}
	_, e := math.Frexp(m)
	scaled := make([]float64, len(scores))
	for i, s := range scores {
		scaled[i] = math.Ldexp(s, -e)
	}
	return math.Ldexp(f(scaled), e)
}

// FormatScore formats a score or a figure of scores with prec decimals, as %.*f does, while its magnitude is
// below 1e9, and with prec+1 significant digits in e-notation beyond, so that a score of 1e308 prints as
// 1.0000e+308 and not as 309 digits.
func FormatScore(v float64, prec int) string {
	if math.Abs(v) < 1e9 || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	return strconv.FormatFloat(v, 'e', prec, 64)
}

// pairwiseSum is numpy's pairwise summation of a contiguous float64 array
// (numpy/core/src/umath/loops_utils.h.src, pairwise_sum), which np.sum and
// np.mean use: blocks of up to 128 are summed with eight accumulators, and
// longer arrays are split in two at a multiple of 8.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	}
	n2 := n / 2
	n2 -= n2 % 8
	return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
}

// npMean is np.mean of a float64 array: pairwise sum divided by the count.
func npMean(a []float64) float64 {
	return pairwiseSum(a) / float64(len(a))
}

// topDesc returns the k largest scores in descending order (fewer if there
// are fewer scores).
func topDesc(scores []float64, k int) []float64 {
	s := slices.Clone(scores)
	slices.SortFunc(s, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	if k < len(s) {
		s = s[:k]
	}
	return s
}

// topKeeper keeps the k largest of the scores added so far, in descending order, as topDesc of them returns them.
type topKeeper struct {
	k    int
	best []float64
}

func newTopKeeper(k int) *topKeeper { return &topKeeper{k: k, best: make([]float64, 0, k)} }

// add adds scores. Scores are finite (objectives' non-finite scores are refused); a NaN, which has no place in
// the order, is kept all the same, so that it shows in the mean rather than vanish.
func (t *topKeeper) add(scores []float64) {
	for _, v := range scores {
		n := len(t.best)
		if n == t.k && !(v > t.best[n-1]) && !math.IsNaN(v) {
			continue
		}
		// The first place holding a smaller score (after any equal ones): equal scores are the same value, so
		// their order does not matter to the mean.
		i, _ := slices.BinarySearchFunc(t.best, v, func(a, b float64) int {
			if a >= b {
				return -1
			}
			return 1
		})
		if n < t.k {
			t.best = append(t.best, 0)
		}
		copy(t.best[i+1:], t.best[i:len(t.best)-1])
		t.best[i] = v
	}
}

// TopK returns the mean of the k best scores, counting missing ones as 0:
// with fewer than k scores the sum is still divided by k. It panics if
// k < 1.
func TopK(scores []float64, k int) float64 {
	if k < 1 {
		panic(fmt.Sprintf("metrics: TopK with k = %d", k))
	}
	top := topDesc(scores, k)
	padded := make([]float64, k)
	copy(padded, top)
	return FiniteScale(padded, npMean)
}

// DefaultFreq is PMO's logging frequency: the Top-k curve is sampled every
// 100 calls.
const DefaultFreq = 100

// AUCTopK is PMO's AUC Top-k (wenhao-gao/mol_opt, Oracle/top_auc): the
// Top-k curve sampled every freq calls over the first min(len, budget)
// calls, integrated by trapezoids from (0, 0), with the last segment
// reaching the final call; when finished is true and the run stopped
// before budget calls, the rest of the budget is filled with the final
// value; the area is divided by budget, so a perfect run scores 1.
//
// scores are the paid calls' scores in call order. As in PMO, the Top-k at
// each point is the mean of the best k scores available (np.mean of up to
// k), so before k calls it averages fewer than k. It panics if k, freq or
// budget is < 1; with no scores it returns 0.
func AUCTopK(scores []float64, k, freq, budget int, finished bool) float64 {
	if k < 1 || freq < 1 || budget < 1 {
		panic(fmt.Sprintf("metrics: AUCTopK with k = %d, freq = %d, budget = %d", k, freq, budget))
	}
	if len(scores) == 0 {
		return 0
	}
	return FiniteScale(scores, func(scores []float64) float64 { return aucTopK(scores, k, freq, budget, finished) })
}

// aucTopK is AUCTopK's sum, which overflows for scores near ±MaxFloat64. PMO sorts each prefix; the best k so
// far, kept sorted as the calls come (topKeeper), are the same values in the same order, so each point's np.mean
// is the same to the bit, in O(n·k) rather than O(n²/freq·log n): a report over a campaign's 10,000-call runs
// took minutes.
func aucTopK(scores []float64, k, freq, budget int, finished bool) float64 {
	n := len(scores)
	sum, prev := 0.0, 0.0
	called := 0
	top := newTopKeeper(k)
	for idx := freq; idx < min(n, budget); idx += freq {
		top.add(scores[called:idx])
		now := npMean(top.best)
		sum += float64(freq) * (now + prev) / 2
		prev = now
		called = idx
	}
	top.add(scores[called:])
	now := npMean(top.best)
	sum += float64(n-called) * (now + prev) / 2
	if finished && n < budget {
		sum += float64(budget-n) * now
	}
	return sum / float64(budget)
}

// GuacaMolScore is GuacaMol's goal-directed benchmark score
// (goal_directed_score_contributions.compute_global_score with a uniform
// specification): the mean over k in topCounts of the mean of the k best
// scores. scores must be those of the canonicalised, de-duplicated
// molecules (objective.BenchmarkScores does both); they are padded with
// zeros up to the largest k, as GuacaMol pads missing molecules. It panics
// if topCounts is empty or holds a k < 1.
func GuacaMolScore(scores []float64, topCounts []int) float64 {
	if len(topCounts) == 0 {
		panic("metrics: GuacaMolScore with no top counts")
	}
	need := 0
	for _, k := range topCounts {
		if k < 1 {
			panic(fmt.Sprintf("metrics: GuacaMolScore with top count %d", k))
		}
		need = max(need, k)
	}
	s := slices.Clone(scores)
	for len(s) < need {
		s = append(s, 0)
	}
	return FiniteScale(topDesc(s, len(s)), func(s []float64) float64 { return guacaMolSum(s, topCounts) })
}

// guacaMolSum is GuacaMolScore of the scores s sorted best first, padded to the largest top count.
func guacaMolSum(s []float64, topCounts []int) float64 {
	global := 0.0
	for _, k := range topCounts {
		// Python's sum(sorted_scores[:k]) / k: left to right from int 0.
		part := 0.0
		for _, v := range s[:k] {
			part += v
		}
		global += part / float64(k) * 1.0
	}
	return global / float64(len(topCounts))
}
