package kernels

import "math"

// Element-wise float32 arithmetic on slices for the training engine's
// passes between its products (bias rows, ReLU, dropout, gradient sums).
// The Go compiler does not vectorise loops, so each of these runs eight
// lanes at a time in AVX2 where VectorMathAccelerated says so. Every lane
// does the scalar loop's single operation (no fused multiply-add), so the
// results are the loop's bits whichever code runs.

// Add32s sets dst[i] = a[i] + b[i] for every i of a; dst may be a or b.
func Add32s(dst, a, b []float32) {
	checkLen("Add32s", "b", len(b), len(a))
	checkLen("Add32s", "dst", len(dst), len(a))
	i := binaryVec(dst, a, b, add8)
	for ; i < len(a); i++ {
		dst[i] = a[i] + b[i]
	}
}

// Mul32s sets dst[i] = a[i] · b[i] for every i of a; dst may be a or b.
func Mul32s(dst, a, b []float32) {
	checkLen("Mul32s", "b", len(b), len(a))
	checkLen("Mul32s", "dst", len(dst), len(a))
	i := binaryVec(dst, a, b, mul8)
	for ; i < len(a); i++ {
		dst[i] = a[i] * b[i]
	}
}

// AddReLU32s sets dst[i] = max(a[i] + b[i], 0) for every i of a, with Go's
// max: a NaN sum stays NaN and a zero sum gives +0. dst may be a or b.
func AddReLU32s(dst, a, b []float32) {
	checkLen("AddReLU32s", "b", len(b), len(a))
	checkLen("AddReLU32s", "dst", len(dst), len(a))
	i := binaryVec(dst, a, b, addReLU8)
	for ; i < len(a); i++ {
		dst[i] = max(a[i]+b[i], 0)
	}
}

// ReLUGrad32s zeroes d[i] wherever h[i] is zero (+0 or −0), for every i of
// d: the gradient through a ReLU whose outputs are h. A NaN in h keeps d[i].
func ReLUGrad32s(d, h []float32) {
	checkLen("ReLUGrad32s", "h", len(h), len(d))
	i := reluGradVec(d, h)
	for ; i < len(d); i++ {
		if math.Float32bits(h[i])&0x7fffffff == 0 {
			d[i] = 0
		}
	}
}
