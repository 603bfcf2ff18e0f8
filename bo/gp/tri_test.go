package gp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

func lower(data []float64, n int) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: n, Data: data[:n*n]}
}

func randSPD(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n*n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	a := make([]float64, n*n)
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(x, n, n), gen(x, n, n), 0, gen(a, n, n))
	for i := range n {
		a[i*n+i] += float64(n)
	}
	return a
}

// TestBlockedTriangular compares the blocked routines with gonum's unblocked ones on sizes around the block
// size nb; tolerance 1e-9 relative to the largest entry.
func TestBlockedTriangular(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 5, nb - 1, nb, nb + 1, 2*nb + 7} {
		for _, k := range []int{1, 3, 2*nb + 3} {
			a := randSPD(rng, n)
			want := append([]float64(nil), a...)
			if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: want}); !ok {
				t.Fatal("not PD")
			}
			got := append([]float64(nil), a...)
			if ok, err := cholesky(context.Background(), got, n); !ok || err != nil {
				t.Fatalf("blocked Cholesky failed: ok=%v err=%v", ok, err)
			}
			l := make([]float64, n*n)
			for i := range n {
				for j := 0; j <= i; j++ {
					l[i*n+j] = want[i*n+j]
					if d := math.Abs(got[i*n+j] - want[i*n+j]); d > 1e-9*math.Sqrt(float64(n)) {
						t.Fatalf("n=%d: L[%d,%d] = %v, want %v", n, i, j, got[i*n+j], want[i*n+j])
					}
				}
			}
			b := make([]float64, n*k)
			for i := range b {
				b[i] = rng.NormFloat64()
			}
			check := func(name string, got, want []float64) {
				var scale, worst float64
				for i := range want {
					scale = max(scale, math.Abs(want[i]))
					worst = max(worst, math.Abs(got[i]-want[i]))
				}
				if worst > 1e-9*(1+scale) {
					t.Errorf("%s n=%d k=%d: max diff %.3g (scale %.3g)", name, n, k, worst, scale)
				}
			}
			for _, tr := range []bool{false, true} {
				ta := blas.NoTrans
				if tr {
					ta = blas.Trans
				}
				g1, w1 := append([]float64(nil), b...), append([]float64(nil), b...)
				trsmLeft(tr, l, n, g1, k)
				blas64.Trsm(blas.Left, ta, 1, lower(l, n), gen(w1, n, k))
				check(fmt.Sprintf("trsmLeft(%v)", tr), g1, w1)
				g2, w2 := append([]float64(nil), b...), append([]float64(nil), b...)
				trmmLeft(tr, l, n, g2, k)
				blas64.Trmm(blas.Left, ta, 1, lower(l, n), gen(w2, n, k))
				check(fmt.Sprintf("trmmLeft(%v)", tr), g2, w2)
			}
			bt := make([]float64, k*n)
			for i := range bt {
				bt[i] = rng.NormFloat64()
			}
			tmp := make([]float64, n*k)
			g4, w4 := append([]float64(nil), b...), append([]float64(nil), b...)
			solveLT(l, n, g4, k, tmp)
			blas64.Trsm(blas.Left, blas.Trans, 1, lower(l, n), gen(w4, n, k))
			check("solveLT", g4, w4)
			g5, w5 := append([]float64(nil), b...), append([]float64(nil), b...)
			mulLT(l, n, g5, k, tmp)
			blas64.Trmm(blas.Left, blas.Trans, 1, lower(l, n), gen(w5, n, k))
			check("mulLT", g5, w5)
			g6, w6 := append([]float64(nil), bt...), append([]float64(nil), bt...)
			trmmRight(l, n, g6, k)
			blas64.Trmm(blas.Right, blas.NoTrans, 1, lower(l, n), gen(w6, k, n))
			check("trmmRight", g6, w6)
			g3, w3 := append([]float64(nil), bt...), append([]float64(nil), bt...)
			trsmRight(l, n, g3, k)
			blas64.Trsm(blas.Right, blas.NoTrans, 1, lower(l, n), gen(w3, k, n))
			check("trsmRight", g3, w3)
			// lowerAtB against a full Gemm, lower triangle only.
			c1, c2 := make([]float64, n*n), make([]float64, n*n)
			if err := lowerAtB(context.Background(), c1, n, bt, g3, k); err != nil {
				t.Fatal(err)
			}
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(bt, k, n), gen(g3, k, n), 0, gen(c2, n, n))
			for i := range n {
				for j := i + 1; j < n; j++ {
					c1[i*n+j], c2[i*n+j] = 0, 0
				}
			}
			check("lowerAtB", c1, c2)
		}
	}
}

// TestBlockedCancel checks that cholesky and lowerAtB look at ctx once per block of nb rows (cholesky: per
// panel and per block row of each trailing update), and stop with ctx's error at any of those checks.
func TestBlockedCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, nb, 2*nb + 7, 4 * nb} {
		blocks := (n + nb - 1) / nb
		a := randSPD(rng, n)
		w := make([]float64, n*n)
		all := &countCtx{Context: context.Background()}
		copy(w, a)
		if ok, err := cholesky(all, w, n); !ok || err != nil {
			t.Fatalf("n=%d: cholesky: ok=%v err=%v", n, ok, err)
		}
		if want := blocks + blocks*(blocks-1)/2; all.calls != want {
			t.Errorf("n=%d: cholesky checked ctx %d times, want %d", n, all.calls, want)
		}
		for k := 1; k <= all.calls; k++ {
			copy(w, a)
			if ok, err := cholesky(&countCtx{Context: context.Background(), k: k}, w, n); ok || err != context.Canceled {
				t.Errorf("n=%d: cholesky cancelled at check %d: ok=%v err=%v", n, k, ok, err)
			}
		}
		all = &countCtx{Context: context.Background()}
		if err := lowerAtB(all, w, n, a, a, n); err != nil {
			t.Fatalf("n=%d: lowerAtB: %v", n, err)
		}
		if all.calls != blocks {
			t.Errorf("n=%d: lowerAtB checked ctx %d times, want %d", n, all.calls, blocks)
		}
		for k := 1; k <= blocks; k++ {
			if err := lowerAtB(&countCtx{Context: context.Background(), k: k}, w, n, a, a, n); err != context.Canceled {
				t.Errorf("n=%d: lowerAtB cancelled at check %d: err=%v", n, k, err)
			}
		}
	}
}

func BenchmarkCholesky(b *testing.B) {
	for _, n := range []int{1024, 5000} {
		rng := rand.New(rand.NewPCG(1, 1))
		a := randSPD(rng, n)
		w := make([]float64, n*n)
		b.Run(fmt.Sprintf("blocked/n=%d", n), func(b *testing.B) {
			for range b.N {
				copy(w, a)
				if ok, _ := cholesky(context.Background(), w, n); !ok {
					b.Fatal("not PD")
				}
			}
		})
		if n <= 1024 {
			b.Run(fmt.Sprintf("gonum-Dpotrf/n=%d", n), func(b *testing.B) {
				for range b.N {
					copy(w, a)
					lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: w})
				}
			})
		}
	}
}
