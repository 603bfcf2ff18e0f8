//go:build openblas

package train

/*
#cgo LDFLAGS: -lopenblas -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

void openblas_set_num_threads(int);
char* openblas_get_corename(void);

// nfbo_openblas_load_core makes a DYNAMIC_ARCH OpenBLAS (Debian's) load the kernel set name in place of the
// one it chose when it loaded, as OPENBLAS_CORETYPE would have made it choose: gotoblas_dynamic_quit forgets
// the choice and gotoblas_dynamic_init makes it again from the variable, set for the call only. It returns 0
// where the library has no such functions (a build for one CPU). It must run before any product.
static int nfbo_openblas_load_core(const char *name) {
	void (*quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
	void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
	if (quit == NULL || init == NULL || setenv("OPENBLAS_CORETYPE", name, 1) != 0) {
		return 0;
	}
	quit();
	init();
	unsetenv("OPENBLAS_CORETYPE");
	return 1;
}

// nfbo_openblas_dynamic reports whether the library chooses its kernels at load time (DYNAMIC_ARCH).
static int nfbo_openblas_dynamic(void) { return dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init") != NULL; }
*/
import "C"

import (
	"os"
	"strconv"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// With the openblas build tag, gonum's BLAS (the products of gemm and the
// GP's algebra) runs on OpenBLAS. gonum selects its BLAS through
// process-wide setters, so this is the one place the package sets global
// state, once, at start-up.
//
// OpenBLAS runs one thread unless NFBO_BLAS_THREADS says otherwise: its
// worker threads spin while they wait, so on a machine whose cores are all
// busy (two benchmark runs on two cores, an objective worker beside the
// optimiser) several threads per process were measured slower than pure Go,
// and the optimiser's products are small (B = 32 fine-tuning steps, GPs of at
// most a few thousand points). With one thread the CPU step's loops split
// their products over the cores themselves (gemm.go), which made training
// steps faster than two OpenBLAS threads did, pretraining included
// (BENCHMARKS.md, "The products split over the cores").
//
// Where OpenBLAS does not know the CPU it loads its SSE3 fallback, about 8x
// slower than the AVX-512 kernels on the one such CPU measured; unless
// OPENBLAS_CORETYPE made the choice, init loads the widest set the CPU runs
// instead (openblasCoreFor), before any product.
func init() {
	impl := netlib.Implementation{}
	blas32.Use(impl)
	blas64.Use(impl)
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); !set {
		openblasReplaced = loadOpenBLASCore(openblasCoreFor(blasCore(), hostVectorUnits()))
	}
	threads := 1
	if n, err := strconv.Atoi(os.Getenv(BLASThreadsEnv)); err == nil && n > 0 {
		threads = n
	}
	C.openblas_set_num_threads(C.int(threads))
	openblasThreads = threads
}

// openblasThreads is the thread count init gave OpenBLAS.
var openblasThreads int

// openblasReplaced is the kernel set OpenBLAS chose at load time when init replaced it, else "".
var openblasReplaced string

// loadOpenBLASCore makes OpenBLAS run the kernel set name ("" keeps its own) and returns the set it replaced,
// or "" where it replaced none.
func loadOpenBLASCore(name string) string {
	if name == "" {
		return ""
	}
	before := blasCore()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.nfbo_openblas_load_core(cname) == 0 || blasCore() == before {
		return ""
	}
	return before
}

// openblasDynamic reports whether OpenBLAS chooses its kernels at load time, so that OPENBLAS_CORETYPE and
// loadOpenBLASCore can change them (Debian's can; a build for one CPU cannot).
func openblasDynamic() bool { return C.nfbo_openblas_dynamic() != 0 }

// blasNote says, for BLASName, that init replaced OpenBLAS's choice of kernels.
func blasNote() string {
	if openblasReplaced == "" {
		return ""
	}
	return "OpenBLAS's " + openblasReplaced + " fallback replaced: it does not know this CPU"
}

// blasSingleThreaded reports whether each BLAS call runs on its caller's
// thread alone, so that gemm splits large products over the cores itself.
func blasSingleThreaded() bool { return openblasThreads == 1 }

// BLAS names the BLAS implementation this build uses for the flow's training and the GP's algebra.
const BLAS = "OpenBLAS (netlib)"

// blasCore returns the kernel set OpenBLAS chose for this CPU at start-up
// ("Haswell", "SkylakeX", ...).
func blasCore() string { return C.GoString(C.openblas_get_corename()) }

// packedProducts reports false: with OpenBLAS the CPU step's products run on
// it (kernels' micro-kernel serves the LSTM recurrence only).
func packedProducts() bool { return false }
