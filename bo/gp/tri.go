package gp

import (
	"context"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Blocked level-3 routines for a lower-triangular n×n L (row-major, stride n). gonum's pure-Go Dtrsm, Dtrmm and
// Dsyrk are single-threaded loops; these split the work into nb-wide blocks so that almost all flops go through
// Dgemm, which is blocked and parallel (and is OpenBLAS's when the program selects it with blas64.Use). Only the
// nb×nb diagonal blocks use the unblocked routines.

const nb = 128

func sub(data []float64, stride, r0, c0, r, c int) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data[r0*stride+c0:]}
}

func diagBlock(l []float64, n, i0, ib int) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: ib, Stride: n, Data: l[i0*n+i0:]}
}

// trsmLeft solves L·X = B (trans false) or Lᵀ·X = B (trans true) for X, in place of b (n×k).
func trsmLeft(trans bool, l []float64, n int, b []float64, k int) {
	if !trans {
		for i0 := 0; i0 < n; i0 += nb {
			ib := min(nb, n-i0)
			if i0 > 0 {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, sub(l, n, i0, 0, ib, i0), sub(b, k, 0, 0, i0, k), 1, sub(b, k, i0, 0, ib, k))
			}
			blas64.Trsm(blas.Left, blas.NoTrans, 1, diagBlock(l, n, i0, ib), sub(b, k, i0, 0, ib, k))
		}
		return
	}
	for i0 := (n - 1) / nb * nb; i0 >= 0; i0 -= nb {
		ib := min(nb, n-i0)
		if e := i0 + ib; e < n {
			blas64.Gemm(blas.Trans, blas.NoTrans, -1, sub(l, n, e, i0, n-e, ib), sub(b, k, e, 0, n-e, k), 1, sub(b, k, i0, 0, ib, k))
		}
		blas64.Trsm(blas.Left, blas.Trans, 1, diagBlock(l, n, i0, ib), sub(b, k, i0, 0, ib, k))
	}
}

// trsmRight solves X·L = B for X, in place of b (k×n).
func trsmRight(l []float64, n int, b []float64, k int) {
	for j0 := (n - 1) / nb * nb; j0 >= 0; j0 -= nb {
		jb := min(nb, n-j0)
		if e := j0 + jb; e < n {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, sub(b, n, 0, e, k, n-e), sub(l, n, e, j0, n-e, jb), 1, sub(b, n, 0, j0, k, jb))
		}
		blas64.Trsm(blas.Right, blas.NoTrans, 1, diagBlock(l, n, j0, jb), sub(b, n, 0, j0, k, jb))
	}
}

// trmmLeft overwrites b (n×k) with L·B (trans false) or Lᵀ·B (trans true).
func trmmLeft(trans bool, l []float64, n int, b []float64, k int) {
	if !trans {
		for i0 := (n - 1) / nb * nb; i0 >= 0; i0 -= nb {
			ib := min(nb, n-i0)
			blas64.Trmm(blas.Left, blas.NoTrans, 1, diagBlock(l, n, i0, ib), sub(b, k, i0, 0, ib, k))
			if i0 > 0 {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, sub(l, n, i0, 0, ib, i0), sub(b, k, 0, 0, i0, k), 1, sub(b, k, i0, 0, ib, k))
			}
		}
		return
	}
	for i0 := 0; i0 < n; i0 += nb {
		ib := min(nb, n-i0)
		blas64.Trmm(blas.Left, blas.Trans, 1, diagBlock(l, n, i0, ib), sub(b, k, i0, 0, ib, k))
		if e := i0 + ib; e < n {
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, sub(l, n, e, i0, n-e, ib), sub(b, k, e, 0, n-e, k), 1, sub(b, k, i0, 0, ib, k))
		}
	}
}

// cholesky overwrites the lower triangle of the symmetric a (n×n) with its Cholesky factor L (right-looking,
// blocked; the trailing update is done by Dgemm block row by block row, so only the lower triangle and the
// upper part of the diagonal blocks are touched). It reports whether a was positive definite. It checks ctx
// before each panel and each block row of the trailing update (O(nb²·n) flops apart) and returns ctx.Err(),
// unwrapped, with a partly factorised a when ctx is done.
func cholesky(ctx context.Context, a []float64, n int) (ok bool, err error) {
	for k0 := 0; k0 < n; k0 += nb {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		kb := min(nb, n-k0)
		if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: kb, Stride: n, Data: a[k0*n+k0:]}); !ok {
			return false, nil
		}
		e := k0 + kb
		if e == n {
			break
		}
		// Panel: A[e:, k0:e] = A[e:, k0:e]·L_kk⁻ᵀ.
		blas64.Trsm(blas.Right, blas.Trans, 1, diagBlock(a, n, k0, kb), sub(a, n, e, k0, n-e, kb))
		// Trailing update of the lower part, one block row at a time: A[i, e:iEnd] −= P_i·P[e:iEnd]ᵀ.
		for i0 := e; i0 < n; i0 += nb {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			ib := min(nb, n-i0)
			blas64.Gemm(blas.NoTrans, blas.Trans, -1, sub(a, n, i0, k0, ib, kb), sub(a, n, e, k0, i0+ib-e, kb), 1, sub(a, n, i0, e, ib, i0+ib-e))
		}
	}
	return true, nil
}

// lowerAtB adds Aᵀ·W into the lower triangle (and the diagonal blocks' upper part) of c (n×n), for a and w of
// shape k×n: a symmetric-aware Dgemm that skips the blocks above the diagonal. It checks ctx before each block
// row of nb rows (O(nb·n·k) flops apart) and returns ctx.Err(), unwrapped, with c partly updated when ctx is done.
func lowerAtB(ctx context.Context, c []float64, n int, a, w []float64, k int) error {
	for i0 := 0; i0 < n; i0 += nb {
		if err := ctx.Err(); err != nil {
			return err
		}
		ib := min(nb, n-i0)
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, sub(a, n, 0, i0, k, ib), sub(w, n, 0, 0, k, i0+ib), 1, sub(c, n, i0, 0, ib, i0+ib))
	}
	return nil
}

// trmmRight overwrites b (k×n) with B·L.
func trmmRight(l []float64, n int, b []float64, k int) {
	for j0 := 0; j0 < n; j0 += nb {
		jb := min(nb, n-j0)
		blas64.Trmm(blas.Right, blas.NoTrans, 1, diagBlock(l, n, j0, jb), sub(b, n, 0, j0, k, jb))
		if e := j0 + jb; e < n {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, sub(b, n, 0, e, k, n-e), sub(l, n, e, j0, n-e, jb), 1, sub(b, n, 0, j0, k, jb))
		}
	}
}

// transposeTo writes aᵀ (c×r) into dst for a (r×c).
func transposeTo(dst, a []float64, r, c int) {
	const tb = 32
	for i0 := 0; i0 < r; i0 += tb {
		for j0 := 0; j0 < c; j0 += tb {
			for i := i0; i < min(i0+tb, r); i++ {
				for j := j0; j < min(j0+tb, c); j++ {
					dst[j*r+i] = a[i*c+j]
				}
			}
		}
	}
}

// The transposed forms below keep every Dgemm in gonum's NoTrans×NoTrans kernel, which is several times faster
// than its Trans×NoTrans one. tmp must hold n·k values.

// solveLT overwrites b (n×k) with L⁻ᵀ·B, computed as (Bᵀ·L⁻¹)ᵀ.
func solveLT(l []float64, n int, b []float64, k int, tmp []float64) {
	transposeTo(tmp, b, n, k)
	trsmRight(l, n, tmp, k)
	transposeTo(b, tmp, k, n)
}

// mulLT overwrites b (n×k) with Lᵀ·B, computed as (Bᵀ·L)ᵀ.
func mulLT(l []float64, n int, b []float64, k int, tmp []float64) {
	transposeTo(tmp, b, n, k)
	trmmRight(l, n, tmp, k)
	transposeTo(b, tmp, k, n)
}

// gemmABt sets c (r×n) = alpha·A·Bᵀ + beta·C for a (r×k) and b (n×k), transposing b into tmp (k·n values) so
// that the product runs in the NoTrans×NoTrans kernel.
func gemmABt(c []float64, alpha float64, a []float64, r, k int, b []float64, n int, beta float64, tmp []float64) {
	transposeTo(tmp, b, n, k)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, gen(a, r, k), gen(tmp, k, n), beta, gen(c, r, n))
}

// drawJoint writes S = nSamples joint draws of mean + L·E into dst (S×C, row k sample k): L the lower triangle of
// chol (C×C, c = len(mean), its strictly upper part cleared here) and E (C×S, in e, which it overwrites) standard
// normal, drawn from rng row by row. The samplers of both models share it, so that one seed gives one sequence
// of draws.
func drawJoint(dst, chol, mean, e []float64, nSamples int, rng *rand.Rand) {
	c := len(mean)
	for i := range c {
		clear(chol[i*c+i+1 : (i+1)*c])
	}
	e = e[:c*nSamples]
	for i := range e {
		e[i] = rng.NormFloat64()
	}
	trmmLeft(false, chol, c, e, nSamples)
	for k := range nSamples {
		row := dst[k*c : (k+1)*c]
		for i := range c {
			row[i] = mean[i] + e[i*nSamples+k]
		}
	}
}
