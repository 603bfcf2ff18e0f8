package train

// BLASThreadsEnv is the environment variable that sets the number of OpenBLAS
// threads in the openblas build (default 1); the pure-Go build ignores it.
const BLASThreadsEnv = "NFBO_BLAS_THREADS"
