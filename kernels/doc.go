// Package kernels holds the numeric building blocks of SeqFlow inference:
// dense layers, the LSTM cell, the NLSq and affine element-wise transforms
// and the cosine-nearest-row search that turns vectors back into tokens;
// and a product with a pre-packed right operand (Packed, MulPackedTo; an
// AVX2 micro-kernel on amd64) for the many small products by one matrix that
// an LSTM's recurrence makes in training; and float32 exp, tanh, sigmoid and
// log (Exp32 and Exp32s, and so on) for the element-wise math of training
// and of the LSTM cell, the slice forms eight lanes at a time in AVX2/FMA on
// amd64; and training loops in AVX2, bit for bit their Go forms: Adam's
// update (AdamUpdate), the LSTM cell's gradient (LSTMCellGrad32), the NLSq
// transform's gradient (NLSqGrad, NLSqGrad32s) and the element-wise passes
// between the products (Add32s, Mul32s, AddReLU32s, ReLUGrad32s).
//
// Conventions, after gonum's mat and blas packages:
//   - Data are flat row-major float32 slices. A matrix with r rows and c
//     columns ("r×c") has element (i, j) at index i·c+j; the shapes are
//     passed explicitly and written in every doc comment.
//   - The destination comes first. Inputs are never modified, except where a
//     doc comment allows the destination to alias an input.
//   - A slice of the wrong length is a programmer error and panics with a
//     message that starts with "kernels: ". Data problems (a NaN, a
//     non-finite parameter) are not checked here; they propagate as IEEE
//     values for the caller to detect.
//   - Inner loops do not allocate; scratch space is an argument.
//
// Axis names follow the project: n rows (B·T or B), F features per token,
// H LSTM units, V vocabulary size.
package kernels

import "fmt"

// checkLen panics if len(s) < want, naming the argument; kernels accept
// longer slices so that callers can pass reused buffers sized for the
// largest batch.
func checkLen(fn, name string, s int, want int) {
	if s < want {
		panic(fmt.Sprintf("kernels: %s: len(%s) = %d, want at least %d", fn, name, s, want))
	}
}

// checkDims panics on a non-positive dimension.
func checkDims(fn string, dims ...int) {
	for _, d := range dims {
		if d < 0 {
			panic(fmt.Sprintf("kernels: %s: negative dimension %d", fn, d))
		}
	}
}
