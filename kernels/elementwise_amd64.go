//go:build amd64 && !purego

package kernels

import "math"

// The assembly of elementwise.go: each does n entries (n > 0, a multiple
// of 8).

//go:noescape
func add8(n int, dst, a, b *float32)

//go:noescape
func mul8(n int, dst, a, b *float32)

//go:noescape
func addReLU8(n int, dst, a, b *float32)

//go:noescape
func reluGrad8(n int, d, h *float32)

// binaryVec runs one of add8, mul8 and addReLU8 on the leading multiple of
// eight entries of a and returns its length; the caller has checked that
// dst and b are as long as a.
func binaryVec(dst, a, b []float32, asm func(n int, dst, a, b *float32)) int {
	n := len(a) &^ 7
	if !packedAsm || n == 0 {
		return 0
	}
	_, _ = dst[n-1], b[n-1]
	asm(n, &dst[0], &a[0], &b[0])
	return n
}

// reluGradVec does the leading multiple of eight entries of ReLUGrad32s.
func reluGradVec(d, h []float32) int {
	n := len(d) &^ 7
	if !packedAsm || n == 0 {
		return 0
	}
	_ = h[n-1]
	reluGrad8(n, &d[0], &h[0])
	return n
}

// nlsqGradConst holds the constants of nlsqGrad4, each in four lanes: 1, 3,
// 2, 0.4, 0.3, 0.8, −0.4 and the sign bit.
var nlsqGradConst = [8][4]float64{
	{1, 1, 1, 1}, {3, 3, 3, 3}, {2, 2, 2, 2}, {0.4, 0.4, 0.4, 0.4}, {0.3, 0.3, 0.3, 0.3},
	{0.8, 0.8, 0.8, 0.8}, {-0.4, -0.4, -0.4, -0.4}, {negZero, negZero, negZero, negZero},
}

var negZero = math.Copysign(0, -1)

// nlsqGrad4 does scalars [0, m) of NLSqGrad32s (m > 0, a multiple of 4;
// the runs are n long).
//
//go:noescape
func nlsqGrad4(m, n int, out, in *float32, c *[8][4]float64)

// nlsqGradVec does the leading multiple of four scalars of NLSqGrad32s.
func nlsqGradVec(out, in []float32, n int) int {
	m := n &^ 3
	if !packedAsm || m == 0 {
		return 0
	}
	_, _ = out[5*n-1], in[8*n-1]
	nlsqGrad4(m, n, &out[0], &in[0], &nlsqGradConst)
	return m
}
