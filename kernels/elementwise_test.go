package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// elementwiseInputs returns n values drawn from rng, with zeros of both
// signs, infinities, NaN, subnormals and values of either sign whose sum
// is ±0 spread among them.
func elementwiseInputs(rng *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, 1, -1}
	x := make([]float32, n)
	for i := range x {
		if rng.IntN(4) == 0 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.NormFloat64() * 3)
		}
	}
	return x
}

// sameBits reports whether a and b hold the same bits, every NaN counting
// as the same.
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestElementwiseMatchesLoop holds the slice functions to the scalar loops
// they replace, bit for bit, at every length around the eight-lane and
// 32-entry grids, with dst apart from and aliasing the inputs.
func TestElementwiseMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	binary := []struct {
		name  string
		slice func(dst, a, b []float32)
		loop  func(a, b float32) float32
	}{
		{"Add32s", Add32s, func(a, b float32) float32 { return a + b }},
		{"Mul32s", Mul32s, func(a, b float32) float32 { return a * b }},
		{"AddReLU32s", AddReLU32s, func(a, b float32) float32 { return max(a+b, 0) }},
	}
	for n := 0; n <= 70; n++ {
		a, b := elementwiseInputs(rng, n), elementwiseInputs(rng, n)
		// Pairs whose sum is −0 and +0, for AddReLU32s.
		if n > 3 {
			a[1], b[1] = float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))
			a[2], b[2] = 2.5, -2.5
		}
		for _, f := range binary {
			want := make([]float32, n)
			for i := range want {
				want[i] = f.loop(a[i], b[i])
			}
			got := make([]float32, n)
			f.slice(got, a, b)
			inA := append([]float32(nil), a...)
			f.slice(inA, inA, b)
			inB := append([]float32(nil), b...)
			f.slice(inB, a, inB)
			for i := range want {
				for _, g := range [...]struct {
					how string
					v   float32
				}{{"apart", got[i]}, {"dst = a", inA[i]}, {"dst = b", inB[i]}} {
					if !sameBits(g.v, want[i]) {
						t.Fatalf("%s, n = %d, %s: entry %d of %v and %v is %v (bits %#x), want %v (bits %#x)",
							f.name, n, g.how, i, a[i], b[i], g.v, math.Float32bits(g.v), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
		d, h := elementwiseInputs(rng, n), elementwiseInputs(rng, n)
		want := append([]float32(nil), d...)
		for i := range want {
			if !(h[i] > 0 || h[i] < 0 || h[i] != h[i]) {
				want[i] = 0
			}
		}
		ReLUGrad32s(d, h)
		for i := range want {
			if !sameBits(d[i], want[i]) {
				t.Fatalf("ReLUGrad32s, n = %d: entry %d (h = %v) is %v, want %v", n, i, h[i], d[i], want[i])
			}
		}
	}
}

func BenchmarkElementwise(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	x, y, dst := elementwiseInputs(rng, n), elementwiseInputs(rng, n), make([]float32, n)
	b.Run("Add32s", func(b *testing.B) {
		for b.Loop() {
			Add32s(dst, x, y)
		}
	})
	b.Run("loop", func(b *testing.B) {
		for b.Loop() {
			for i := range dst {
				dst[i] = x[i] + y[i]
			}
		}
	})
}
