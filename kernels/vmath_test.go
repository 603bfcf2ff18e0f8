package kernels

import (
	"math"
	"testing"
)

// ulps returns how many float32 steps got is from the float64 value want
// rounded to float32.
func ulps(got float32, want float64) float64 {
	w := float32(want)
	if got == w {
		return 0
	}
	if math.IsInf(float64(w), 0) || math.IsNaN(float64(got)) {
		return math.Inf(1)
	}
	step := math.Abs(float64(math.Nextafter32(w, float32(math.Inf(1))) - w))
	return math.Abs(float64(got)-want) / step
}

// sweep returns every 1024th float32 in [lo, hi] (lo < 0 < hi) and hi,
// stepping through the bit patterns of each sign, and a few values off
// the eight-lane grid at the end so that the slice forms' tails run.
func sweep(lo, hi float32) []float32 {
	var xs []float32
	for b := uint32(0); math.Float32frombits(b) <= hi; b += 1024 {
		xs = append(xs, math.Float32frombits(b))
	}
	for b := uint32(1 << 31); math.Float32frombits(b) >= lo; b += 1024 {
		xs = append(xs, math.Float32frombits(b))
	}
	xs = append(xs, hi)
	for len(xs)%8 != 5 {
		xs = append(xs, lo/3)
	}
	return xs
}

// vmathFunc is one function in its three forms.
type vmathFunc struct {
	name   string
	scalar func(float32) float32
	slice  func(dst, x []float32)
	ref    func(float64) float64
	maxULP float64 // against ref
	// maxApart bounds the slice form's distance from the scalar one: one
	// rounding of a fused multiply-add, and for sigmoid that of e^−x again
	// in the division.
	maxApart float64
}

var vmathFuncs = []vmathFunc{
	{"exp", Exp32, Exp32s, math.Exp, 2, 1},
	{"sigmoid", Sigmoid32, Sigmoid32s, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 3, 2},
	{"tanh", Tanh32, Tanh32s, math.Tanh, 3, 1},
	{"log", Log32, Log32s, math.Log, 2, 1},
}

// sweepFor returns the inputs each function is checked on.
func sweepFor(name string) []float32 {
	switch name {
	case "exp":
		return sweep(-86.64, 88.72)
	case "log":
		var xs []float32
		// Every 1024th positive float32, subnormals included, and near 1.
		for b := uint32(1); b < 0x7f800000; b += 1024 {
			xs = append(xs, math.Float32frombits(b))
		}
		for b := math.Float32bits(0.99); b <= math.Float32bits(1.01); b++ {
			xs = append(xs, math.Float32frombits(b))
		}
		return append(xs, 2, 3, 5)
	}
	return sweep(-12, 12)
}

func TestVectorMath(t *testing.T) {
	t.Logf("assembly: %v", VectorMathAccelerated())
	for _, f := range vmathFuncs {
		xs := sweepFor(f.name)
		got := make([]float32, len(xs))
		f.slice(got, xs)
		worstS, worstV, worstSV := 0.0, 0.0, 0.0
		for i, x := range xs {
			want := f.ref(float64(x))
			s := f.scalar(x)
			if u := ulps(s, want); u > worstS {
				worstS = u
				if u > f.maxULP {
					t.Errorf("%s32(%g) = %g, want %g (%.1f ulp)", f.name, x, s, want, u)
				}
			}
			if u := ulps(got[i], want); u > worstV {
				worstV = u
				if u > f.maxULP {
					t.Errorf("%s32s at %g = %g, want %g (%.1f ulp)", f.name, x, got[i], want, u)
				}
			}
			if u := ulps(got[i], float64(s)); u > worstSV {
				worstSV = u
				if u > f.maxApart {
					t.Errorf("%s32s at %g = %g, the scalar form %g (%.1f ulp)", f.name, x, got[i], s, u)
				}
			}
		}
		t.Logf("%s: %d values, worst %.2f ulp scalar, %.2f vector, %.2f apart", f.name, len(xs), worstS, worstV, worstSV)

		// In place.
		in := append([]float32(nil), xs...)
		f.slice(in, in)
		for i := range in {
			if in[i] != got[i] {
				t.Fatalf("%s32s in place: [%d] = %g, not %g", f.name, i, in[i], got[i])
			}
		}
	}
}

// TestVectorMathSpecial puts the special values in the middle of groups of
// eight ordinary ones: the slice forms must give what the scalar forms give
// in those lanes and leave the others as they are alone.
func TestVectorMathSpecial(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	exp := func(x float32) float32 { return float32(math.Exp(float64(x))) }
	log := func(x float32) float32 { return float32(math.Log(float64(x))) }
	const tiny = math.SmallestNonzeroFloat32
	cases := map[string][]struct{ x, want float32 }{
		"exp":     {{0, 1}, {89, inf}, {inf, inf}, {-86.7, 0}, {-inf, 0}, {88.72283, exp(88.72283)}, {-86.6434, exp(-86.6434)}},
		"sigmoid": {{0, 0.5}, {100, 1}, {-100, 0}, {inf, 1}, {-inf, 0}},
		"tanh":    {{0, 0}, {100, 1}, {-100, -1}, {inf, 1}, {-inf, -1}, {9.02, 1}, {-9.02, -1}, {0.625, float32(math.Tanh(float64(float32(0.625))))}},
		"log":     {{1, 0}, {0, -inf}, {inf, inf}, {1e-40, log(1e-40)}, {tiny, log(tiny)}},
	}
	nanIn := map[string][]float32{"exp": {nan}, "sigmoid": {nan}, "tanh": {nan}, "log": {nan, -1, -inf, -1e-40}}
	for _, f := range vmathFuncs {
		var xs []float32
		var want []float32 // NaN where a NaN is wanted
		add := func(x, w float32) {
			for k := range 8 { // the value in lane k of a group of ordinary values
				for j := range 8 {
					if j == k {
						xs, want = append(xs, x), append(want, w)
					} else {
						v := float32(j+1) / 4
						xs, want = append(xs, v), append(want, f.scalar(v))
					}
				}
			}
		}
		for _, c := range cases[f.name] {
			add(c.x, c.want)
		}
		for _, x := range nanIn[f.name] {
			add(x, nan)
		}
		got := make([]float32, len(xs))
		f.slice(got, xs)
		for i := range xs {
			s := f.scalar(xs[i])
			switch {
			case want[i] != want[i]:
				if got[i] == got[i] || s == s {
					t.Errorf("%s(%g): slice %g, scalar %g, want NaN", f.name, xs[i], got[i], s)
				}
			case ulps(got[i], float64(want[i])) > f.maxULP || ulps(s, float64(want[i])) > f.maxULP:
				t.Errorf("%s(%g): slice %g, scalar %g, want %g", f.name, xs[i], got[i], s, want[i])
			}
		}
	}
}

func TestVectorMathLengths(t *testing.T) {
	for _, f := range vmathFuncs {
		for n := range 20 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i)/4 + 0.1
			}
			dst := make([]float32, n+1)
			dst[n] = 42
			f.slice(dst, x)
			for i := range n {
				if u := ulps(dst[i], float64(f.scalar(x[i]))); u > 1 {
					t.Errorf("%s32s, n = %d: [%d] = %g, scalar %g", f.name, n, i, dst[i], f.scalar(x[i]))
				}
			}
			if dst[n] != 42 {
				t.Errorf("%s32s, n = %d wrote past the input's length", f.name, n)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Exp32s with a short dst did not panic")
		}
	}()
	Exp32s(make([]float32, 3), make([]float32, 4))
}

// BenchmarkVectorMath times the slice forms against loops of the scalar
// ones on 4,096 values (the gate inputs of an LSTM step's rows).
func BenchmarkVectorMath(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i)/512 - 4
		if i%2 == 1 {
			x[i] = -x[i] + 4.5 // positive for log
		}
	}
	dst := make([]float32, len(x))
	for _, f := range vmathFuncs {
		xs := x
		if f.name == "log" {
			xs = make([]float32, len(x))
			for i, v := range x {
				xs[i] = float32(math.Abs(float64(v))) + 0.01
			}
		}
		b.Run(f.name+"/scalar", func(b *testing.B) {
			b.SetBytes(4 * int64(len(xs)))
			for range b.N {
				for i, v := range xs {
					dst[i] = f.scalar(v)
				}
			}
		})
		b.Run(f.name+"/slice", func(b *testing.B) {
			b.SetBytes(4 * int64(len(xs)))
			for range b.N {
				f.slice(dst, xs)
			}
		})
	}
}
