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
	th   *cuda.Thread // inside do
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

// do runs f with every call of the backend made directly on the device goroutine (cuda.Device.Do): a step in
// one crossing.
func (c *cudaBackend) do(f func() error) error {
	if c.th != nil { // already inside
		return f()
	}
	return c.dev.Do(func(th *cuda.Thread) error {
		c.th = th
		defer func() { c.th = nil }()
		return f()
	})
}

// The calls go through the Thread inside do, and hop to the device goroutine outside it.

func (c *cudaBackend) alloc(bytes int) (cuda.Ptr, error) {
	if c.th != nil {
		return c.th.Alloc(bytes)
	}
	return c.dev.Alloc(bytes)
}

func (c *cudaBackend) free(p cuda.Ptr) error {
	if c.th != nil {
		return c.th.Free(p)
	}
	return c.dev.Free(p)
}

func (c *cudaBackend) upload(dst cuda.Ptr, src []float32) error {
	if c.th != nil {
		return c.th.Upload(dst, src)
	}
	return c.dev.Upload(dst, src)
}

func (c *cudaBackend) uploadInt32(dst cuda.Ptr, src []int32) error {
	if c.th != nil {
		return c.th.UploadInt32(dst, src)
	}
	return c.dev.UploadInt32(dst, src)
}

func (c *cudaBackend) download(dst []float32, src cuda.Ptr) error {
	if c.th != nil {
		return c.th.Download(dst, src)
	}
	return c.dev.Download(dst, src)
}

func (c *cudaBackend) downloadFloat64(dst []float64, src cuda.Ptr) error {
	if c.th != nil {
		return c.th.DownloadFloat64(dst, src)
	}
	return c.dev.DownloadFloat64(dst, src)
}

func (c *cudaBackend) zero(dst cuda.Ptr, n int) error {
	if c.th != nil {
		return c.th.Zero(dst, n)
	}
	return c.dev.Zero(dst, n)
}

func (c *cudaBackend) copy(dst, src cuda.Ptr, n int) error {
	if c.th != nil {
		return c.th.Copy(dst, src, n)
	}
	return c.dev.Copy(dst, src, n)
}

func (c *cudaBackend) gemm(tA, tB bool, alpha float32, a cuda.Ptr, ar, ac int, b cuda.Ptr, br, bc int, beta float32, cm cuda.Ptr) error {
	if c.th != nil {
		return c.th.Gemm(c.blas, tA, tB, alpha, a, ar, ac, b, br, bc, beta, cm)
	}
	return c.blas.Gemm(tA, tB, alpha, a, ar, ac, b, br, bc, beta, cm)
}

func (c *cudaBackend) launch(kernel string, g cuda.Grid, args ...any) error {
	k := c.ks[kernel]
	if k == nil {
		return fmt.Errorf("no kernel %s", kernel)
	}
	if c.th != nil {
		return c.th.Launch(k, g, args...)
	}
	return k.Launch(g, args...)
}

func (c *cudaBackend) setTF32(on bool) error { return c.blas.SetTF32(on) }

func (c *cudaBackend) sync() error {
	if c.th != nil {
		return c.th.Synchronize()
	}
	return c.dev.Synchronize()
}

func (c *cudaBackend) close() error {
	err := c.blas.Close()
	if e := c.dev.Close(); err == nil {
		err = e
	}
	return err
}
