package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmPartsMatchesOneCall requires a product split into row or column
// blocks of C (gemmParts) to equal the product computed in float64 from its
// definition, as one BLAS call does, to the rounding a k-term dot product
// may carry (k·ε·Σ|a·b| per entry), for every transpose, both dtypes,
// accumulating (beta = 1) and not, at shapes whose split points do not fall
// on whole tiles. A block at a wrong offset gives errors of the entries' own
// size, far above the bound.
func TestGemmPartsMatchesOneCall(t *testing.T) {
	for _, sh := range []struct{ m, k, n int }{
		{37, 300, 1000}, // wider than tall: split by columns
		{1000, 300, 37}, // taller than wide: split by rows
		{130, 129, 131},
		{32, 500, 2000}, // a paper LSTM step
	} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []float64{0, 1} {
					name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/beta=%v", sh.m, sh.k, sh.n, tA, tB, beta)
					t.Run(name+"/f32", func(t *testing.T) { checkGemmParts[float32](t, sh.m, sh.k, sh.n, tA, tB, float32(beta), 0x1p-23) })
					t.Run(name+"/f64", func(t *testing.T) { checkGemmParts[float64](t, sh.m, sh.k, sh.n, tA, tB, beta, 0x1p-52) })
				}
			}
		}
	}
}

func checkGemmParts[T float32 | float64](t *testing.T, m, k, n int, tA, tB bool, beta T, eps float64) {
	rng := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	fill := func(n int) []T {
		x := make([]T, n)
		for i := range x {
			x[i] = T(rng.NormFloat64())
		}
		return x
	}
	a, b, c0 := fill(m*k), fill(k*n), fill(m*n)
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	// op(A)[i, l] and op(B)[l, j] of the row-major operands.
	opA := func(i, l int) float64 {
		if tA {
			return float64(a[l*ac+i])
		}
		return float64(a[i*ac+l])
	}
	opB := func(l, j int) float64 {
		if tB {
			return float64(b[j*bc+l])
		}
		return float64(b[l*bc+j])
	}
	const alpha = 0.5
	want := make([]float64, m*n)
	bound := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, abs float64
			for l := range k {
				s += opA(i, l) * opB(l, j)
				abs += math.Abs(opA(i, l) * opB(l, j))
			}
			want[i*n+j] = alpha*s + float64(beta)*float64(c0[i*n+j])
			bound[i*n+j] = float64(k+2) * eps * (alpha*abs + math.Abs(float64(beta)*float64(c0[i*n+j])))
		}
	}
	for _, parts := range []int{1, 2, 3, 7} {
		got := append([]T(nil), c0...)
		gemmParts(parts, tA, tB, alpha, a, ar, ac, b, br, bc, beta, got)
		for i, w := range want {
			if d := math.Abs(float64(got[i]) - w); !(d <= bound[i]) {
				t.Fatalf("parts=%d: C[%d,%d] = %v, want %v (error %.3g > bound %.3g)", parts, i/n, i%n, got[i], w, d, bound[i])
			}
		}
	}
}
