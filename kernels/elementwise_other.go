//go:build !amd64 || purego

package kernels

// binaryVec and reluGradVec do the leading part of the element-wise slice
// functions that the assembly can and return its length: none here.
func binaryVec(dst, a, b []float32, asm func(n int, dst, a, b *float32)) int { return 0 }

func reluGradVec(d, h []float32) int { return 0 }

// The assembly's names, so that the slice functions compile unchanged.
var add8, mul8, addReLU8 func(n int, dst, a, b *float32)

// nlsqGradVec does the leading part of NLSqGrad32s that the assembly can
// and returns its length: none here.
func nlsqGradVec(out, in []float32, n int) int { return 0 }

// nlsqSolveVec does the leading part of a batch of NLSqSolveTo that the assembly can and returns its length:
// none here.
func nlsqSolveVec(dst, u []float32, p *nlsqPseudos, m int) (done int, fallback uint64) { return 0, 0 }
