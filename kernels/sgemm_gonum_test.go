//go:build !openblas

package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// sgemmImpl returns the BLAS that BenchmarkSgemm times: gonum's pure-Go
// implementation, what the default (cgo-free) build runs.
func sgemmImpl() (blas.Float32Level3, string) { return gonum.Implementation{}, "gonum" }
