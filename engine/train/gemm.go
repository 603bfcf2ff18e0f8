package train

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/nfbo/nfbo/kernels"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// minSplitMACs is the number of multiply-adds below which a product is not
// split across goroutines: a part must be worth a goroutine and a cgo call.
const minSplitMACs = 1 << 20

// splitAlign is the granularity of a split, in rows or columns of C, so
// that every part but the last fills whole micro-kernel tiles.
const splitAlign = 16

// gemm computes C = alpha·op(A)·op(B) + beta·C for row-major A (ar×ac),
// B (br×bc) and C, with gonum's current BLAS (OpenBLAS under the openblas
// tag). When the BLAS runs one thread (see gemmParts), a large product is
// split into one block of C per core, each computed by its own goroutine.
func gemm[T float32 | float64](tA, tB bool, alpha T, a []T, ar, ac int, b []T, br, bc int, beta T, c []T) {
	gemmParts(gemmParts0(unsafe.Sizeof(alpha) == 4), tA, tB, alpha, a, ar, ac, b, br, bc, beta, c)
}

// gemmParts0 is the number of parts gemm splits a large product into: the
// number of cores when each call runs on the caller's thread alone
// (OpenBLAS with one thread, the default; float32 products on kernels'
// micro-kernel, see packedProducts), else 1 (gonum's pure-Go Gemm and
// multi-threaded OpenBLAS split products themselves).
//
// Splitting ourselves rather than letting OpenBLAS run two threads made a
// training step faster (BENCHMARKS.md "The products split over the
// cores"), although OpenBLAS's own threads are as fast on each product
// alone: its idle threads spin between calls, taking a core from the
// element-wise loops that run between the products.
func gemmParts0(f32 bool) int {
	if !blasSingleThreaded() && !(f32 && packedProducts()) {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// packPool holds the packed right operands of the products gemmBlock runs
// on kernels' micro-kernel, reused from call to call (a weight gradient's
// is several MB).
var packPool = sync.Pool{New: func() any { return new(kernels.Packed) }}

// gemmParts computes what gemm does with the product split into at most
// parts blocks of C's rows (or of its columns, when C is wider than tall),
// each on its own goroutine. Every entry of C is the same dot product as in
// one call, though the BLAS may sum it in another order (its kernels for a
// block's edge tiles differ), so results agree to rounding, not bit for bit.
func gemmParts[T float32 | float64](parts int, tA, tB bool, alpha T, a []T, ar, ac int, b []T, br, bc int, beta T, c []T) {
	m, k := ar, ac
	if tA {
		m, k = ac, ar
	}
	n := bc
	if tB {
		n = br
	}
	lda, ldb := ac, bc
	byCols := n > m
	dim := m
	if byCols {
		dim = n
	}
	parts = min(parts, dim/splitAlign)
	if parts < 2 || m*n*k < minSplitMACs {
		gemmBlock(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, n)
		return
	}
	// Part q covers [lo, hi) of C's rows or columns. A row block of C reads
	// rows of op(A) (rows of A, or columns of a transposed A); a column
	// block reads columns of op(B) (columns of B, or rows of a transposed B).
	block := func(lo, hi int) {
		if byCols {
			boff := lo
			if tB {
				boff = lo * ldb
			}
			gemmBlock(tA, tB, m, hi-lo, k, alpha, a, lda, b[boff:], ldb, beta, c[lo:], n)
			return
		}
		aoff := lo * lda
		if tA {
			aoff = lo
		}
		gemmBlock(tA, tB, hi-lo, n, k, alpha, a[aoff:], lda, b, ldb, beta, c[lo*n:], n)
	}
	bound := func(q int) int {
		if q == parts {
			return dim
		}
		return (q*dim/parts + splitAlign/2) / splitAlign * splitAlign
	}
	var wg sync.WaitGroup
	for q := 1; q < parts; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			block(bound(q), bound(q+1))
		}()
	}
	block(0, bound(1))
	wg.Wait()
}

// gemmBlock is one BLAS call on the m×n block of C at c (row stride ldc).
func gemmBlock[T float32 | float64](tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	ar, ac := m, k
	if tA {
		ta, ar, ac = blas.Trans, k, m
	}
	br, bc := k, n
	if tB {
		tb, br, bc = blas.Trans, n, k
	}
	switch a := any(a).(type) {
	case []float32:
		if packedProducts() && alpha == 1 && (beta == 0 || beta == 1) {
			// kernels' packed product: op(B) packed once, then 4×16
			// blocks of C, every entry summed over k in order.
			p := packPool.Get().(*kernels.Packed)
			p.Pack(any(b).([]float32), ldb, k, n, tB)
			c32 := any(c).([]float32)
			if tA {
				kernels.MulPackedTransTo(c32, ldc, a, lda, m, p, beta == 1)
			} else {
				kernels.MulPackedTo(c32, ldc, a, lda, m, p, beta == 1)
			}
			packPool.Put(p)
			return
		}
		blas32.Gemm(ta, tb, float32(alpha),
			blas32.General{Rows: ar, Cols: ac, Stride: lda, Data: a},
			blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: any(b).([]float32)},
			float32(beta), blas32.General{Rows: m, Cols: n, Stride: ldc, Data: any(c).([]float32)})
	case []float64:
		blas64.Gemm(ta, tb, float64(alpha),
			blas64.General{Rows: ar, Cols: ac, Stride: lda, Data: a},
			blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: any(b).([]float64)},
			float64(beta), blas64.General{Rows: m, Cols: n, Stride: ldc, Data: any(c).([]float64)})
	}
}
