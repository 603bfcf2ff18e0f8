package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGemmPartsMatchesOneCall requires a product split into row or column
// blocks of C (gemmParts) to equal the product computed in float64 from its
// definition, as one BLAS call does, to the rounding a k-term dot product
// may carry (k·ε·Σ|a·b| per entry), for every transpose, both dtypes,
// accumulating (beta = 1) and not, alpha 1 (which the pure-Go build runs on
// kernels' packed micro-kernel) and not, at shapes whose split points do not
// fall on whole tiles. A block at a wrong offset gives errors of the entries' own
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
	_, ac, _, bc := storedShapes(tA, tB, m, k, n)
	// op(A) row by row and op(B) column by column in float64, so that each
	// entry's dot product (and the sum of its terms' magnitudes, the error
	// bound's scale) runs over two contiguous rows; computed once for both
	// alphas.
	opA, opBT := rowsOf(a, m, k, ac, tA), rowsOf(b, n, k, bc, !tB)
	dot, abs := make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		x := opA[i*k : (i+1)*k]
		for j := range n {
			y := opBT[j*k : (j+1)*k]
			var s, sa float64
			for l, v := range x {
				p := v * y[l]
				s += p
				sa += math.Abs(p)
			}
			dot[i*n+j], abs[i*n+j] = s, sa
		}
	}
	for _, alpha := range []T{0.5, 1} { // 1: the packed micro-kernel's case (packedProducts)
		checkGemmPartsAlpha(t, m, k, n, tA, tB, alpha, beta, eps, a, b, c0, dot, abs)
	}
}

// rowsOf returns, in float64, the rows×k matrix stored in x (ld columns) as
// it is (row i at x[i·ld:]) or, with trans, as the transpose of what x holds.
func rowsOf[T float32 | float64](x []T, rows, k, ld int, trans bool) []float64 {
	out := make([]float64, rows*k)
	for i := range rows {
		for l := range k {
			if trans {
				out[i*k+l] = float64(x[l*ld+i])
			} else {
				out[i*k+l] = float64(x[i*ld+l])
			}
		}
	}
	return out
}

func checkGemmPartsAlpha[T float32 | float64](t *testing.T, m, k, n int, tA, tB bool, alpha, beta T, eps float64, a, b, c0 []T, dot, abs []float64) {
	ar, ac, br, bc := storedShapes(tA, tB, m, k, n)
	want := make([]float64, m*n)
	bound := make([]float64, m*n)
	for i := range want {
		want[i] = float64(alpha)*dot[i] + float64(beta)*float64(c0[i])
		bound[i] = float64(k+2) * eps * (float64(alpha)*abs[i] + math.Abs(float64(beta)*float64(c0[i])))
	}
	for _, parts := range []int{1, 2, 3, 7} {
		got := append([]T(nil), c0...)
		gemmParts(parts, tA, tB, alpha, a, ar, ac, b, br, bc, beta, got)
		for i, w := range want {
			if d := math.Abs(float64(got[i]) - w); !(d <= bound[i]) {
				t.Fatalf("alpha=%v parts=%d: C[%d,%d] = %v, want %v (error %.3g > bound %.3g)", alpha, parts, i/n, i%n, got[i], w, d, bound[i])
			}
		}
	}
}

// BenchmarkGemmParts times the paper preset's products (B = 32, T = 100)
// as gemm runs them in one BLAS call (parts=1) and split over the cores
// (parts=GOMAXPROCS), in GFLOP/s. With the openblas tag and
// NFBO_BLAS_THREADS=2, parts=1 is OpenBLAS's own threading.
func BenchmarkGemmParts(b *testing.B) {
	const B, T, F, H, U = 32, 100, 40, 500, 100
	S, N := T-1, T*B
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, k, n int
	}{
		{"lstm-step", false, false, B, H, 4 * H},
		{"lstm-step-bwd", false, true, B, 4 * H, H},
		{"lstm-in", false, false, S * B, F, 4 * H},
		{"lstm2-in", false, false, S * B, H, 4 * H},
		{"lstm-wgrad", true, false, H, S * B, 4 * H},
		{"lstm-dx", false, true, S * B, 4 * H, H},
		{"coupling-in", false, false, N, H, U},
		{"coupling-wgrad", true, false, H, N, U},
		{"coupling-dctx", false, true, N, U, H},
	} {
		ar, ac, br, bc := storedShapes(s.tA, s.tB, s.m, s.k, s.n)
		rng := rand.New(rand.NewPCG(1, 2))
		x, w, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for _, parts := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d/parts=%d", s.name, s.m, s.k, s.n, parts), func(b *testing.B) {
				gemmParts(parts, s.tA, s.tB, 1, x, ar, ac, w, br, bc, 0, c)
				b.ResetTimer()
				for range b.N {
					gemmParts(parts, s.tA, s.tB, 1, x, ar, ac, w, br, bc, 0, c)
				}
				flops := 2 * float64(s.m) * float64(s.k) * float64(s.n)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// storedShapes returns the row-major shapes A [ar, ac] and B [br, bc] that
// gemm is given for the product op(A) [m, k] · op(B) [k, n].
func storedShapes(tA, tB bool, m, k, n int) (ar, ac, br, bc int) {
	ar, ac, br, bc = m, k, k, n
	if tA {
		ar, ac = k, m
	}
	if tB {
		br, bc = n, k
	}
	return ar, ac, br, bc
}
