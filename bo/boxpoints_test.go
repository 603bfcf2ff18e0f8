package bo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBoxPointsAsMadeInOrder: the rows boxPoints makes when read, in any order and any slice of an anchor, are
// the rows the whole matrix holds when made anchor by anchor from the run's stream (Sobol and uniform points),
// and the stream is left where making them all leaves it. A source that is not a PCG makes them all at once.
func TestBoxPointsAsMadeInOrder(t *testing.T) {
	const n, c, tt, f = 3, 40, 5, 4
	d := tt * f
	rng := rand.New(rand.NewPCG(5, 6))
	centres := make([]float64, n*d)
	probs := make([]float64, n*tt)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	for i := range probs {
		probs[i] = rng.Float64()
	}
	newOpt := func(points PointKind, src rand.Source) *Optimizer {
		o := &Optimizer{src: src, rng: rand.New(src), t: tt, f: f, d: d, cfg: Config{Points: points}}
		o.st.TR.Length = 0.3
		o.rng.Uint64() // something drawn before
		return o
	}
	sources := map[string]func() rand.Source{
		"PCG":     func() rand.Source { return rand.NewPCG(7, 8) },
		"ChaCha8": func() rand.Source { return rand.NewChaCha8([32]byte{1}) },
	}
	for _, points := range []PointKind{PointsSobol, PointsUniform} {
		for name, source := range sources {
			// The matrix made eagerly, as the optimiser made it before boxPoints.
			o := newOpt(points, source())
			draw := o.pointDrawer()
			want := make([]float64, n*c*d)
			unit := make([]float64, c*d)
			for a := range n {
				draw(unit, c)
				Perturb(want[a*c*d:(a+1)*c*d], centres[a*d:(a+1)*d], 8*o.st.TR.Length/2, probs[a*tt:(a+1)*tt], f, unit, o.rng)
			}
			after := o.rng.Uint64()

			o = newOpt(points, source())
			b := o.boxCandidates(centres, probs, c)
			if (b.all == nil) != (name == "PCG") {
				t.Fatalf("points %v, %s: rows made at once %v, want %v", points, name, b.all != nil, name != "PCG")
			}
			if got := o.rng.Uint64(); got != after {
				t.Errorf("points %v, %s: the stream after the candidates draws %#x, want %#x", points, name, got, after)
			}
			for _, r := range [][3]int{{2, 10, 25}, {0, 0, 1}, {1, 0, c}, {2, 0, 10}, {0, 39, 40}, {2, 25, 40}, {0, 1, 39}} {
				a, lo, hi := r[0], r[1], r[2]
				got := make([]float64, (hi-lo)*d)
				b.rows(got, a, lo, hi)
				if !slices.Equal(got, want[(a*c+lo)*d:(a*c+hi)*d]) {
					t.Errorf("points %v, %s: rows %d-%d of anchor %d differ from the matrix made in order", points, name, lo, hi, a)
				}
			}
		}
	}
}
