//go:build !openblas

package train

// blasName names the BLAS implementation this build uses.
const blasName = "gonum (pure Go)"
