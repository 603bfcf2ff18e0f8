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

// TestNormalScores checks the normal scores against Φ⁻¹ computed from math.Erfinv: Φ⁻¹(p) = √2·erfinv(2p−1).
func TestNormalScores(t *testing.T) {
	y := []float64{0.3, 0, 0.9, 0, 1e9, -2}
	ranks := []float64{3, 1.5, 4, 1.5, 5, 0}
	got := make([]float64, len(y))
	NormalScores(got, y)
	for i, r := range ranks {
		want := math.Sqrt2 * math.Erfinv(2*(r+0.5)/float64(len(y))-1)
		if math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("score %d (y %v, rank %v) = %v, want %v", i, y[i], r, got[i], want)
		}
	}
	if got[1] != got[3] {
		t.Errorf("ties scored %v and %v, want equal", got[1], got[3])
	}
	// In place, as the optimiser may call it.
	NormalScores(y, slices.Clone(y))
	if !slices.Equal(y, got) {
		t.Errorf("in place %v, want %v", y, got)
	}
}
