package gp

import (
	"math"
	"testing"
)

func TestSpearman(t *testing.T) {
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); math.Abs(r-1) > 1e-12 {
		t.Errorf("monotone: %v", r)
	}
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); math.Abs(r+1) > 1e-12 {
		t.Errorf("reversed: %v", r)
	}
	// Ties take average ranks: ranks (0.5, 0.5, 2) against (0, 1, 2).
	if r, want := Spearman([]float64{1, 1, 2}, []float64{1, 2, 3}), 0.8660254037844386; math.Abs(r-want) > 1e-12 {
		t.Errorf("ties: %v, want %v", r, want)
	}
	if r := Spearman([]float64{1, 1}, []float64{1, 2}); !math.IsNaN(r) {
		t.Errorf("constant: %v, want NaN", r)
	}
}
