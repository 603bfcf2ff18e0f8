//go:build openblas

package gp

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// With -tags openblas (and CGO_LDFLAGS=-lopenblas) the tests and benchmarks of this package run on OpenBLAS.
// The package itself never selects a BLAS: the program does, once, with blas64.Use.
func init() { blas64.Use(netlib.Implementation{}) }
