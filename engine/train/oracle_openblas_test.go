//go:build openblas

package train

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// The tests' gorgonia graph runs its products on OpenBLAS too in the
// openblas build, as gemm's do (blas_openblas.go).
func init() { G.Use(netlib.Implementation{}) }
