package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// f64 returns x in float64.
func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// checkClose fails t at the first entry of got off want by more than
// abs + rel·|want|.
func checkClose(t *testing.T, what string, got []float32, want []float64, abs, rel float64) {
	t.Helper()
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); !(d <= abs+rel*math.Abs(w)) {
			t.Fatalf("%s[%d] = %.9g, float64 reference %.9g", what, i, got[i], w)
		}
	}
}

// lstmCellRef64 is the float64 reference of LSTMCellForward32.
func lstmCellRef64(act, cPrev, bias []float64, n, H int, biasPerRow bool) (a, c, tc, h []float64) {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	a, c, tc, h = make([]float64, n*4*H), make([]float64, n*H), make([]float64, n*H), make([]float64, n*H)
	for r := range n {
		b := bias[:4*H]
		if biasPerRow {
			b = bias[r*4*H:]
		}
		for u := range H {
			k := r * 4 * H
			i, f := sig(act[k+u]+b[u]), sig(act[k+H+u]+b[H+u])
			g, o := math.Tanh(act[k+2*H+u]+b[2*H+u]), sig(act[k+3*H+u]+b[3*H+u])
			a[k+u], a[k+H+u], a[k+2*H+u], a[k+3*H+u] = i, f, g, o
			c[r*H+u] = f*cPrev[r*H+u] + i*g
			tc[r*H+u] = math.Tanh(c[r*H+u])
			h[r*H+u] = o * tc[r*H+u]
		}
	}
	return a, c, tc, h
}

// LSTMCellForward32 against its float64 reference, with one bias row and
// a row each, and with c aliasing cPrev.
func TestLSTMCellForward32(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sz := range [][2]int{{1, 1}, {3, 7}, {5, 20}} {
		n, H := sz[0], sz[1]
		for _, perRow := range []bool{false, true} {
			for _, alias := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/H=%d/perRow=%v/alias=%v", n, H, perRow, alias), func(t *testing.T) {
					act, cPrev := randSlice(rng, n*4*H), randSlice(rng, n*H)
					bias := randSlice(rng, 4*H)
					if perRow {
						bias = randSlice(rng, n*4*H)
					}
					wa, wc, wtc, wh := lstmCellRef64(f64(act), f64(cPrev), f64(bias), n, H, perRow)
					c, tc, h := make([]float32, n*H), make([]float32, n*H), make([]float32, n*H)
					if alias {
						c = cPrev
					}
					LSTMCellForward32(act, c, tc, h, cPrev, bias, n, H, perRow)
					// float32 exp and tanh: a few units in the last place.
					const abs, rel = 1e-6, 1e-5
					checkClose(t, "act", act, wa, abs, rel)
					checkClose(t, "c", c, wc, abs, rel)
					checkClose(t, "tc", tc, wtc, abs, rel)
					checkClose(t, "h", h, wh, abs, rel)
				})
			}
		}
	}
}

// centralDiff returns the central difference of f at x[i] with step h.
func centralDiff(f func([]float64) float64, x []float64, i int, h float64) float64 {
	orig := x[i]
	x[i] = orig + h
	up := f(x)
	x[i] = orig - h
	down := f(x)
	x[i] = orig
	return (up - down) / (2 * h)
}

// NormalizeRowsGradTo against central differences of the float64
// normalisation, with a zero row.
func TestNormalizeRowsGradTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const r, c = 4, 5
	x, dy := randSlice(rng, r*c), randSlice(rng, r*c)
	clear(x[2*c : 3*c])
	dx := make([]float32, r*c)
	NormalizeRowsGradTo(dx, dy, x, r, c)
	loss := func(x []float64) float64 { // Σ dy·x/‖x‖ by rows
		var s float64
		for i := range r {
			var ss float64
			for _, v := range x[i*c : (i+1)*c] {
				ss += v * v
			}
			if ss == 0 {
				continue
			}
			for j, v := range x[i*c : (i+1)*c] {
				s += float64(dy[i*c+j]) * v / math.Sqrt(ss)
			}
		}
		return s
	}
	x64 := f64(x)
	want := make([]float64, r*c)
	for i := range want {
		if i/c != 2 { // the zero row's difference quotient is not its gradient
			want[i] = centralDiff(loss, x64, i, 1e-6)
		}
	}
	checkClose(t, "dx", dx, want, 1e-6, 1e-5)
}

// simRef64 is the float64 reference of SimilarityTo for one row.
func simRef64(v, ex, ej []float64) float64 {
	var ss, p, q float64
	for i := range v {
		ss += v[i] * v[i]
		p += v[i] * ex[i]
		q += v[i] * ej[i]
	}
	n := math.Sqrt(ss)
	return 1 - p/n + math.Max(0, q/n)
}

// SimilarityTo against its float64 reference, and SimilarityGradTo against
// central differences of Σ_r coef_r·sim_r + Σ dv·v in ex and ej, v = ex +
// ε: rows with a negative on either side of the ReLU's kink and one
// without (a zero ej).
func TestSimilarity(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const n, f = 4, 6
	unit := func() []float32 {
		x := randSlice(rng, f)
		NormalizeRowsTo(x, x, 1, f)
		return x
	}
	var ex, ej []float32
	for r := range n {
		ex = append(ex, unit()...)
		e := unit()
		if r == 3 {
			clear(e)
		}
		ej = append(ej, e...)
	}
	eps := randSlice(rng, n*f)
	for i := range eps {
		eps[i] *= 0.3
	}
	dv, coef := randSlice(rng, n*f), randSlice(rng, n)
	v := make([]float32, n*f)
	Add32s(v, ex, eps)
	sim := make([]float32, n)
	SimilarityTo(sim, v, ex, ej, n, f)
	want := make([]float64, n)
	for r := range n {
		want[r] = simRef64(f64(v[r*f:(r+1)*f]), f64(ex[r*f:(r+1)*f]), f64(ej[r*f:(r+1)*f]))
	}
	checkClose(t, "sim", sim, want, 1e-6, 1e-6)

	dex, dej := make([]float32, n*f), make([]float32, n*f)
	SimilarityGradTo(dex, dej, dv, v, ex, ej, coef, n, f)
	// The loss as a function of (ex, ej), concatenated.
	loss := func(e []float64) float64 {
		var s float64
		for r := range n {
			x, j := e[r*f:(r+1)*f], e[n*f+r*f:n*f+(r+1)*f]
			vr := make([]float64, f)
			for i := range vr {
				vr[i] = x[i] + float64(eps[r*f+i])
				s += float64(dv[r*f+i]) * vr[i]
			}
			s += float64(coef[r]) * simRef64(vr, x, j)
		}
		return s
	}
	e := append(f64(ex), f64(ej)...)
	wantX, wantJ := make([]float64, n*f), make([]float64, n*f)
	for i := range e {
		d := centralDiff(loss, e, i, 1e-6)
		if i >= n*f+3*f { // the row without a negative sits on the ReLU's kink, whose gradient is taken as 0
			d = 0
		}
		if i < n*f {
			wantX[i] = d
		} else {
			wantJ[i-n*f] = d
		}
	}
	checkClose(t, "dex", dex, wantX, 1e-5, 1e-5)
	checkClose(t, "dej", dej, wantJ, 1e-5, 1e-5)
	// dex may alias dv.
	SimilarityGradTo(dv, dej, dv, v, ex, ej, coef, n, f)
	for i := range dv {
		if dv[i] != dex[i] {
			t.Fatalf("aliased dex[%d] = %v, unaliased %v", i, dv[i], dex[i])
		}
	}
}

// GaussNLLTo and ScaleRowsTo against float64 references.
func TestGaussNLL(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const n, f = 3, 5
	y, ld, s := randSlice(rng, n*f), randSlice(rng, n), randSlice(rng, n)
	nll := make([]float32, n)
	GaussNLLTo(nll, y, ld, n, f)
	want := make([]float64, n)
	for r := range n {
		var ss float64
		for _, v := range y[r*f : (r+1)*f] {
			ss += float64(v) * float64(v)
		}
		want[r] = 0.5*ss + 0.5*f*math.Log(2*math.Pi) - float64(ld[r])
	}
	checkClose(t, "nll", nll, want, 1e-6, 1e-6)
	dy := make([]float32, n*f)
	ScaleRowsTo(dy, y, s, n, f)
	wantDy := make([]float64, n*f)
	for i := range wantDy {
		wantDy[i] = float64(s[i/f]) * float64(y[i])
	}
	checkClose(t, "dy", dy, wantDy, 0, 1e-7)
}
