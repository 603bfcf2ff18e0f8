package train

// BLASThreadsEnv is the environment variable that sets the number of OpenBLAS
// threads in the openblas build (default 1); the pure-Go build ignores it.
const BLASThreadsEnv = "NFBO_BLAS_THREADS"

// BLASName returns BLAS and, for OpenBLAS, the kernel set it runs, for the
// first line of a run's log: OpenBLAS picks its kernels for the CPU when it
// loads, unless OPENBLAS_CORETYPE names others, and on one AVX-512 machine
// measured here the two differed by 1.9x in matrix-product speed
// (BENCHMARKS.md, "OpenBLAS's kernels"); where OpenBLAS does not know the CPU
// the openblas build replaces its fallback (openblasCoreFor) and says so.
func BLASName() string {
	s := BLASKernels()
	if n := blasNote(); n != "" {
		s += " (" + n + ")"
	}
	return s
}

// BLASKernels returns BLAS and, for OpenBLAS, the kernel set it runs ("OpenBLAS (netlib), Haswell kernels"):
// what a run's float32 and float64 products round by. Fine-tuning makes a run's molecules depend on it: the same
// run on OpenBLAS's Haswell and Cooperlake kernels buys other molecules, where nfbo's own AVX2 and AVX-512
// kernels buy the same ones (BENCHMARKS.md, "Runs repeated across CPUs").
func BLASKernels() string {
	if c := blasCore(); c != "" {
		return BLAS + ", " + c + " kernels"
	}
	return BLAS
}
