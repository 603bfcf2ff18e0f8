package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNLSqGrad32sMatchesScalar holds the batched gradient to NLSqGrad, bit
// for bit, at lengths around the four-lane grid.
func TestNLSqGrad32sMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for n := 0; n <= 21; n++ {
		in := make([]float32, 8*n)
		for j := range n {
			o1, o2, o3 := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
			in[j] = float32(math.Exp(0.4 * o1))
			in[n+j] = float32(math.Exp(0.4 * o3))
			in[2*n+j] = float32(math.Exp(NLSqLogA + 0.4*o1 - 0.4*o3))
			in[3*n+j] = float32(math.Tanh(0.3 * o2))
			for c := 4; c < 8; c++ {
				in[c*n+j] = float32(rng.NormFloat64() * 2)
			}
		}
		out := make([]float32, 5*n)
		NLSqGrad32s(out, in, n)
		for j := range n {
			v := func(c int) float64 { return float64(in[c*n+j]) }
			d1, d2, d3, d4, dw := NLSqGrad(v(0), v(1), v(3), v(2), v(4), v(5), v(6), v(7))
			for c, want := range [...]float64{d1, d2, d3, d4, dw} {
				if got := out[c*n+j]; math.Float32bits(got) != math.Float32bits(float32(want)) {
					t.Fatalf("n = %d, scalar %d, output %d: %v, want %v", n, j, c, got, float32(want))
				}
			}
		}
	}
}

// TestNLSqGradFiniteDifferences checks NLSqGrad against central differences
// of du·u(w) + dl·log u′(w) in the raw outputs and w.
func TestNLSqGradFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	obj := func(o [5]float64, w, du, dl float64) float64 {
		b, d := math.Exp(0.4*o[1]), math.Exp(0.4*o[3])
		c := math.Tanh(0.3*o[2]) * math.Exp(NLSqLogA+0.4*o[1]-0.4*o[3])
		s := d*w + o[4]
		u := o[0] + b*w + c/(1+s*s)
		D := b - 2*c*d*s/((1+s*s)*(1+s*s))
		return du*u + dl*math.Log(D)
	}
	for range 50 {
		var o [5]float64
		for i := range o {
			o[i] = rng.NormFloat64()
		}
		w, du, dl := rng.NormFloat64()*2, rng.NormFloat64(), rng.NormFloat64()
		b, d := math.Exp(0.4*o[1]), math.Exp(0.4*o[3])
		th, E := math.Tanh(0.3*o[2]), math.Exp(NLSqLogA+0.4*o[1]-0.4*o[3])
		d1, d2, d3, d4, dw := NLSqGrad(b, d, th, E, o[4], w, du, dl)
		const h = 1e-6
		for i, got := range [...]float64{d1, d2, d3, d4} {
			p, m := o, o
			p[i+1] += h
			m[i+1] -= h
			want := (obj(p, w, du, dl) - obj(m, w, du, dl)) / (2 * h)
			if math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("∂/∂o%d = %g, finite difference %g (o = %v, w = %g)", i+1, got, want, o, w)
			}
		}
		want := (obj(o, w+h, du, dl) - obj(o, w-h, du, dl)) / (2 * h)
		if math.Abs(dw-want) > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("∂/∂w = %g, finite difference %g", dw, want)
		}
	}
}
