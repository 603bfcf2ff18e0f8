package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
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

// TestTransformFloat32 requires the float32 graph's NLSq and affine maps
// (float32 exponentials, tanh and log) to agree with the float64 ones,
// value and gradients, to a few parts in a million over raw parameters of
// several units, where the derivative's log cancels most.
func TestTransformFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tr := range []model.Transform{model.NLSq, model.Affine} {
		np := tr.NumParams()
		worst := 0.0
		for range 20000 {
			o32, o64 := make([]float32, np), make([]float64, np)
			for i := range o32 {
				o32[i] = float32(rng.NormFloat64() * 3)
				o64[i] = float64(o32[i])
			}
			w := float64(float32(rng.NormFloat64() * 2))
			du, dl := rng.NormFloat64(), rng.NormFloat64()
			u32, ld32 := transformForward(tr, o32, w)
			u64, ld64 := transformForward(tr, o64, w)
			d32, d64 := make([]float32, np), make([]float64, np)
			dw32 := transformBackward(tr, d32, o32, w, du, dl)
			dw64 := transformBackward(tr, d64, o64, w, du, dl)
			got := []float64{u32, ld32, dw32}
			want := []float64{u64, ld64, dw64}
			for i := range d32 {
				got, want = append(got, float64(d32[i])), append(want, d64[i])
			}
			for i := range got {
				e := math.Abs(got[i]-want[i]) / (1 + math.Abs(want[i]))
				worst = max(worst, e)
				if !(e < 5e-5) {
					t.Fatalf("%v, o = %v, w = %v: output %d is %v in float32, %v in float64", tr, o64, w, i, got[i], want[i])
				}
			}
		}
		t.Logf("%v: worst relative difference %.2g", tr, worst)
	}
}

// TestNLSqRows32 checks the batched float32 NLSq of the coupling op's loops
// against transformForward and transformBackward scalar by scalar, for a
// row width that fills nlsqChunk and one that does not, on row ranges that
// start and end inside a chunk.
func TestNLSqRows32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, half := range []int{20, 3, nlsqChunk} {
		const N = 61
		o := make([]float32, N*half*5)
		w := make([]float32, N*half)
		dOut := make([]float32, N*(half+1))
		for i := range o {
			o[i] = float32(rng.NormFloat64() * 3)
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 2)
		}
		for i := range dOut {
			dOut[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, N*(half+1))
		dw, do := make([]float32, N*half), make([]float32, N*half*5)
		lo, hi := 2, N-1
		nlsqForwardRows32(out, o, w, half, lo, hi)
		nlsqBackwardRows32(dw, do, o, w, dOut, half, lo, hi)
		close := func(what string, got float32, want float64) {
			t.Helper()
			if e := math.Abs(float64(got)-want) / (1 + math.Abs(want)); !(e < 2e-5) {
				t.Fatalf("half %d: %s = %v, the scalar loop %v", half, what, got, want)
			}
		}
		for r := range N {
			if r < lo || r >= hi {
				if out[r*(half+1)] != 0 || dw[r*half] != 0 {
					t.Fatalf("half %d: row %d outside [%d, %d) written", half, r, lo, hi)
				}
				continue
			}
			var ld float64
			for i := range half {
				k := r*half + i
				u, l := transformForward(model.NLSq, o[k*5:][:5], float64(w[k]))
				ld += l
				close("u", out[r*(half+1)+i], float64(float32(u)))
				d := make([]float32, 5)
				g := transformBackward(model.NLSq, d, o[k*5:][:5], float64(w[k]), float64(dOut[r*(half+1)+i]), float64(dOut[r*(half+1)+half]))
				close("dw", dw[k], float64(float32(g)))
				for j := range d {
					close("do", do[k*5+j], float64(d[j]))
				}
			}
			close("log-det", out[r*(half+1)+half], float64(float32(ld)))
		}
	}
}
