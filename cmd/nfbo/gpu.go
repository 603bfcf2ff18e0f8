package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/nfbo/nfbo/engine/cuda"
)

// newGPUCmd returns "nfbo gpu", which says whether this machine can run nfbo's GPU engine.
func newGPUCmd() *Command {
	fs := flag.NewFlagSet("gpu", flag.ContinueOnError)
	device := fs.Int("device", 0, "GPU `ordinal`")
	cmd := &Command{
		UsageLine: "gpu [-device N]",
		Short:     "say whether this machine can run the GPU engine (NVRTC, driver, GPU, kernels)",
		Long: `Gpu looks for what nfbo's GPU engine needs and says what it found: NVRTC
(libnvrtc.so.13, .12 or Debian's .11.2), the CUDA driver (libcuda.so.1) and
GPU -device, and whether the embedded CUDA kernels compile for that GPU (for
sm_90 when there is none) and load on it. Libraries are searched in
` + cuda.LibDirsEnv + `, LD_LIBRARY_PATH, the nvidia/*/lib folders of Python
environments (PyTorch's and CuPy's wheels), CUDA_HOME, CUDA_PATH and
/usr/local/cuda, then by the system; a part that is missing is reported with
every folder tried. It exits 1 unless everything is there.

When it passes, -backend cuda of "nfbo optimize" and "nfbo recon" encodes,
decodes and fine-tunes on that GPU, and "nfbo pretrain -device cuda" trains
there.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "gpu: unexpected arguments %q", args)
		}
		r := cuda.Probe(cuda.OSEnv(), *device)
		fmt.Fprint(cmd.Stdout, r)
		if !r.OK() {
			return &ExitError{Code: 1}
		}
		return nil
	}
	return cmd
}
