//go:build openblas

package train

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
char* openblas_get_corename(void);
*/
import "C"

import (
	"os"
	"strconv"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// With the openblas build tag, gorgonia's matrix products and gonum's BLAS
// run on OpenBLAS. gorgonia and gonum select their BLAS through process-wide
// setters, so this is the one place the package sets global state, once, at
// start-up.
//
// OpenBLAS runs one thread unless NFBO_BLAS_THREADS says otherwise: its
// worker threads spin while they wait, so on a machine whose cores are all
// busy (two benchmark runs on two cores, an objective worker beside the
// optimiser) several threads per process were measured slower than pure Go,
// and the optimiser's products are small (B = 32 fine-tuning steps, GPs of at
// most a few thousand points). With one thread the flow's fused ops split
// their products over the cores themselves (gemm.go), which made training
// steps faster than two OpenBLAS threads did, pretraining included
// (BENCHMARKS.md, "The products split over the cores").
func init() {
	impl := netlib.Implementation{}
	G.Use(impl)
	blas32.Use(impl)
	blas64.Use(impl)
	threads := 1
	if n, err := strconv.Atoi(os.Getenv(BLASThreadsEnv)); err == nil && n > 0 {
		threads = n
	}
	C.openblas_set_num_threads(C.int(threads))
	openblasThreads = threads
}

// openblasThreads is the thread count init gave OpenBLAS.
var openblasThreads int

// blasSingleThreaded reports whether each BLAS call runs on its caller's
// thread alone, so that gemm splits large products over the cores itself.
func blasSingleThreaded() bool { return openblasThreads == 1 }

// BLAS names the BLAS implementation this build uses for the flow's training and the GP's algebra.
const BLAS = "OpenBLAS (netlib)"

// blasCore returns the kernel set OpenBLAS chose for this CPU at start-up
// ("Haswell", "SkylakeX", ...).
func blasCore() string { return C.GoString(C.openblas_get_corename()) }

// packedProducts reports false: with OpenBLAS the fused ops' products run on
// it (kernels' micro-kernel serves the LSTM recurrence only).
func packedProducts() bool { return false }
