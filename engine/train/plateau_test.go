package train

import "testing"

// Plateau counts validations that fail to improve on the best by MinDelta,
// does not move its best for smaller gains, and so still takes a slow descent
// that adds up to MinDelta as an improvement.
func TestPlateau(t *testing.T) {
	p := Plateau{Patience: 2, MinDelta: 0.1}
	steps := []struct {
		nll   float64
		since int
		best  float64
		flat  bool
	}{
		{-1.00, 0, -1.00, false}, // the first validation sets the best
		{-1.05, 1, -1.00, false}, // 0.05 < MinDelta: no improvement, best unchanged
		{-1.11, 0, -1.11, false}, // 0.11 below the best: an improvement
		{-1.00, 1, -1.11, false},
		{-1.20, 2, -1.11, true}, // 0.09: the second validation without improvement
	}
	for i, s := range steps {
		flat := p.Observe(int64(i+1), s.nll)
		if flat != s.flat || p.Since != s.since || p.Best != s.best {
			t.Fatalf("validation %d (NLL %g): flat %v since %d best %g, want %v %d %g", i+1, s.nll, flat, p.Since, p.Best, s.flat, s.since, s.best)
		}
	}
	if p.BestStep != 3 {
		t.Errorf("BestStep = %d, want 3", p.BestStep)
	}
	never := Plateau{MinDelta: 1}
	for i := range 10 {
		if never.Observe(int64(i), 0) {
			t.Fatal("Patience 0 made the curve flat")
		}
	}
}
