package train

import (
	"math"
	"unsafe"

	"github.com/nfbo/nfbo/kernels"
)

// sigmoid returns 1/(1+e^−x).
func sigmoid[T float32 | float64](x T) T {
	if unsafe.Sizeof(x) == 4 { // decided at compile time for each instantiation
		return T(1 / (1 + kernels.Exp32(-float32(x))))
	}
	return T(1 / (1 + math.Exp(-float64(x))))
}

// tanhT returns tanh(x).
func tanhT[T float32 | float64](x T) T {
	if unsafe.Sizeof(x) == 4 {
		return T(kernels.Tanh32(float32(x)))
	}
	return T(math.Tanh(float64(x)))
}
