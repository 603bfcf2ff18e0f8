package train

import (
	"math"

	"github.com/nfbo/nfbo/kernels"
)

// The loops' element-wise time is mostly exp, tanh and log. In float32 they use kernels' float32 forms (Exp32,
// Tanh32, Log32, and the slice forms that run eight lanes at a time), accurate to a few units in the last place
// of a float32, which is what the step keeps anyway; float64 instantiations use the math package, so the
// float64 reference checks of the loops are unchanged.

// expOf, tanhOf and logOf are kernels' Exp32, Tanh32 and Log32 when f32
// is set, else the math package's.
func expOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(kernels.Exp32(float32(x)))
	}
	return math.Exp(x)
}

func tanhOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(kernels.Tanh32(float32(x)))
	}
	return math.Tanh(x)
}

func logOf(f32 bool, x float64) float64 {
	if f32 {
		return float64(kernels.Log32(float32(x)))
	}
	return math.Log(x)
}

// addTo sets dst[i] = a[i] + b[i], and mulTo dst[i] = a[i]·b[i], for every
// i of a (dst may be a or b): in float32 through kernels' slice forms,
// eight lanes at a time and the loop's bits.
func addTo[T float32 | float64](dst, a, b []T) {
	if d, ok := any(dst).([]float32); ok {
		kernels.Add32s(d, any(a).([]float32), any(b).([]float32))
		return
	}
	for i, v := range a {
		dst[i] = v + b[i]
	}
}

func mulTo[T float32 | float64](dst, a, b []T) {
	if d, ok := any(dst).([]float32); ok {
		kernels.Mul32s(d, any(a).([]float32), any(b).([]float32))
		return
	}
	for i, v := range a {
		dst[i] = v * b[i]
	}
}
