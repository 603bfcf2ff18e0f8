//go:build amd64 && !purego

package kernels

import "math"

// VectorMathAccelerated reports whether Exp32s, Sigmoid32s, Tanh32s and
// Log32s run their assembly (eight lanes at a time, AVX2 and FMA) on this
// machine.
func VectorMathAccelerated() bool { return packedAsm }

// vconst holds the constants of vmath_amd64.s, each repeated in the eight
// lanes of a vector; the assembly addresses them by index·32 (its v*
// #defines follow this order).
var vconst = func() (c [38][8]float32) {
	bits := math.Float32frombits
	for i, v := range [...]float32{
		expMax, expMin, log2e, ln2Hi, ln2Lo, // 0-4
		exp0, exp1, exp2, exp3, exp4, exp5, // 5-10
		1, float32(math.Inf(1)), bits(126), bits(1 << 31), 2, // 11-15
		tanhSmall, tanhOne, tanh0, tanh1, tanh2, tanh3, tanh4, // 16-22
		bits(1 << 23), math.MaxFloat32, bits(0x807fffff), bits(126 << 23), sqrtHalf, 0.5, // 23-28
		log0, log1, log2, log3, log4, log5, log6, log7, log8, // 29-37
	} {
		for j := range c[i] {
			c[i][j] = v
		}
	}
	return c
}()

// The assembly: each does n values (n > 0, a multiple of 8) of x into dst.
// logs stops before the first group of eight that holds a value outside
// the positive normal floats and returns how many it did.

//go:noescape
func exps(n int, dst, x *float32, c *[38][8]float32)

//go:noescape
func sigmoids(n int, dst, x *float32, c *[38][8]float32)

//go:noescape
func tanhs(n int, dst, x *float32, c *[38][8]float32)

//go:noescape
func logs(n int, dst, x *float32, c *[38][8]float32) int

// vecLen returns the part of x the assembly does, checking that dst holds
// it (the assembly does no bounds checks).
func vecLen(dst, x []float32) int {
	if !packedAsm {
		return 0
	}
	n := len(x) &^ 7
	if n > 0 {
		_ = dst[n-1]
	}
	return n
}

// unaryVec runs one of the element-wise routines (exps, sigmoids, tanhs)
// on the part of x the assembly does and returns its length.
func unaryVec(dst, x []float32, asm func(n int, dst, x *float32, c *[38][8]float32)) int {
	n := vecLen(dst, x)
	if n > 0 {
		asm(n, &dst[0], &x[0], &vconst)
	}
	return n
}

func expVec(dst, x []float32) int     { return unaryVec(dst, x, exps) }
func sigmoidVec(dst, x []float32) int { return unaryVec(dst, x, sigmoids) }
func tanhVec(dst, x []float32) int    { return unaryVec(dst, x, tanhs) }

func logVec(dst, x []float32) int {
	n := vecLen(dst, x)
	if n > 0 {
		n = logs(n, &dst[0], &x[0], &vconst)
	}
	return n
}

//go:noescape
func adam4(n int, p, gr, m, v *float32, c *AdamCoeffs)

//go:noescape
func lstmGrad8(n int, dg, dc, act, tc, cp, dout, dh *float32, H int)

// adamVec does the part of AdamUpdate whose length is a multiple of four.
func adamVec(p, g, m, v []float32, c *AdamCoeffs) int {
	n := len(p) &^ 3
	if !packedAsm || n == 0 {
		return 0
	}
	_, _, _ = g[n-1], m[n-1], v[n-1]
	adam4(n, &p[0], &g[0], &m[0], &v[0], c)
	return n
}

// lstmGradVec does the units of LSTMCellGrad32 up to a multiple of eight.
func lstmGradVec(dg, dc, act, tc, cp, dout, dh []float32, H int) int {
	n := H &^ 7
	if !packedAsm || n == 0 {
		return 0
	}
	_, _, _ = dg[3*H+n-1], act[3*H+n-1], dc[n-1]
	_, _, _, _ = tc[n-1], cp[n-1], dout[n-1], dh[n-1]
	lstmGrad8(n, &dg[0], &dc[0], &act[0], &tc[0], &cp[0], &dout[0], &dh[0], H)
	return n
}
