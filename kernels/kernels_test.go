package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// naiveDense is the float64 oracle for DenseTo.
func naiveDense(x, w, b []float32, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for i := 0; i < n; i++ {
		for j := 0; j < out; j++ {
			s := 0.0
			if b != nil {
				s = float64(b[j])
			}
			for k := 0; k < in; k++ {
				s += float64(x[i*in+k]) * float64(w[k*out+j])
			}
			y[i*out+j] = s
		}
	}
	return y
}

func TestDenseTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{1, 1, 1}, {1, 7, 3}, {5, 1, 4}, {17, 33, 9}, {64, 100, 100}} {
		n, in, out := sz[0], sz[1], sz[2]
		x, w, b := randSlice(rng, n*in), randSlice(rng, in*out), randSlice(rng, out)
		for _, bias := range [][]float32{b, nil} {
			dst := make([]float32, n*out)
			for i := range dst {
				dst[i] = float32(math.NaN()) // a dirty destination must not leak through
			}
			DenseTo(dst, x, w, bias, n, in, out)
			want := naiveDense(x, w, bias, n, in, out)
			for i := range dst {
				// float32 accumulation over in terms of N(0,1) products.
				tol := 1e-5 * (1 + math.Sqrt(float64(in)))
				if math.Abs(float64(dst[i])-want[i]) > tol {
					t.Fatalf("n=%d in=%d out=%d bias=%v: [%d] = %g, want %g", n, in, out, bias != nil, i, dst[i], want[i])
				}
			}
		}
	}
}

func TestLSTMStepTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 4}, {8, 13, 16}} {
		n, in, hid := sz[0], sz[1], sz[2]
		x, wx := randSlice(rng, n*in), randSlice(rng, in*4*hid)
		hp, wh, cp := randSlice(rng, n*hid), randSlice(rng, hid*4*hid), randSlice(rng, n*hid)
		bias := randSlice(rng, 4*hid)
		h, c, g := make([]float32, n*hid), make([]float32, n*hid), make([]float32, n*4*hid)
		LSTMStepTo(h, c, g, x, wx, hp, wh, cp, bias, n, in, hid)
		gx := naiveDense(x, wx, bias, n, in, 4*hid)
		gh := naiveDense(hp, wh, nil, n, hid, 4*hid)
		sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
		for r := 0; r < n; r++ {
			for j := 0; j < hid; j++ {
				at := func(k int) float64 { return gx[r*4*hid+k*hid+j] + gh[r*4*hid+k*hid+j] }
				cw := sig(at(1))*float64(cp[r*hid+j]) + sig(at(0))*math.Tanh(at(2))
				hw := sig(at(3)) * math.Tanh(cw)
				if math.Abs(cw-float64(c[r*hid+j])) > 1e-5 || math.Abs(hw-float64(h[r*hid+j])) > 1e-5 {
					t.Fatalf("n=%d in=%d H=%d row %d unit %d: h %g c %g, want %g %g", n, in, hid, r, j, h[r*hid+j], c[r*hid+j], hw, cw)
				}
			}
		}
		// In place: h over hPrev and c over cPrev give the same result.
		h2, c2 := append([]float32(nil), hp...), append([]float32(nil), cp...)
		LSTMStepTo(h2, c2, g, x, wx, h2, wh, c2, bias, n, in, hid)
		for i := range h {
			if h2[i] != h[i] || c2[i] != c[i] {
				t.Fatalf("in-place step differs at %d", i)
			}
		}
	}
}

func TestNearestCosineTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const v, f, n = 30, 8, 50
	e := randSlice(rng, v*f)
	unit := make([]float32, v*f)
	NormalizeRowsTo(unit, e, v, f)
	x := make([]float32, n*f)
	want := make([]int, n)
	for i := 0; i < n; i++ {
		want[i] = rng.IntN(v)
		s := float32(0.1 + 5*rng.Float64()) // cosine is scale-invariant
		for k := 0; k < f; k++ {
			x[i*f+k] = s*unit[want[i]*f+k] + float32(0.01*rng.NormFloat64())
		}
	}
	// A zero row and a NaN row decode to 0, as in the reference.
	clear(x[0:f])
	want[0] = 0
	x[f] = float32(math.NaN())
	want[1] = 0
	got := make([]int, n)
	NearestCosineTo(got, x, unit, make([]float32, n*v), n, f, v)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d: got %d, want %d", i, got[i], want[i])
		}
	}
}

func TestShapePanics(t *testing.T) {
	cases := map[string]func(){
		"DenseTo":         func() { DenseTo(make([]float32, 5), make([]float32, 6), make([]float32, 6), nil, 2, 3, 3) },
		"MulAddTo":        func() { MulAddTo(make([]float32, 6), make([]float32, 5), make([]float32, 9), 2, 3, 3) },
		"LSTMStepTo":      func() { LSTMStepTo(nil, nil, nil, nil, nil, nil, nil, nil, nil, 1, 1, 1) },
		"NLSqForwardTo":   func() { NLSqForwardTo(make([]float32, 2), make([]float32, 2), make([]float32, 9), 2) },
		"NLSqInverseTo":   func() { NLSqInverseTo(make([]float32, 1), make([]float32, 2), make([]float32, 10), 2) },
		"NLSqSolveTo":     func() { NLSqSolveTo(make([]float32, 1), make([]float32, 2), make([]float32, 10), 2) },
		"AffineForwardTo": func() { AffineForwardTo(make([]float32, 2), make([]float32, 2), make([]float32, 3), 2) },
		"NearestCosineTo": func() {
			NearestCosineTo(make([]int, 1), make([]float32, 4), make([]float32, 8), make([]float32, 1), 1, 4, 2)
		},
	}
	for name, fn := range cases {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "kernels: "+name) {
					t.Errorf("%s: panic %v, want a \"kernels: %s\" message", name, r, name)
				}
			}()
			fn()
		}()
	}
}

func TestKernelsDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, in, hid = 4, 6, 8
	x, wx := randSlice(rng, n*in), randSlice(rng, in*4*hid)
	hp, wh, cp, bias := randSlice(rng, n*hid), randSlice(rng, hid*4*hid), randSlice(rng, n*hid), randSlice(rng, 4*hid)
	h, c, g := make([]float32, n*hid), make([]float32, n*hid), make([]float32, n*4*hid)
	raw := randSlice(rng, n*NLSqParams)
	u := make([]float32, n)
	ids := make([]int, n)
	scores := make([]float32, n*hid)
	allocs := testing.AllocsPerRun(10, func() {
		LSTMStepTo(h, c, g, x, wx, hp, wh, cp, bias, n, in, hid)
		NLSqForwardTo(u, x, raw, n)
		NLSqInverseTo(u, u, raw, n)
		NearestCosineTo(ids, hp, hp, scores, n, hid, n)
	})
	if allocs != 0 {
		t.Fatalf("kernels allocated %g times per run", allocs)
	}
}
