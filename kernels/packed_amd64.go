//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// packedAsm says whether the assembly micro-kernel can run: it needs AVX2's
// 256-bit vectors and FMA (x86 cores since 2013; the OS must save the vector
// registers, which cpu checks).
var packedAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// packedWide says whether the 8-row AVX-512 micro-kernel can run (its 512-bit
// registers saved by the OS, which cpu checks too).
var packedWide = packedAsm && cpu.X86.HasAVX512F

// PackedAccelerated reports whether MulPackedTo runs its assembly
// micro-kernel on this machine.
func PackedAccelerated() bool { return packedAsm }

// PackedKernel names the micro-kernel MulPackedTo runs on this machine: "AVX-512" (8×16 blocks, the 4×16
// AVX2 one for the rest), "AVX2/FMA" or "Go".
func PackedKernel() string {
	switch {
	case packedWide:
		return "AVX-512"
	case packedAsm:
		return "AVX2/FMA"
	}
	return "Go"
}

// wideKernel reports whether MulPackedTo runs kernel8x16.
func wideKernel() bool { return packedWide }

// sgemm8x16 is sgemm4x16 for 8 rows in AVX-512 (packed_amd64.s).
//
//go:noescape
func sgemm8x16(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)

// kernel8x16 computes one 8×16 block of a product; only where packedWide.
func kernel8x16(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	_ = a[7*lda+k-1]
	_ = b[k*PanelCols-1]
	_ = c[7*ldc+PanelCols-1]
	sgemm8x16(k, &a[0], lda, &b[0], &c[0], ldc, add)
}

// sgemm4x16 is kernel4x16Go in AVX2 and FMA (packed_amd64.s) on raw
// pointers: a is 4 rows of k values (row stride lda), b a k×16 panel, c a
// 4×16 block (row stride ldc).
//
//go:noescape
func sgemm4x16(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)

// kernel4x16 computes one 4×16 block of a product; see kernel4x16Go.
func kernel4x16(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	// The assembly does no bounds checks: these make every access it does
	// lie inside the slices.
	_ = a[3*lda+k-1]
	_ = b[k*PanelCols-1]
	_ = c[3*ldc+PanelCols-1]
	if packedAsm {
		sgemm4x16(k, &a[0], lda, &b[0], &c[0], ldc, add)
		return
	}
	kernel4x16Go(k, a, lda, b, c, ldc, add)
}

// sgemm4x16T is kernel4x16TGo in AVX2 and FMA (packed_amd64.s): a holds the
// block's 4 rows as columns, k rows of 4 values at row stride lda.
//
//go:noescape
func sgemm4x16T(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)

// kernel4x16T computes one 4×16 block of a product with a stored
// transposed; see kernel4x16TGo.
func kernel4x16T(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	_ = a[(k-1)*lda+3]
	_ = b[k*PanelCols-1]
	_ = c[3*ldc+PanelCols-1]
	if packedAsm {
		sgemm4x16T(k, &a[0], lda, &b[0], &c[0], ldc, add)
		return
	}
	kernel4x16TGo(k, a, lda, b, c, ldc, add)
}
