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

func expVec(dst, x []float32) int {
	n := vecLen(dst, x)
	if n > 0 {
		exps(n, &dst[0], &x[0], &vconst)
	}
	return n
}

func sigmoidVec(dst, x []float32) int {
	n := vecLen(dst, x)
	if n > 0 {
		sigmoids(n, &dst[0], &x[0], &vconst)
	}
	return n
}

func tanhVec(dst, x []float32) int {
	n := vecLen(dst, x)
	if n > 0 {
		tanhs(n, &dst[0], &x[0], &vconst)
	}
	return n
}

func logVec(dst, x []float32) int {
	n := vecLen(dst, x)
	if n > 0 {
		n = logs(n, &dst[0], &x[0], &vconst)
	}
	return n
}
