package bo

import (
	"fmt"
	"slices"
	"sort"
)

// stallTop is how many of the best scores a stall is read on: PMO's metric, the mean of the ten best.
const stallTop = 10

// stalled reports whether the stallTop best scores were the same calls points ago: the last calls points (the
// data are in call order) brought nothing into them.
func stalled(y []float64, calls int) bool {
	n := len(y)
	if calls <= 0 || n <= calls {
		return false
	}
	before, now := bestSum(y[:n-calls], stallTop), bestSum(y, stallTop)
	return now <= before
}

// bestSum returns the sum of the k largest values of y.
func bestSum(y []float64, k int) float64 {
	top := make([]float64, 0, k+1)
	for _, v := range y {
		i, _ := slices.BinarySearch(top, v)
		if len(top) < k {
			top = slices.Insert(top, i, v)
		} else if i > 0 {
			top = slices.Insert(top, i, v)[1:]
		}
	}
	s := 0.0
	for _, v := range top {
		s += v
	}
	return s
}

// similarity is the min-max (Tanimoto) similarity of two non-negative count vectors: Σmin/Σmax, 1 for two
// zero vectors.
func similarity(a, b []float64) float64 {
	var lo, hi float64
	for i, x := range a {
		y := b[i]
		lo += min(x, y)
		hi += max(x, y)
	}
	if hi == 0 {
		return 1
	}
	return lo / hi
}

// unlikeBest returns up to k parents for a stalled run, best first: one point per distinct score, as parentSet
// draws them, but only those whose features are less similar than sim to the best point's, so that the
// children come from another basin than the one the run has exhausted. It returns nil when no point qualifies.
func (o *Optimizer) unlikeBest(k int, sim float64) ([]int, error) {
	y := o.st.Y
	idx := DistinctScores(y)
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	if len(idx) < 2 {
		return nil, nil
	}
	const chunk = 500
	var best []float64
	var out []int
	for lo := 0; lo < len(idx) && len(out) < k; lo += chunk {
		part := idx[lo:min(lo+chunk, len(idx))]
		keys := make([]string, len(part))
		for j, i := range part {
			keys[j] = o.st.SMILES[i]
		}
		x, err := o.features(o.gather(part), keys)
		if err != nil {
			return nil, fmt.Errorf("bo: parents unlike the best: %w", err)
		}
		w := len(x) / len(part)
		if best == nil {
			best = slices.Clone(x[:w])
		}
		for j, i := range part {
			if len(out) == k {
				break
			}
			if similarity(best, x[j*w:(j+1)*w]) < sim {
				out = append(out, i)
			}
		}
	}
	return out, nil
}
