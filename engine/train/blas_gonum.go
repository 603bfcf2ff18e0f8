//go:build !openblas

package train

// BLAS names the BLAS implementation this build uses for the flow's training and the GP's algebra.
const BLAS = "gonum (pure Go)"

// blasSingleThreaded reports false: gonum's Gemm splits large products over
// GOMAXPROCS goroutines itself.
func blasSingleThreaded() bool { return false }

// blasCore returns "": gonum has no kernel sets to choose from.
func blasCore() string { return "" }
