//go:build openblas

package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// sgemmImpl returns the BLAS that BenchmarkSgemm times: OpenBLAS through
// gonum's netlib cgo binding, as engine/train uses it under the same tag
// (build with CGO_LDFLAGS=-lopenblas). The package under test itself never
// imports netlib, so the default build needs no cgo.
func sgemmImpl() (blas.Float32Level3, string) { return netlib.Implementation{}, "openblas" }
