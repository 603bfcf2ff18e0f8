package bo

import "fmt"

// ThompsonSelect writes into dst the indices of len(dst) = q distinct candidates chosen from joint posterior
// samples (S×C, row-major, S ≥ q): sample k picks the highest-valued candidate not chosen by samples 0..k−1,
// as botorch's MaxPosteriorSampling(replacement=False) does. Ties go to the lowest index. It panics when
// q > C or S < q.
func ThompsonSelect(dst []int, samples []float64, c int) {
	q := len(dst)
	if c <= 0 || len(samples)%c != 0 || len(samples)/c < q || q > c {
		panic(fmt.Sprintf("bo: ThompsonSelect: bad shape: q=%d C=%d len(samples)=%d", q, c, len(samples)))
	}
	taken := make([]bool, c)
	for k := range q {
		row := samples[k*c : (k+1)*c]
		best := -1
		for i, v := range row {
			if !taken[i] && (best < 0 || v > row[best]) {
				best = i
			}
		}
		taken[best] = true
		dst[k] = best
	}
}
