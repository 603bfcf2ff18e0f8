//go:build openblas

package train

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// With the openblas build tag (and CGO_LDFLAGS=-lopenblas), gorgonia's
// matrix products and gonum's BLAS run on OpenBLAS, 2.6–3× faster training
// steps on the project's 2-core machines (go_stack.md §2). gorgonia and
// gonum select their BLAS through process-wide setters, so this is the one
// place the package sets global state, once, at start-up.
func init() {
	impl := netlib.Implementation{}
	G.Use(impl)
	blas32.Use(impl)
	blas64.Use(impl)
}

// blasName names the BLAS implementation this build uses.
const blasName = "OpenBLAS (netlib)"
