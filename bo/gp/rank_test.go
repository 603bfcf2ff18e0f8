package gp

import (
	"math"
	"slices"
	"testing"
	"time"
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

// TestRanksNaN: a NaN in a surrogate's mean (scores of 1e308 once made one) used to stop fracRanks advancing, and
// the optimiser spun forever after paying for the batch (issue #56).
func TestRanksNaN(t *testing.T) {
	done := make(chan []float64, 1)
	go func() { done <- fracRanks([]float64{2, math.NaN(), 1, math.NaN(), 2}) }()
	select {
	case r := <-done:
		if want := []float64{3.5, 0, 2, 1, 3.5}; !slices.Equal(r, want) {
			t.Errorf("ranks %v, want %v", r, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fracRanks did not return on NaN")
	}
	if r := Spearman([]float64{1, math.NaN(), 3}, []float64{1, 2, 3}); !math.IsNaN(r) {
		t.Errorf("Spearman with a NaN = %v, want NaN", r)
	}
	if r := Spearman([]float64{-math.MaxFloat64, 1e-320, 1e308}, []float64{1, 2, 3}); math.Abs(r-1) > 1e-12 {
		t.Errorf("Spearman at the ends of float64 = %v, want 1", r)
	}
}
