package gpustep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nfbo/nfbo/engine/cuda"
)

// UnavailableError says which parts of the GPU training engine a machine lacks: NVRTC (which compiles the
// kernels), the CUDA driver libcuda.so.1 with a GPU, cuBLAS, or the kernels themselves. A nil field is a part
// found. It is the answer of Open on a machine without a usable GPU.
type UnavailableError struct {
	Ordinal                     int
	NVRTC, GPU, CuBLAS, Kernels error
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gpustep: cannot train on GPU %d; missing:", e.Ordinal)
	part := func(what string, err error) {
		if err != nil {
			fmt.Fprintf(&b, "\n  %s: %s", what, strings.ReplaceAll(err.Error(), "\n", "\n    "))
		}
	}
	part("NVRTC (libnvrtc.so.13, .12 or .11.2, to compile the kernels)", e.NVRTC)
	part(fmt.Sprintf("the CUDA driver (libcuda.so.1) and GPU %d", e.Ordinal), e.GPU)
	part("cuBLAS (libcublas.so.13 or .12)", e.CuBLAS)
	part("the kernels", e.Kernels)
	b.WriteString("\n(nfbo gpu reports what this machine has)")
	return b.String()
}

// Unwrap returns the parts' errors.
func (e *UnavailableError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.NVRTC, e.GPU, e.CuBLAS, e.Kernels} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Open opens GPU ordinal with the libraries found through env (cuda.SearchDirs), compiles the embedded kernels
// for it and returns its Device. Without a usable GPU the error is an *UnavailableError naming each part that is
// missing; it comes in well under a second, since NVRTC and the driver are looked for before anything is
// compiled. Close the Device when done.
func Open(env cuda.Env, ordinal int) (*Device, error) {
	b, info, err := openCUDA(env, ordinal)
	if err != nil {
		return nil, err
	}
	return newDevice(b, info)
}

// missingKernels returns an error naming the kernels the Device launches that have is false for, or nil.
func missingKernels(has func(string) bool) error {
	var miss []string
	for _, k := range kernelNames {
		if !has(k) {
			miss = append(miss, k)
		}
	}
	if len(miss) > 0 {
		return errors.New("the compiled sources define no " + strings.Join(miss, ", "))
	}
	return nil
}
