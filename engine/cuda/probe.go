package cuda

import (
	"fmt"
	"strings"
)

// ProbeReport says what a machine offers the GPU engine: NVRTC, the driver and GPU, cuBLAS, and whether the
// embedded kernels compile (and load, when there is a GPU).
type ProbeReport struct {
	NVRTC      string // "13.0 (path)", or ""
	NVRTCErr   error
	Device     *DeviceInfo
	DeviceErr  error
	CuBLAS     string // "version (path)", or "" without a GPU
	CuBLASErr  error
	Arch       int      // the architecture the kernels were compiled for
	Compiled   []string // "seqflow.cu: CUBIN 58032 bytes, 4 kernels loaded"
	CompileErr error
}

// OK reports whether everything the GPU engine needs is there.
func (r ProbeReport) OK() bool {
	return r.NVRTCErr == nil && r.DeviceErr == nil && r.CuBLASErr == nil && r.CompileErr == nil
}

// String is the report for people, a line per part.
func (r ProbeReport) String() string {
	var b strings.Builder
	line := func(what string, ok string, err error) {
		if err != nil {
			fmt.Fprintf(&b, "%-8s %v\n", what+":", strings.ReplaceAll(err.Error(), "\n", "\n         "))
			return
		}
		fmt.Fprintf(&b, "%-8s %s\n", what+":", ok)
	}
	line("NVRTC", r.NVRTC, r.NVRTCErr)
	dev := ""
	if r.Device != nil {
		d := r.Device
		dev = fmt.Sprintf("%d: %s, compute capability %d.%d, %d SMs, %.1f GiB; driver CUDA %d.%d (%s)",
			d.Ordinal, d.Name, d.Major, d.Minor, d.SMs, float64(d.TotalMem)/(1<<30), d.DriverVersion/1000, d.DriverVersion%1000/10, d.DriverPath)
	}
	line("GPU", dev, r.DeviceErr)
	if r.Device != nil {
		line("cuBLAS", r.CuBLAS, r.CuBLASErr)
	}
	line("kernels", fmt.Sprintf("sm_%d: %s", r.Arch, strings.Join(r.Compiled, "; ")), r.CompileErr)
	return b.String()
}

// Probe loads NVRTC and opens GPU ordinal, then compiles every embedded kernel for the GPU's architecture (sm_90
// without a GPU) and loads the result on the GPU. Each part is tried even when an earlier one failed.
func Probe(env Env, ordinal int) ProbeReport {
	var r ProbeReport
	n, err := LoadNVRTC(env)
	if err != nil {
		r.NVRTCErr = err
	} else {
		r.NVRTC = fmt.Sprintf("%d.%d (%s)", n.Major, n.Minor, n.Path())
	}
	d, err := OpenDevice(env, ordinal)
	if err != nil {
		r.DeviceErr = err
	} else {
		defer d.Close()
		info := d.Info
		r.Device = &info
		if b, err := d.OpenBLAS(env); err != nil {
			r.CuBLASErr = err
		} else {
			r.CuBLAS = fmt.Sprintf("%d (%s)", b.Version, b.Path)
			b.Close()
		}
	}
	r.Arch = 90
	if r.Device != nil {
		r.Arch = r.Device.ComputeCapability
	}
	if n == nil {
		r.CompileErr = fmt.Errorf("not compiled: no NVRTC")
		return r
	}
	for _, k := range Kernels() {
		img, err := n.Compile(k.Name, k.Code, CompileOptions{Arch: r.Arch})
		if err != nil {
			r.CompileErr = err
			return r
		}
		desc := fmt.Sprintf("%s: CUBIN %d bytes, %d kernels", k.Name, len(img), len(k.Entries))
		if d != nil {
			if err := loadAll(d, img, k.Entries); err != nil {
				r.CompileErr = err
				return r
			}
			desc += " loaded"
		}
		r.Compiled = append(r.Compiled, desc)
	}
	return r
}
