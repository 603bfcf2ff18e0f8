//go:build !amd64 || purego

package kernels

// PackedAccelerated reports whether MulPackedTo runs its assembly
// micro-kernel on this machine: never in this build.
func PackedAccelerated() bool { return false }

// PackedKernel names the micro-kernel MulPackedTo runs: "Go" in this build.
func PackedKernel() string { return "Go" }

// wideKernel reports false: this build has no wide micro-kernel.
func wideKernel() bool { return false }

// kernel8x16 is never called in this build (wideKernel is false).
func kernel8x16(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	panic("kernels: kernel8x16 without AVX-512")
}

// kernel4x16 computes one 4×16 block of a product; see kernel4x16Go.
func kernel4x16(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	kernel4x16Go(k, a, lda, b, c, ldc, add)
}

// kernel4x16T computes one 4×16 block of a product with a stored
// transposed; see kernel4x16TGo.
func kernel4x16T(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	kernel4x16TGo(k, a, lda, b, c, ldc, add)
}
