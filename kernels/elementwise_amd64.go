//go:build amd64 && !purego

package kernels

// The assembly of elementwise.go: each does n entries (n > 0, a multiple
// of 8).

//go:noescape
func add8(n int, dst, a, b *float32)

//go:noescape
func mul8(n int, dst, a, b *float32)

//go:noescape
func addReLU8(n int, dst, a, b *float32)

//go:noescape
func reluGrad8(n int, d, h *float32)

// binaryVec runs one of add8, mul8 and addReLU8 on the leading multiple of
// eight entries of a and returns its length; the caller has checked that
// dst and b are as long as a.
func binaryVec(dst, a, b []float32, asm func(n int, dst, a, b *float32)) int {
	n := len(a) &^ 7
	if !packedAsm || n == 0 {
		return 0
	}
	_, _ = dst[n-1], b[n-1]
	asm(n, &dst[0], &a[0], &b[0])
	return n
}

// reluGradVec does the leading multiple of eight entries of ReLUGrad32s.
func reluGradVec(d, h []float32) int {
	n := len(d) &^ 7
	if !packedAsm || n == 0 {
		return 0
	}
	_ = h[n-1]
	reluGrad8(n, &d[0], &h[0])
	return n
}
