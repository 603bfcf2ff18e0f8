package gp

import (
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// maxExactDot bounds Σₖ |aᵢₖ|·|bⱼₖ| for integer rows whose dot products every summation order gives exactly:
// every partial sum is then an integer below 2⁵³.
const maxExactDot = 1 << 53

// dotsTo writes alpha·a·bᵀ (a.Rows×b.Rows, row-major) into dst, alpha a power of two. When every entry of a and
// b is an integer and the sums cannot reach 2⁵³ (maxExactDot), as with the Morgan and token counts the screened
// surrogate reads, every dot product is an exact integer whatever the order of its sum: dotsTo then sums over the
// nonzero entries alone, on every core, and writes the same values as the dense product, bit for bit, in a
// fraction of its time for count rows (a few dozen nonzeros in thousands of columns). Other inputs take the
// dense product (blas64.Gemm).
//
// sa and sb are a's and b's sparse forms (sparseRows), nil where they have none.
func dotsTo(dst []float64, alpha float64, a blas64.General, sa *sparseMatrix, b blas64.General, sb *sparseMatrix) {
	r, c := a.Rows, b.Rows
	if sa == nil || sb == nil || sa.maxAbs*sb.maxAbs*float64(a.Cols) >= maxExactDot {
		blas64.Gemm(blas.NoTrans, blas.Trans, alpha, a, b, 0, gen(dst, r, c))
		return
	}
	// Rows of a on every core, each scattering its row into a dense buffer and reading b's nonzeros against it.
	workers := min(runtime.GOMAXPROCS(0), max(r/16, 1))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*r/workers, (w+1)*r/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			dense := make([]int64, a.Cols)
			for i := lo; i < hi; i++ {
				ia, va := sa.row(i)
				for k, j := range ia {
					dense[j] = int64(va[k])
				}
				out := dst[i*c : (i+1)*c]
				for j := range out {
					ib, vb := sb.row(j)
					var s int64 // exact: integer sums are what the float64 sums are, below 2⁵³
					for k, col := range ib {
						s += int64(vb[k]) * dense[col]
					}
					out[j] = alpha * float64(s)
					if s == 0 {
						out[j] = 0 // +0, as the dense products write it, not alpha·(+0)
					}
				}
				for _, j := range ia {
					dense[j] = 0
				}
			}
		}()
	}
	wg.Wait()
}

// sparseMatrix holds the nonzero entries of an integer matrix row by row (compressed sparse rows) and the
// largest |entry|.
type sparseMatrix struct {
	ptr    []int
	idx    []int32
	val    []int32
	maxAbs float64
}

func (s *sparseMatrix) row(i int) ([]int32, []int32) {
	return s.idx[s.ptr[i]:s.ptr[i+1]], s.val[s.ptr[i]:s.ptr[i+1]]
}

// sparseRows returns m's nonzero entries, or nil when one is not an integer of int32's range or m is not sparse
// enough for the sparse product to pay (more than a quarter of its entries nonzero).
func sparseRows(m blas64.General) *sparseMatrix {
	limit := m.Rows * m.Cols / 4
	s := &sparseMatrix{ptr: make([]int, 1, m.Rows+1), idx: make([]int32, 0, limit), val: make([]int32, 0, limit)}
	for i := range m.Rows {
		for j, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			if v == 0 {
				continue
			}
			// |v| < 2³¹ first, so that the conversion is exact where v is an integer (and NaN fails it).
			if !(math.Abs(v) < 1<<31) || float64(int32(v)) != v || len(s.val) == limit {
				return nil
			}
			s.idx = append(s.idx, int32(j))
			s.val = append(s.val, int32(v))
			s.maxAbs = max(s.maxAbs, math.Abs(v))
		}
		s.ptr = append(s.ptr, len(s.val))
	}
	return s
}
