package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randRaw draws five raw NLSq outputs with scale s; s = 8 reaches the
// saturated corners (b, d up to e^±3.2, tanh(0.3·o2) at ±1).
func randRaw(rng *rand.Rand, s float64) []float32 {
	raw := make([]float32, NLSqParams)
	for i := range raw {
		raw[i] = float32(s * rng.NormFloat64())
	}
	return raw
}

// The float64 scalar pair must invert each other to near machine precision
// over typical and extreme parameters, including the saturated c = ±c_max
// corners where du/dw comes closest to 0.
func TestNLSqInverse64RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const tol = 1e-9 // absolute + relative, see below
	worst := 0.0
	for iter := 0; iter < 200000; iter++ {
		scale := []float64{0.1, 1, 3, 8}[iter%4]
		raw := randRaw(rng, scale)
		if iter%7 == 0 {
			raw[2] = float32(math.Copysign(40, rng.NormFloat64())) // tanh saturates
		}
		a, b, c, d, f := NLSqPseudo(raw)
		w := []float64{rng.NormFloat64(), 10 * rng.NormFloat64(), 100 * rng.NormFloat64()}[iter%3]
		u, ld := NLSqForward64(w, a, b, c, d, f)
		got, ld2 := NLSqInverse64(u, a, b, c, d, f)
		// The error a perfect solver makes is about eps·|u|/(du/dw).
		scaleErr := (1 + math.Abs(u)) / math.Exp(ld)
		err := math.Abs(got-w) / scaleErr
		if err > worst {
			worst = err
		}
		if !(err <= tol) || math.Abs(ld-ld2) > 1e-6*(1+math.Abs(ld)) {
			t.Fatalf("iter %d raw %v (a=%g b=%g c=%g d=%g f=%g): w=%.17g u=%.17g inverse %.17g (err %.3g in units of |u|/u'), logdet %g vs %g",
				iter, raw, a, b, c, d, f, w, u, got, err, ld, ld2)
		}
	}
	t.Logf("worst |w'−w|·u'/(1+|u|) = %.3g", worst)
}

// The float32 slice kernels round u and w to float32, so the round trip is
// exact to a few float32 ulps of u divided by du/dw.
func TestNLSqSliceRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{1, 3, 20, 257} {
		w := make([]float32, n)
		raw := make([]float32, n*NLSqParams)
		for i := range w {
			w[i] = float32(3 * rng.NormFloat64())
		}
		for i := range raw {
			raw[i] = float32(2 * rng.NormFloat64())
		}
		wIn := append([]float32(nil), w...)
		rawIn := append([]float32(nil), raw...)
		u := make([]float32, n)
		ldF := NLSqForwardTo(u, w, raw, n)
		back := make([]float32, n)
		ldI := NLSqInverseTo(back, u, raw, n)
		solved := make([]float32, n)
		NLSqSolveTo(solved, u, raw, n)
		for i := range solved {
			if solved[i] != back[i] {
				t.Fatalf("n=%d i=%d: NLSqSolveTo %g, NLSqInverseTo %g", n, i, solved[i], back[i])
			}
		}
		for i := range w {
			a, b, c, d, f := NLSqPseudo(raw[i*5 : i*5+5])
			_, ld := NLSqForward64(float64(w[i]), a, b, c, d, f)
			tol := 4 * 6e-8 * (1 + math.Abs(float64(u[i]))) / math.Exp(ld)
			if diff := math.Abs(float64(back[i] - w[i])); diff > tol {
				t.Fatalf("n=%d i=%d: w=%g u=%g back=%g, diff %g > tol %g", n, i, w[i], u[i], back[i], diff, tol)
			}
		}
		if math.Abs(ldF-ldI) > 1e-4*(1+math.Abs(ldF)) {
			t.Fatalf("n=%d: forward logdet %g, inverse logdet %g", n, ldF, ldI)
		}
		for i := range w {
			if w[i] != wIn[i] {
				t.Fatal("NLSqForwardTo modified its input w")
			}
		}
		for i := range raw {
			if raw[i] != rawIn[i] {
				t.Fatal("NLSq kernels modified raw")
			}
		}
		// In place.
		inPlace := append([]float32(nil), u...)
		NLSqInverseTo(inPlace, inPlace, raw, n)
		for i := range back {
			if inPlace[i] != back[i] {
				t.Fatalf("in-place inverse differs at %d: %g vs %g", i, inPlace[i], back[i])
			}
		}
	}
}

// log(du/dw) must match a central finite difference of the forward map.
func TestNLSqLogDetFiniteDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for iter := 0; iter < 20000; iter++ {
		a, b, c, d, f := NLSqPseudo(randRaw(rng, []float64{0.5, 2, 5}[iter%3]))
		w := 3 * rng.NormFloat64()
		_, ld := NLSqForward64(w, a, b, c, d, f)
		h := 1e-6 * (1 + math.Abs(w))
		up, _ := NLSqForward64(w+h, a, b, c, d, f)
		um, _ := NLSqForward64(w-h, a, b, c, d, f)
		fd := (up - um) / (2 * h)
		deriv := math.Exp(ld)
		// Central differences are accurate to O(h²·u''') plus rounding
		// eps·|u|/h; both are far below the tolerance for these scales.
		if diff := math.Abs(fd - deriv); diff > 1e-6*(1+math.Abs(deriv))+1e-9*(1+math.Abs(up))/h {
			t.Fatalf("iter %d (a=%g b=%g c=%g d=%g f=%g, w=%g): du/dw = %.12g, finite difference %.12g",
				iter, a, b, c, d, f, w, deriv, fd)
		}
		if deriv <= 0 {
			t.Fatalf("iter %d: du/dw = %g is not positive; the map must be monotone", iter, deriv)
		}
	}
}

// The q = 0 and p = 0 corners of the cubic must not produce NaN.
func TestNLSqInverseCorners(t *testing.T) {
	// c = 0 makes the map affine: u = a + b·w.
	w, _ := NLSqInverse64(5, 1, 2, 0, 1, 0)
	if math.Abs(w-2) > 1e-12 {
		t.Fatalf("affine case: w = %g, want 2", w)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 1000; i++ {
		a, b, c, d, f := NLSqPseudo(randRaw(rng, 1))
		// u such that the solution is exactly at the inflection −f/d.
		w0 := -f / d
		u, _ := NLSqForward64(w0, a, b, c, d, f)
		got, ld := NLSqInverse64(u, a, b, c, d, f)
		if math.IsNaN(got) || math.IsNaN(ld) || math.Abs(got-w0) > 1e-6*(1+math.Abs(w0)) {
			t.Fatalf("inflection point: got %g want %g (ld %g)", got, w0, ld)
		}
	}
}

func TestAffineRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n := 33
	w := make([]float32, n)
	raw := make([]float32, n*AffineParams)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for i := range raw {
		raw[i] = float32(rng.NormFloat64())
	}
	u := make([]float32, n)
	ld := AffineForwardTo(u, w, raw, n)
	back := make([]float32, n)
	ld2 := AffineInverseTo(back, u, raw, n)
	if ld != ld2 {
		t.Fatalf("logdet %g vs %g", ld, ld2)
	}
	for i := range w {
		if d := math.Abs(float64(back[i] - w[i])); d > 1e-6*(1+math.Abs(float64(w[i]))) {
			t.Fatalf("i=%d: %g vs %g", i, back[i], w[i])
		}
	}
}

// BenchmarkNLSqInverse solves 1,000 scalars: with the log-determinant (NLSqInverseTo, the Go loop) and without
// (NLSqSolveTo, the decoder's, on the assembly where it runs).
func BenchmarkNLSqInverse(b *testing.B) {
	rng := rand.New(rand.NewPCG(6, 6))
	const n = 1000
	u := make([]float32, n)
	raw := make([]float32, n*NLSqParams)
	for i := range u {
		u[i] = float32(rng.NormFloat64())
	}
	for i := range raw {
		raw[i] = float32(rng.NormFloat64())
	}
	dst := make([]float32, n)
	b.Run("logdet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NLSqInverseTo(dst, u, raw, n)
		}
	})
	b.Run("solve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NLSqSolveTo(dst, u, raw, n)
		}
	})
}

// TestNLSqLogA: the constant's digits are log(8√3/9 − 0.05) in float64, bit for bit.
func TestNLSqLogA(t *testing.T) {
	if want := math.Log(8*math.Sqrt(3)/9 - 0.05); NLSqLogA != want {
		t.Errorf("NLSqLogA = %v, want %v", NLSqLogA, want)
	}
}

// nlsqSolveHyperbolic is the reference's closed form as it is written (flows.py, NLSq.standard), with the
// hyperbolic functions, on the same depressed cubic: the float64 oracle for nlsqSolve's cube roots.
func nlsqSolveHyperbolic(u, a, b, c, d, f float64) float64 {
	p, q, shift := nlsqDepressed(u, a, b, c, d, f)
	var t float64
	switch {
	case p > 0:
		t = -2 * math.Sqrt(p/3) * math.Sinh(math.Asinh((3*q/(2*p))*math.Sqrt(3/p))/3)
	case p < 0:
		ap := -p
		arg := (-3*math.Abs(q)/(2*p))*math.Sqrt(3/ap) - 1
		t = -2 * sign(q) * math.Sqrt(ap/3) * math.Cosh(math.Acosh(math.Abs(arg)+1)/3)
	default:
		t = -math.Cbrt(q)
	}
	return t + shift
}

// TestNLSqSolveMatchesHyperbolic holds the cube-root form of the solve to the reference's hyperbolic one: the
// helpers satisfy the triple-angle identities sinh 3θ = 4 sinh³θ + 3 sinh θ and cosh 3θ = 4 cosh³θ − 3 cosh θ
// to a few ulps over their whole range (the series' switch included), where the hyperbolic form loses digits
// for large arguments; and over the round trip's parameters the solve recovers w at least as well as the
// hyperbolic form does (TestNLSqInverse64RoundTrip's units).
func TestNLSqSolveMatchesHyperbolic(t *testing.T) {
	const eps = 0x1p-52
	for _, x := range []float64{0, 1e-300, 1e-8, 0x1p-10 * (1 - 1e-15), 0x1p-10, 0x1p-10 * (1 + 1e-15), 1e-3, 0.1, 1, 7,
		1e3, 1e8, 1e150, 0x1p500, 1e200, 1e300} {
		for _, sx := range []float64{x, -x} {
			y := sinhThirdAsinh(sx)
			if r := 4*y*y*y + 3*y; math.Abs(r-sx) > 8*eps*math.Abs(sx) || math.Signbit(y) != math.Signbit(sx) {
				t.Errorf("sinhThirdAsinh(%g) = %.17g: 4y³+3y = %.17g", sx, y, r)
			}
			if want := math.Sinh(math.Asinh(sx) / 3); math.Abs(y-want) > 1e-12*math.Abs(want) {
				t.Errorf("sinhThirdAsinh(%g) = %.17g, hyperbolic form %.17g", sx, y, want)
			}
		}
		x1 := 1 + x
		y := coshThirdAcosh(x1)
		if r := 4*y*y*y - 3*y; math.Abs(r-x1) > 8*eps*(4*y*y*y) {
			t.Errorf("coshThirdAcosh(%g) = %.17g: 4y³−3y = %.17g", x1, y, r)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for iter := range 200000 {
		raw := randRaw(rng, []float64{0.1, 1, 3, 8}[iter%4])
		a, b, c, d, f := NLSqPseudo(raw)
		w := []float64{rng.NormFloat64(), 10 * rng.NormFloat64(), 100 * rng.NormFloat64()}[iter%3]
		u, ld := NLSqForward64(w, a, b, c, d, f)
		scale := (1 + math.Abs(u)) / math.Exp(ld)
		got, hyp := nlsqSolve(u, a, b, c, d, f), nlsqSolveHyperbolic(u, a, b, c, d, f)
		if e, eh := math.Abs(got-w)/scale, math.Abs(hyp-w)/scale; e > eh+1e-12 {
			t.Fatalf("iter %d (a=%g b=%g c=%g d=%g f=%g, w=%.17g): %.17g (error %.3g), hyperbolic form %.17g (%.3g)",
				iter, a, b, c, d, f, w, got, e, hyp, eh)
		}
	}
}

// NLSqSolveTo's vector path must give nlsqSolve's roots (NLSqInverseTo, which solves every root in Go) bit for bit, over typical and extreme parameters, the
// corners where nlsqSolve takes another branch (u = a, c = 0, NaN, ±Inf, huge u) mixed into groups of ordinary
// lanes, lengths that are not multiples of four or of the batch, and in place.
func TestNLSqSolveToMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 3, 4, 7, 64, 65, 130, 1001} {
		for rep := range 20 {
			u := make([]float32, n)
			raw := make([]float32, n*NLSqParams)
			for i := range u {
				copy(raw[i*NLSqParams:], randRaw(rng, []float64{0.1, 1, 3, 8}[(i+rep)%4]))
				u[i] = float32([]float64{1, 10, 1e3, 0.01}[(i*3+rep)%4] * rng.NormFloat64())
				switch rng.IntN(40) {
				case 0:
					u[i] = raw[i*NLSqParams] // u = a
				case 1:
					raw[i*NLSqParams+2] = 0 // c = 0
				case 2:
					u[i] = float32(math.NaN())
				case 3:
					u[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 4:
					u[i] = float32(1e38 * rng.NormFloat64())
				case 5:
					raw[i*NLSqParams+1] = -300 // b underflows to 0
				}
			}
			want := make([]float32, n)
			NLSqInverseTo(want, u, raw, n) // the scalar loop, nlsqSolve for every root
			got := make([]float32, n)
			NLSqSolveTo(got, u, raw, n)
			inPlace := append([]float32(nil), u...)
			NLSqSolveTo(inPlace, inPlace, raw, n)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					a, b, c, d, f := NLSqPseudo(raw[i*NLSqParams : (i+1)*NLSqParams])
					t.Fatalf("n=%d rep %d i=%d: u=%g (a=%g b=%g c=%g d=%g f=%g): NLSqSolveTo %g (in place %g), nlsqSolve %g",
						n, rep, i, u[i], a, b, c, d, f, got[i], inPlace[i], want[i])
				}
			}
		}
	}
}

// Over a million ordinary scalars the vector path's roots are nlsqSolve's, bit for bit: a float64 root that
// differs in its last bits changes the float32 root of about one scalar in a million.
func TestNLSqSolveToMatchesScalarMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const n = 1 << 20
	u := make([]float32, n)
	raw := make([]float32, n*NLSqParams)
	for i := range u {
		u[i] = float32(3 * rng.NormFloat64())
		copy(raw[i*NLSqParams:], randRaw(rng, 2))
	}
	got, want := make([]float32, n), make([]float32, n)
	NLSqSolveTo(got, u, raw, n)
	NLSqInverseTo(want, u, raw, n) // the scalar loop, nlsqSolve for every root
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("scalar %d: u=%g: NLSqSolveTo %g, nlsqSolve %g", i, u[i], got[i], want[i])
		}
	}
}

// The vector path must do the ordinary lanes itself: a test of the fallback alone would pass with it broken.
func TestNLSqSolveVecFallbackRare(t *testing.T) {
	if !VectorMathAccelerated() { // the same test as the assembly's (AVX2 and FMA)
		t.Skip("no AVX2 and FMA: NLSqSolveTo solves every scalar in Go")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	var p nlsqPseudos
	u, dst := make([]float32, nlsqBatch), make([]float32, nlsqBatch)
	raw := make([]float32, nlsqBatch*NLSqParams)
	fell := 0
	const batches = 200
	for range batches {
		for i := range u {
			u[i] = float32(3 * rng.NormFloat64())
			copy(raw[i*NLSqParams:], randRaw(rng, 2))
		}
		p.set(raw, nlsqBatch)
		done, fallback := nlsqSolveVec(dst, u, &p, nlsqBatch)
		if done != nlsqBatch {
			t.Fatalf("the assembly did %d of %d scalars", done, nlsqBatch)
		}
		for ; fallback != 0; fallback &= fallback - 1 {
			fell++
		}
	}
	if fell > batches*nlsqBatch/100 {
		t.Fatalf("%d of %d ordinary scalars fell back to Go", fell, batches*nlsqBatch)
	}
}
