package kernels

import "math"

// Single-precision exp, tanh, sigmoid and log for float32 training math.
// The float64 math package does twice the work a float32 result needs:
// these are the Cephes library's expf, tanhf and logf (range reduction and
// a short minimax polynomial), accurate to a few units in the last place
// of a float32. The slice forms (Exp32s, Sigmoid32s, Tanh32s, Log32s) run
// the same algorithms eight lanes at a time in AVX2 and FMA where the
// assembly runs (VectorMathAccelerated), and the scalar ones elsewhere; the
// two can differ in the last place (FMA rounds once where the scalar code
// rounds twice).

// Exp32 returns e^x in float32: +Inf above ln(MaxFloat32), 0 below −86.6
// (e^x < 2.4e−38, near the smallest normal float32), NaN for NaN.
func Exp32(x float32) float32 {
	switch {
	case x > expMax:
		return float32(math.Inf(1))
	case x < expMin:
		return 0
	case x != x:
		return x
	}
	// x = n·ln 2 + r with |r| ≤ ln2/2; e^x = 2^n · e^r. Adding 1.5·2^23
	// rounds x·log2e to an integer without a call (float32 has 23 fraction
	// bits).
	const round = 12582912
	n := (x*log2e + round) - round
	r := x - n*ln2Hi - n*ln2Lo
	p := ((((exp0*r+exp1)*r+exp2)*r+exp3)*r+exp4)*r + exp5
	p = p*r*r + r + 1
	// 2^n for n in [−126, 128], built from exponent bits as 2^(n−1)·2 so
	// that n = 128 does not overflow.
	return p * math.Float32frombits(uint32(int32(n)+126)<<23) * 2
}

// Tanh32 returns tanh(x) in float32.
func Tanh32(x float32) float32 {
	z := x
	if z < 0 {
		z = -z
	}
	if z > tanhSmall {
		if z > tanhOne { // tanh rounds to ±1 in float32
			z = 1
		} else {
			z = 1 - 2/(Exp32(2*z)+1)
		}
		if x < 0 {
			z = -z
		}
		return z
	}
	// An odd polynomial on [−0.625, 0.625], where 1 − 2/(e^2x+1) would lose
	// digits to cancellation.
	s := x * x
	return ((((tanh0*s+tanh1)*s+tanh2)*s+tanh3)*s+tanh4)*s*x + x
}

// Sigmoid32 returns 1/(1+e^−x) in float32.
func Sigmoid32(x float32) float32 { return 1 / (1 + Exp32(-x)) }

// Log32 returns ln x in float32 (x = m·2^e with m in [√½, √2), ln(1+(m−1))
// by a minimax polynomial, plus e·ln 2 in two parts): −Inf at 0, NaN below
// 0 and for NaN, +Inf at +Inf. Subnormal x are scaled by 2^23 first.
func Log32(x float32) float32 {
	switch {
	case x != x || x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case x > math.MaxFloat32:
		return x
	}
	bits := math.Float32bits(x)
	e := int32(bits>>23) - 126 // x = m·2^e with m in [0.5, 1)
	if bits>>23 == 0 {         // subnormal
		bits = math.Float32bits(x * (1 << 23))
		e = int32(bits>>23) - 126 - 23
	}
	m := math.Float32frombits(bits&0x807fffff | 126<<23)
	if m < sqrtHalf {
		e--
		m = m + m - 1
	} else {
		m--
	}
	z := m * m
	y := ((((((((log0*m+log1)*m+log2)*m+log3)*m+log4)*m+log5)*m+log6)*m+log7)*m + log8) * m * z
	fe := float32(e)
	y += ln2Lo * fe
	y -= 0.5 * z
	return m + y + ln2Hi*fe
}

// Exp32s sets dst[i] = Exp32(x[i]) for every i of x; dst may be x.
func Exp32s(dst, x []float32) {
	checkLen("Exp32s", "dst", len(dst), len(x))
	for i := expVec(dst, x); i < len(x); i++ {
		dst[i] = Exp32(x[i])
	}
}

// Sigmoid32s sets dst[i] = Sigmoid32(x[i]) for every i of x; dst may be x.
func Sigmoid32s(dst, x []float32) {
	checkLen("Sigmoid32s", "dst", len(dst), len(x))
	for i := sigmoidVec(dst, x); i < len(x); i++ {
		dst[i] = Sigmoid32(x[i])
	}
}

// Tanh32s sets dst[i] = Tanh32(x[i]) for every i of x; dst may be x.
func Tanh32s(dst, x []float32) {
	checkLen("Tanh32s", "dst", len(dst), len(x))
	for i := tanhVec(dst, x); i < len(x); i++ {
		dst[i] = Tanh32(x[i])
	}
}

// Log32s sets dst[i] = Log32(x[i]) for every i of x; dst may be x.
func Log32s(dst, x []float32) {
	checkLen("Log32s", "dst", len(dst), len(x))
	for i := 0; i < len(x); {
		i += logVec(dst[i:], x[i:])
		if i < len(x) {
			// The assembly leaves the groups of eight that hold a value
			// outside the positive normal floats, and the tail, to Log32.
			dst[i] = Log32(x[i])
			i++
		}
	}
}

// The algorithms' constants, shared by the scalar code and (through
// vconst) the assembly.
const (
	expMax = 88.72283    // ln(MaxFloat32)
	expMin = -86.64340   // ln 2^−125: the scale 2^(n−1) stays normal
	log2e  = 1.442695041 // 1/ln 2
	ln2Hi  = 0.693359375 // ln 2 split in two so that n·ln2Hi is exact
	ln2Lo  = -2.12194440e-4

	exp0 = 1.9875691500e-4
	exp1 = 1.3981999507e-3
	exp2 = 8.3334519073e-3
	exp3 = 4.1665795894e-2
	exp4 = 1.6666665459e-1
	exp5 = 5.0000001201e-1

	tanhSmall = 0.625 // the polynomial's range
	tanhOne   = 9.01  // above it tanh rounds to 1
	tanh0     = -5.70498872745e-3
	tanh1     = 2.06390887954e-2
	tanh2     = -5.37397155531e-2
	tanh3     = 1.33314422036e-1
	tanh4     = -3.33332819422e-1

	sqrtHalf = 0.70710678118654752440
	log0     = 7.0376836292e-2
	log1     = -1.1514610310e-1
	log2     = 1.1676998740e-1
	log3     = -1.2420140846e-1
	log4     = 1.4249322787e-1
	log5     = -1.6668057665e-1
	log6     = 2.0000714765e-1
	log7     = -2.4999993993e-1
	log8     = 3.3333331174e-1
)
