package bo

import (
	"math"
	"sort"
	"testing"
)

// TestStalled: a run is stalled when the last calls points changed none of the ten best scores.
func TestStalled(t *testing.T) {
	y := make([]float64, 30)
	for i := range y {
		y[i] = float64(i % 12) // the ten best are 11, 11, 10, 10, 9, 9, ... the second 11 at point 23
	}
	for _, c := range []struct {
		calls int
		want  bool
	}{{0, false}, {5, true}, {6, true}, {7, false}, {30, false}} {
		if got := stalled(y, c.calls); got != c.want {
			t.Errorf("stalled(y, %d) = %v, want %v", c.calls, got, c.want)
		}
	}
}

// TestBestSum checks bestSum against a sort.
func TestBestSum(t *testing.T) {
	y := []float64{0.3, -1, 0.9, 0.9, 0.1, 0.5, 0.7, 0.2}
	for k := 1; k <= len(y)+2; k++ {
		s := append([]float64(nil), y...)
		sort.Sort(sort.Reverse(sort.Float64Slice(s)))
		want := 0.0
		for _, v := range s[:min(k, len(s))] {
			want += v
		}
		if got := bestSum(y, k); math.Abs(got-want) > 1e-12 {
			t.Errorf("bestSum(y, %d) = %g, want %g", k, got, want)
		}
	}
}

// TestSimilarity: Σmin/Σmax of count vectors.
func TestSimilarity(t *testing.T) {
	if got := similarity([]float64{1, 2, 0}, []float64{2, 1, 1}); math.Abs(got-2.0/5) > 1e-12 {
		t.Errorf("similarity = %g, want 0.4", got)
	}
	if got := similarity([]float64{0, 0}, []float64{0, 0}); got != 1 {
		t.Errorf("similarity of zeros = %g, want 1", got)
	}
}
