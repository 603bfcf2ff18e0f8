package train

import "golang.org/x/sys/cpu"

// openblasFallback is the kernel set OpenBLAS loads on an x86-64 CPU it does not know. Debian 12's OpenBLAS
// 0.3.21 does not know Intel's 5th-generation Xeon (family 6, model 207): there it ran float32 products at
// 19 GFLOP/s a core, against 150 on the AVX-512 kernels the CPU runs (BENCHMARKS.md, "OpenBLAS on a CPU it
// does not know").
const openblasFallback = "Prescott"

// vectorUnits is what the choice of OpenBLAS's kernels reads of the CPU: its vector instructions, each counted
// only where the operating system also saves their registers (x/sys/cpu checks both).
type vectorUnits struct{ avx, avx2FMA, avx512 bool }

// hostVectorUnits returns this CPU's vectorUnits; all false off x86-64.
func hostVectorUnits() vectorUnits {
	x := cpu.X86
	return vectorUnits{
		avx:     x.HasAVX,
		avx2FMA: x.HasAVX2 && x.HasFMA,
		avx512:  x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL,
	}
}

// openblasCoreFor returns the kernel set OpenBLAS should load in place of chosen, the one it chose itself, or ""
// to keep chosen. Only OpenBLAS's fallback for a CPU it does not know is replaced, by the widest of OpenBLAS's
// x86-64 sets that the CPU runs (SkylakeX's products are also Cooperlake's and Sapphire Rapids'); any other
// choice, OpenBLAS's own or OPENBLAS_CORETYPE's, is kept.
func openblasCoreFor(chosen string, v vectorUnits) string {
	if chosen != openblasFallback {
		return ""
	}
	switch {
	case v.avx512:
		return "SkylakeX"
	case v.avx2FMA:
		return "Haswell"
	case v.avx:
		return "Sandybridge"
	}
	return ""
}
