//go:build cgo

package gpustep

import (
	"fmt"

	"github.com/nfbo/nfbo/engine/cuda"
)

// cudaBackend is the backend on engine/cuda: a GPU's primary context, a cuBLAS handle and the compiled kernels.
type cudaBackend struct {
	dev  *cuda.Device
	blas *cuda.BLAS
	ks   map[string]*cuda.Kernel
}

// openCUDA loads NVRTC and the driver and opens GPU ordinal (both looked for even when one fails, so that the
// error names every missing part), then cuBLAS, and compiles and loads the kernels.
func openCUDA(env cuda.Env, ordinal int) (backend, cuda.DeviceInfo, error) {
	n, nerr := cuda.LoadNVRTC(env)
	d, derr := cuda.OpenDevice(env, ordinal)
	if nerr != nil || derr != nil {
		if d != nil {
			d.Close()
		}
		return nil, cuda.DeviceInfo{}, &UnavailableError{Ordinal: ordinal, NVRTC: nerr, GPU: derr}
	}
	b, err := d.OpenBLAS(env)
	if err != nil {
		d.Close()
		return nil, cuda.DeviceInfo{}, &UnavailableError{Ordinal: ordinal, CuBLAS: err}
	}
	ks, err := d.LoadKernels(n)
	if err == nil {
		err = missingKernels(func(name string) bool { return ks[name] != nil })
	}
	if err != nil {
		b.Close()
		d.Close()
		return nil, cuda.DeviceInfo{}, &UnavailableError{Ordinal: ordinal, Kernels: err}
	}
	return &cudaBackend{dev: d, blas: b, ks: ks}, d.Info, nil
}

func (c *cudaBackend) alloc(bytes int) (cuda.Ptr, error)        { return c.dev.Alloc(bytes) }
func (c *cudaBackend) free(p cuda.Ptr) error                    { return c.dev.Free(p) }
func (c *cudaBackend) upload(dst cuda.Ptr, src []float32) error { return c.dev.Upload(dst, src) }
func (c *cudaBackend) uploadInt32(dst cuda.Ptr, src []int32) error {
	return c.dev.UploadInt32(dst, src)
}
func (c *cudaBackend) download(dst []float32, src cuda.Ptr) error { return c.dev.Download(dst, src) }
func (c *cudaBackend) zero(dst cuda.Ptr, n int) error             { return c.dev.Zero(dst, n) }
func (c *cudaBackend) copy(dst, src cuda.Ptr, n int) error        { return c.dev.Copy(dst, src, n) }
func (c *cudaBackend) downloadFloat64(dst []float64, src cuda.Ptr) error {
	return c.dev.DownloadFloat64(dst, src)
}

func (c *cudaBackend) gemm(tA, tB bool, alpha float32, a cuda.Ptr, ar, ac int, b cuda.Ptr, br, bc int, beta float32, cm cuda.Ptr) error {
	return c.blas.Gemm(tA, tB, alpha, a, ar, ac, b, br, bc, beta, cm)
}

func (c *cudaBackend) launch(kernel string, g cuda.Grid, args ...any) error {
	k := c.ks[kernel]
	if k == nil {
		return fmt.Errorf("no kernel %s", kernel)
	}
	return k.Launch(g, args...)
}

func (c *cudaBackend) close() error {
	err := c.blas.Close()
	if e := c.dev.Close(); err == nil {
		err = e
	}
	return err
}
