package gp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// yeoJohnsonRef is the transform as Yeo and Johnson write it, with math.Pow and math.Log.
func yeoJohnsonRef(z, l float64) float64 {
	if z >= 0 {
		if l == 0 {
			return math.Log(z + 1)
		}
		return (math.Pow(z+1, l) - 1) / l
	}
	if l == 2 {
		return -math.Log(1 - z)
	}
	return -(math.Pow(1-z, 2-l) - 1) / (2 - l)
}

// powerRef returns λ maximising the profile likelihood on a grid of step 1e-2 over [−3, 3], refined on one of
// step 1e-5 about the best, and the transform.
func powerRef(y []float64) (float64, []float64) {
	n := float64(len(y))
	var mu, ss float64
	for _, v := range y {
		mu += v
	}
	mu /= n
	for _, v := range y {
		ss += (v - mu) * (v - mu)
	}
	sd := math.Sqrt(ss / n)
	z := make([]float64, len(y))
	for i, v := range y {
		z[i] = (v - mu) / sd
	}
	ll := func(l float64) float64 {
		var m, m2, jac float64
		for _, v := range z {
			t := yeoJohnsonRef(v, l)
			m += t
			m2 += t * t
			s := 1.0
			if v < 0 {
				s = -1
			}
			jac += s * math.Log(1+math.Abs(v))
		}
		m /= n
		return -0.5*n*math.Log(m2/n-m*m) + (l-1)*jac
	}
	best, bl := math.Inf(-1), 0.0
	for k := -300; k <= 300; k++ {
		if v := ll(float64(k) * 1e-2); v > best {
			best, bl = v, float64(k)*1e-2
		}
	}
	c := bl
	for k := -1000; k <= 1000; k++ {
		if l := c + float64(k)*1e-5; l >= -3 && l <= 3 {
			if v := ll(l); v > best {
				best, bl = v, l
			}
		}
	}
	out := make([]float64, len(y))
	for i, v := range z {
		out[i] = yeoJohnsonRef(v, bl)
	}
	return bl, out
}

func TestYeoJohnson(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name string
		draw func() float64
		lo   float64 // λ must lie in [lo, hi]
		hi   float64
	}{
		{"normal", rng.NormFloat64, 0.8, 1.2},
		{"right-skewed", rng.ExpFloat64, -3, 0.9},                            // a long upper tail is drawn in
		{"left-skewed", func() float64 { return -rng.ExpFloat64() }, 1.1, 3}, // a long lower tail: the top spread
		{"scores near a ceiling", func() float64 { return 1 - 0.3*rng.ExpFloat64() }, 1.1, 3},
	} {
		y := make([]float64, 400)
		for i := range y {
			y[i] = c.draw()
		}
		got := make([]float64, len(y))
		l := YeoJohnson(got, y)
		wantL, want := powerRef(y)
		if l < c.lo || l > c.hi {
			t.Errorf("%s: λ = %v, want in [%v, %v]", c.name, l, c.lo, c.hi)
		}
		if math.Abs(l-wantL) > 2e-5 {
			t.Errorf("%s: λ = %v, the grid's %v", c.name, l, wantL)
		}
		for i := range y {
			if math.Abs(got[i]-want[i]) > 1e-3*max(1, math.Abs(want[i])) {
				t.Fatalf("%s: transform %d of %v = %v, want %v", c.name, i, y[i], got[i], want[i])
			}
		}
		// The transform keeps the order of the scores, ties included.
		for i := range y {
			for j := range y {
				if (y[i] < y[j]) != (got[i] < got[j]) {
					t.Fatalf("%s: order of %v and %v lost (%v, %v)", c.name, y[i], y[j], got[i], got[j])
				}
			}
		}
	}
	// λ = 0 and λ = 2 are the transform's logarithmic branches.
	for _, l := range []float64{0, 2, 1, -1.5, 2.5} {
		z := []float64{-2, -0.5, 0, 0.5, 3}
		dst := make([]float64, len(z))
		yeoJohnson(dst, z, l)
		for i, v := range z {
			if w := yeoJohnsonRef(v, l); math.Abs(dst[i]-w) > 1e-12 {
				t.Errorf("λ %v: transform of %v = %v, want %v", l, v, dst[i], w)
			}
		}
	}
	// Constant or single scores: zeros and λ = 1.
	for _, y := range [][]float64{{0.3, 0.3, 0.3}, {5}, {}} {
		dst := slices.Repeat([]float64{7}, len(y))
		if l := YeoJohnson(dst, y); l != 1 || slices.ContainsFunc(dst, func(v float64) bool { return v != 0 }) {
			t.Errorf("YeoJohnson(%v) = %v, λ %v; want zeros, 1", y, dst, l)
		}
	}
}
