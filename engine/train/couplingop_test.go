package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddBiasReLUAndGrad checks the coupling net's branch-free ReLU and its
// gradient mask against their definitions, in both dtypes: max(x + b, 0)
// with +0 for every clamped entry, and a gradient zeroed exactly where the
// output is zero.
func TestAddBiasReLUAndGrad(t *testing.T) {
	checkReLU[float32](t)
	checkReLU[float64](t)
}

func checkReLU[T float32 | float64](t *testing.T) {
	const n, w = 300, 37
	rng := rand.New(rand.NewPCG(1, 2))
	x, b, d := make([]T, n*w), make([]T, w), make([]T, n*w)
	for i := range x {
		x[i] = T(rng.NormFloat64())
		d[i] = T(rng.NormFloat64())
	}
	x[3] = T(math.Copysign(0, -1)) // −0 + 0 must clamp to +0
	for j := range b {
		b[j] = T(rng.NormFloat64() * 0.1)
	}
	b[3] = 0
	h := append([]T(nil), x...)
	addBiasReLU(h, b, n, w, true)
	g := append([]T(nil), d...)
	reluGrad(g, h)
	zeros := 0
	for i := range x {
		want := x[i] + b[i%w]
		if want <= 0 {
			want = 0
		}
		if h[i] != want || math.Signbit(float64(h[i])) {
			t.Fatalf("%T: relu(%v + %v) = %v, want %v", x[i], x[i], b[i%w], h[i], want)
		}
		wantG := d[i]
		if h[i] == 0 {
			wantG = 0
			zeros++
		}
		if g[i] != wantG {
			t.Fatalf("%T: gradient at %d (h = %v) = %v, want %v", x[i], i, h[i], g[i], wantG)
		}
	}
	if zeros < n*w/4 || zeros > 3*n*w/4 {
		t.Fatalf("%T: %d of %d outputs clamped: the check does not exercise both sides", x[0], zeros, n*w)
	}
	plain := append([]T(nil), x...)
	addBiasReLU(plain, b, n, w, false)
	for i := range x {
		if plain[i] != x[i]+b[i%w] {
			t.Fatalf("%T: bias only: %v, want %v", x[i], plain[i], x[i]+b[i%w])
		}
	}
}
