//go:build !openblas

package train

import "github.com/nfbo/nfbo/kernels"

// BLAS names the BLAS implementation this build uses for the flow's training and the GP's algebra.
const BLAS = "gonum (pure Go)"

// blasSingleThreaded reports false: gonum's Gemm splits large products over
// GOMAXPROCS goroutines itself.
func blasSingleThreaded() bool { return false }

// blasCore names the kernels the flow's products run on: "" (gonum's) or,
// where the assembly runs, kernels' AVX2/FMA micro-kernel.
func blasCore() string {
	if packedProducts() {
		return "float32 products on nfbo's AVX2/FMA"
	}
	return ""
}

// packedProducts reports whether the CPU step's float32 products run on
// kernels' packed micro-kernel (AVX2/FMA, on every core through gemm's
// split) rather than gonum's Gemm: wherever the assembly runs, since it is
// several times faster than gonum's pure-Go kernels at the flow's shapes
// (BENCHMARKS.md, "The pure-Go build on the packed micro-kernel").
func packedProducts() bool { return kernels.PackedAccelerated() }

// blasNote returns "": gonum has no kernels to choose.
func blasNote() string { return "" }
