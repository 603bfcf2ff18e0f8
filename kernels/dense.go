package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// DenseTo computes dst = x·w + b for a fully connected layer in the
// row-vector convention: x is n×in, w is in×out, b has length out (nil means
// no bias) and dst is n×out. dst must not alias x or w.
func DenseTo(dst, x, w, b []float32, n, in, out int) {
	checkDims("DenseTo", n, in, out)
	checkLen("DenseTo", "dst", len(dst), n*out)
	if b != nil {
		checkLen("DenseTo", "b", len(b), out)
		for i := 0; i < n; i++ {
			copy(dst[i*out:(i+1)*out], b[:out])
		}
		MulAddTo(dst, x, w, n, in, out)
		return
	}
	clear(dst[:n*out])
	MulAddTo(dst, x, w, n, in, out)
}

// MulAddTo computes dst += x·w with x n×in, w in×out and dst n×out. dst must
// not alias x or w.
//
// The product runs on the calling goroutine only, in panels of at most
// panelRows×panelCols of dst, each small enough for gonum's Sgemm to take
// its serial path: callers parallelise over independent rows themselves
// (model/ splits batches across workers), and gonum's parallel path would
// start goroutines, and allocate, on every call.
func MulAddTo(dst, x, w []float32, n, in, out int) {
	checkDims("MulAddTo", n, in, out)
	checkLen("MulAddTo", "dst", len(dst), n*out)
	checkLen("MulAddTo", "x", len(x), n*in)
	checkLen("MulAddTo", "w", len(w), in*out)
	if n == 0 || out == 0 || in == 0 {
		return
	}
	impl := blas32.Implementation()
	for i := 0; i < n; i += panelRows {
		m := min(panelRows, n-i)
		for j := 0; j < out; j += panelCols {
			c := min(panelCols, out-j)
			impl.Sgemm(blas.NoTrans, blas.NoTrans, m, c, in, 1, x[i*in:], in, w[j:], out, 1, dst[i*out+j:], out)
		}
	}
}

// Panel sizes for MulAddTo: gonum's Sgemm goes parallel at 4 or more
// 64×64 blocks of the result, so 64×192 panels stay serial.
const (
	panelRows = 64
	panelCols = 192
)

// AddRowTo adds the vector b (length c) to every row of the n×c matrix dst.
func AddRowTo(dst, b []float32, n, c int) {
	checkDims("AddRowTo", n, c)
	checkLen("AddRowTo", "dst", len(dst), n*c)
	checkLen("AddRowTo", "b", len(b), c)
	b = b[:c]
	for i := 0; i < n; i++ {
		row := dst[i*c : (i+1)*c]
		for j, v := range b {
			row[j] += v
		}
	}
}

// ReLU replaces every negative element of x by 0, in place.
func ReLU(x []float32) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}
