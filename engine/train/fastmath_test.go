package train

import (
	"math"
	"testing"
)

// ulps returns how many float32 steps got is from the float64 value want rounded to float32.
func ulps(got float32, want float64) float64 {
	w := float32(want)
	if got == w {
		return 0
	}
	step := math.Abs(float64(math.Nextafter32(w, float32(math.Inf(1))) - w))
	return math.Abs(float64(got)-want) / step
}

// sweep calls check on every 1024th float32 in [lo, hi] (lo < 0 < hi) and on hi, stepping through the bit
// patterns of each sign.
func sweep(lo, hi float32, check func(x float32)) {
	for b := uint32(0); math.Float32frombits(b) <= hi; b += 1024 {
		check(math.Float32frombits(b))
	}
	for b := uint32(1 << 31); math.Float32frombits(b) >= lo; b += 1024 {
		check(math.Float32frombits(b))
	}
	check(hi)
}

func TestExp32(t *testing.T) {
	worst := 0.0
	sweep(-86.64, 88.72, func(x float32) {
		if u := ulps(exp32(x), math.Exp(float64(x))); u > worst {
			worst = u
			if u > 2 {
				t.Errorf("exp32(%g) = %g, want %g (%.1f ulp)", x, exp32(x), math.Exp(float64(x)), u)
			}
		}
	})
	t.Logf("exp32: worst %.2f ulp", worst)
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {89, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))},
		{-86.7, 0}, {float32(math.Inf(-1)), 0},
	} {
		if got := exp32(c.x); got != c.want {
			t.Errorf("exp32(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if nan := float32(math.NaN()); exp32(nan) == exp32(nan) {
		t.Error("exp32(NaN) is not NaN")
	}
}

func TestTanhAndSigmoid32(t *testing.T) {
	worstT, worstS := 0.0, 0.0
	sweep(-12, 12, func(x float32) {
		if u := ulps(tanhT(x), math.Tanh(float64(x))); u > worstT {
			worstT = u
			if u > 3 {
				t.Errorf("tanh32(%g) = %g, want %g (%.1f ulp)", x, tanhT(x), math.Tanh(float64(x)), u)
			}
		}
		want := 1 / (1 + math.Exp(-float64(x)))
		if u := ulps(sigmoid(x), want); u > worstS {
			worstS = u
			if u > 3 {
				t.Errorf("sigmoid(%g) = %g, want %g (%.1f ulp)", x, sigmoid(x), want, u)
			}
		}
	})
	t.Logf("tanh32: worst %.2f ulp; sigmoid: worst %.2f ulp", worstT, worstS)
	for _, c := range []struct{ x, tanh, sig float32 }{
		{0, 0, 0.5}, {100, 1, 1}, {-100, -1, 0},
		{float32(math.Inf(1)), 1, 1}, {float32(math.Inf(-1)), -1, 0},
	} {
		if got := tanhT(c.x); got != c.tanh {
			t.Errorf("tanh32(%g) = %g, want %g", c.x, got, c.tanh)
		}
		if got := sigmoid(c.x); got != c.sig {
			t.Errorf("sigmoid(%g) = %g, want %g", c.x, got, c.sig)
		}
	}
	// float64 instantiations are the math package's.
	for _, x := range []float64{-3.7, -0.2, 0, 0.4, 5} {
		if got, want := tanhT(x), math.Tanh(x); got != want {
			t.Errorf("tanhT[float64](%g) = %g, want %g", x, got, want)
		}
		if got, want := sigmoid(x), 1/(1+math.Exp(-x)); got != want {
			t.Errorf("sigmoid[float64](%g) = %g, want %g", x, got, want)
		}
	}
}

func BenchmarkGates(b *testing.B) {
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(i)/512 - 4
	}
	b.Run("fast32", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, x := range xs {
				s += sigmoid(x) + tanhT(x)
			}
		}
		sink32 = s
	})
	b.Run("math64", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, x := range xs {
				s += float32(1/(1+math.Exp(-float64(x)))) + float32(math.Tanh(float64(x)))
			}
		}
		sink32 = s
	})
}

var sink32 float32

func TestLog32(t *testing.T) {
	worst := 0.0
	check := func(x float32) {
		if u := ulps(log32(x), math.Log(float64(x))); u > worst {
			worst = u
			if u > 2 {
				t.Errorf("log32(%g) = %g, want %g (%.1f ulp)", x, log32(x), math.Log(float64(x)), u)
			}
		}
	}
	// Every 1024th positive float32, subnormals included, and near 1.
	for b := uint32(1); b < 0x7f800000; b += 1024 {
		check(math.Float32frombits(b))
	}
	for b := math.Float32bits(0.99); b <= math.Float32bits(1.01); b++ {
		check(math.Float32frombits(b))
	}
	t.Logf("log32: worst %.2f ulp", worst)
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{{1, 0}, {0, float32(math.Inf(-1))}, {inf, inf}} {
		if got := log32(c.x); got != c.want {
			t.Errorf("log32(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	for _, x := range []float32{-1, float32(math.Inf(-1)), float32(math.NaN())} {
		if got := log32(x); got == got {
			t.Errorf("log32(%g) = %g, want NaN", x, got)
		}
	}
}
