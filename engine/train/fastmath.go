package train

import (
	"math"
	"unsafe"
)

// The LSTM's gates spend most of their element-wise time in exp and tanh. In float32 the float64 math package
// does twice the work needed: exp32 and tanh32 are single-precision versions (the Cephes library's expf and
// tanhf: range reduction and a short minimax polynomial) accurate to a few units in the last place of a float32,
// which is what the float32 graph keeps anyway. float64 instantiations use the math package, so the float64
// reference checks of the fused ops are unchanged.

// sigmoid returns 1/(1+e^−x).
func sigmoid[T float32 | float64](x T) T {
	if unsafe.Sizeof(x) == 4 { // decided at compile time for each instantiation
		return T(1 / (1 + exp32(-float32(x))))
	}
	return T(1 / (1 + math.Exp(-float64(x))))
}

// tanhT returns tanh(x).
func tanhT[T float32 | float64](x T) T {
	if unsafe.Sizeof(x) == 4 {
		return T(tanh32(float32(x)))
	}
	return T(math.Tanh(float64(x)))
}

// exp32 returns e^x in float32: +Inf above ln(MaxFloat32), 0 below −86.6 (e^x < 2.4e−38, near the smallest
// normal float32), NaN for NaN.
func exp32(x float32) float32 {
	const (
		maxArg = 88.72283    // ln(MaxFloat32)
		minArg = -86.64340   // ln 2^−125: the scale 2^(n−1) below stays normal
		log2e  = 1.442695041 // 1/ln 2
		ln2Hi  = 0.693359375 // ln 2 split in two so that n·ln2Hi is exact
		ln2Lo  = -2.12194440e-4
	)
	switch {
	case x > maxArg:
		return float32(math.Inf(1))
	case x < minArg:
		return 0
	case x != x:
		return x
	}
	// x = n·ln 2 + r with |r| ≤ ln2/2; e^x = 2^n · e^r. Adding 1.5·2^23 rounds x·log2e to an integer without
	// a call (float32 has 23 fraction bits).
	const round = 12582912
	n := (x*log2e + round) - round
	r := x - n*ln2Hi - n*ln2Lo
	p := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	p = p*r*r + r + 1
	// 2^n for n in [−126, 128], built from exponent bits as 2^(n−1)·2 so that n = 128 does not overflow.
	return p * math.Float32frombits(uint32(int32(n)+126)<<23) * 2
}

// tanh32 returns tanh(x) in float32.
func tanh32(x float32) float32 {
	z := x
	if z < 0 {
		z = -z
	}
	if z > 0.625 {
		if z > 9.01 { // tanh rounds to ±1 in float32
			z = 1
		} else {
			z = 1 - 2/(exp32(2*z)+1)
		}
		if x < 0 {
			z = -z
		}
		return z
	}
	// An odd polynomial on [−0.625, 0.625], where 1 − 2/(e^2x+1) would lose digits to cancellation.
	s := x * x
	return ((((-5.70498872745e-3*s+2.06390887954e-2)*s-5.37397155531e-2)*s+1.33314422036e-1)*s-3.33332819422e-1)*s*x + x
}

// sigmoid32s replaces every x[i] by 1/(1+e^−x[i]), as sigmoid does for a
// float32. The fused ops' float32 loops call these slice forms rather than
// the generic scalar ones, which the compiler neither inlines nor
// specialises (each call goes through the instantiation's dictionary).
func sigmoid32s(x []float32) {
	for i, v := range x {
		x[i] = 1 / (1 + exp32(-v))
	}
}

// tanh32s replaces every x[i] by tanh32(x[i]).
func tanh32s(x []float32) {
	for i, v := range x {
		x[i] = tanh32(v)
	}
}

// log32 returns ln x in float32 (the Cephes library's logf: x = m·2^e with
// m in [√½, √2), ln(1+(m−1)) by a minimax polynomial, plus e·ln 2 in two
// parts): −Inf at 0, NaN below 0 and for NaN, +Inf at +Inf. Subnormal x
// are scaled by 2^23 first.
func log32(x float32) float32 {
	const (
		sqrtHalf = 0.70710678118654752440
		ln2Hi    = 0.693359375
		ln2Lo    = -2.12194440e-4
	)
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
	y := ((((((((7.0376836292e-2*m-1.1514610310e-1)*m+1.1676998740e-1)*m-1.2420140846e-1)*m+
		1.4249322787e-1)*m-1.6668057665e-1)*m+2.0000714765e-1)*m-2.4999993993e-1)*m + 3.3333331174e-1) * m * z
	fe := float32(e)
	y += ln2Lo * fe
	y -= 0.5 * z
	return m + y + ln2Hi*fe
}

// expOf, tanhOf and logOf are exp32, tanh32 and log32 when f32
// is set, else the math package's.
func expOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(exp32(float32(x)))
	}
	return math.Exp(x)
}

func tanhOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(tanh32(float32(x)))
	}
	return math.Tanh(x)
}

func logOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(log32(float32(x)))
	}
	return math.Log(x)
}
