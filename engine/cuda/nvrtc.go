package cuda

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/kernels"
)

// CompileOptions say what NVRTC produces from a kernel source.
type CompileOptions struct {
	// Arch is the compute capability times ten (90 for the H100 and H200).
	Arch int
	// PTX asks for PTX for the virtual architecture compute_<Arch>, which the driver compiles when it loads it,
	// instead of a CUBIN for sm_<Arch>.
	PTX bool
	// Extra are further NVRTC options.
	Extra []string
}

// options returns the NVRTC command-line options. No fast math: the NLSq inverse and the cosine argmax of
// decoding must match the CPU's.
func (o CompileOptions) options() []string {
	arch := fmt.Sprintf("--gpu-architecture=sm_%d", o.Arch)
	if o.PTX {
		arch = fmt.Sprintf("--gpu-architecture=compute_%d", o.Arch)
	}
	opts := append([]string{arch, "--std=c++17", "-default-device", "-lineinfo"}, KernelDefines()...)
	return append(opts, o.Extra...)
}

// KernelDefines returns the preprocessor definitions every kernel source is compiled with: the numeric
// constants the kernels share with the CPU, taken from their Go owners so that they are never retyped in CUDA
// (a source that uses one without this definition does not compile). Each value is the shortest decimal that
// reads back as the same float64.
func KernelDefines() []string {
	def := func(name string, v float64) string { return "-D" + name + "=" + strconv.FormatFloat(v, 'g', -1, 64) }
	return []string{
		def("NFBO_NLSQ_LOG_A", kernels.NLSqLogA),
		def("NFBO_NLSQ_EXP_RATE", kernels.NLSqExpRate),
		def("NFBO_NLSQ_TANH_RATE", kernels.NLSqTanhRate),
	}
}

// CompileError reports a kernel source that NVRTC rejected, with its log.
type CompileError struct {
	Name, Log string
	Options   []string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC cannot compile %s (options %s):\n%s", e.Name, strings.Join(e.Options, " "), strings.TrimSpace(e.Log))
}
