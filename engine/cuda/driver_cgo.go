//go:build cgo

package cuda

/*
#include <stddef.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static CUresult nfbo_cuInit(void* f, unsigned flags) { return ((CUresult (*)(unsigned))f)(flags); }
static CUresult nfbo_int_out(void* f, int* out) { return ((CUresult (*)(int*))f)(out); }
static CUresult nfbo_errstr(void* f, CUresult r, const char** s) { return ((CUresult (*)(CUresult, const char**))f)(r, s); }
static CUresult nfbo_cuDeviceGet(void* f, int* d, int ordinal) { return ((CUresult (*)(int*, int))f)(d, ordinal); }
static CUresult nfbo_cuDeviceGetName(void* f, char* name, int n, int d) { return ((CUresult (*)(char*, int, int))f)(name, n, d); }
static CUresult nfbo_cuDeviceGetAttribute(void* f, int* v, int attr, int d) { return ((CUresult (*)(int*, int, int))f)(v, attr, d); }
static CUresult nfbo_cuDeviceTotalMem(void* f, size_t* n, int d) { return ((CUresult (*)(size_t*, int))f)(n, d); }
static CUresult nfbo_cuDevicePrimaryCtxRetain(void* f, void** ctx, int d) { return ((CUresult (*)(void**, int))f)(ctx, d); }
static CUresult nfbo_int_in(void* f, int d) { return ((CUresult (*)(int))f)(d); }
static CUresult nfbo_ptr_in(void* f, void* p) { return ((CUresult (*)(void*))f)(p); }
static CUresult nfbo_void(void* f) { return ((CUresult (*)(void))f)(); }
static CUresult nfbo_cuMemAlloc(void* f, CUdeviceptr* p, size_t n) { return ((CUresult (*)(CUdeviceptr*, size_t))f)(p, n); }
static CUresult nfbo_cuMemFree(void* f, CUdeviceptr p) { return ((CUresult (*)(CUdeviceptr))f)(p); }
static CUresult nfbo_cuMemcpyHtoD(void* f, CUdeviceptr dst, const void* src, size_t n) { return ((CUresult (*)(CUdeviceptr, const void*, size_t))f)(dst, src, n); }
static CUresult nfbo_cuMemcpyDtoH(void* f, void* dst, CUdeviceptr src, size_t n) { return ((CUresult (*)(void*, CUdeviceptr, size_t))f)(dst, src, n); }
static CUresult nfbo_cuMemcpyDtoD(void* f, CUdeviceptr dst, CUdeviceptr src, size_t n) { return ((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t))f)(dst, src, n); }
// Host-to-device copies from pinned staging memory on the legacy default stream: they return at once and are
// ordered with every launch.
static CUresult nfbo_cuMemcpyHtoDAsync(void* f, CUdeviceptr dst, const void* src, size_t n) { return ((CUresult (*)(CUdeviceptr, const void*, size_t, void*))f)(dst, src, n, NULL); }
static CUresult nfbo_cuMemAllocHost(void* f, void** p, size_t n) { return ((CUresult (*)(void**, size_t))f)(p, n); }
// The legacy default stream (NULL): ordered with every launch, which all run there.
static CUresult nfbo_cuMemsetD32Async(void* f, CUdeviceptr dst, unsigned v, size_t n) { return ((CUresult (*)(CUdeviceptr, unsigned, size_t, void*))f)(dst, v, n, NULL); }
static CUresult nfbo_cuModuleLoadData(void* f, void** m, const void* image) { return ((CUresult (*)(void**, const void*))f)(m, image); }
static CUresult nfbo_cuModuleGetFunction(void* f, void** fn, void* m, const char* name) { return ((CUresult (*)(void**, void*, const char*))f)(fn, m, name); }

typedef CUresult (*pfn_cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);

// The kernel's parameters are the addresses of the 8-byte slots; the driver copies them before returning.
static CUresult nfbo_cuLaunchKernel(void* f, void* fn, unsigned blocks, unsigned threads, unsigned shared,
	unsigned long long* slots, int n) {
	void* params[64];
	if (n > 64) return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++) params[i] = &slots[i];
	return ((pfn_cuLaunchKernel)f)(fn, blocks, 1, 1, threads, 1, 1, shared, NULL, params, NULL);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Driver entry points, by exact symbol name (gpu_engine.md section 3: never the legacy unsuffixed memory calls).
type driverFns struct {
	init, driverVersion, errName, errString, deviceCount, deviceGet, deviceName, deviceAttr, totalMem unsafe.Pointer
	ctxRetain, ctxRelease, ctxSetCurrent, ctxSync, memAlloc, memFree, htod, dtoh, dtod, memsetD32     unsafe.Pointer
	moduleLoad, moduleGetFunction, moduleUnload, launch, htodAsync, memAllocHost, memFreeHost         unsafe.Pointer
}

// stagingBytes is the pinned host memory an upload is copied through, so that it returns before the GPU has
// read it: a training step's token ids and lengths fit many times over. A larger upload waits.
const stagingBytes = 8 << 20

// CUdevice_attribute values read.
const (
	attrMaxThreadsPerBlock = 1
	attrSMCount            = 16
	attrCCMajor            = 75
	attrCCMinor            = 76
)

// Device is one GPU's primary context, owned by a goroutine locked to its OS thread (CUDA's current context is
// per thread); every method runs there. A Device is safe for concurrent use; Close it when done.
type Device struct {
	lib  *library
	fn   driverFns
	ctx  unsafe.Pointer
	dev  C.int
	Info DeviceInfo
	work chan func()
	done chan struct{}

	// On the device goroutine only: the pinned staging area of asynchronous uploads and how much of it the
	// copies not yet known to be done use (reset by every call that waits for the GPU).
	staging     unsafe.Pointer
	stagingUsed int
}

// Thread is the device goroutine, given to the function Do runs there: its methods call the driver directly,
// without the hop to the device goroutine that Device's methods make. It is valid only inside that function.
type Thread struct{ d *Device }

// OpenDevice loads the driver (libcuda.so.1, DriverDirs then the system's search), initialises it and makes
// the primary context of GPU ordinal current on the device goroutine.
func OpenDevice(env Env, ordinal int) (*Device, error) {
	lib, err := openFirst("the CUDA driver", []string{"libcuda.so.1"}, DriverDirs(env), nil)
	if err != nil {
		return nil, err
	}
	d := &Device{lib: lib, work: make(chan func()), done: make(chan struct{})}
	f := &d.fn
	for _, s := range []struct {
		name string
		dst  *unsafe.Pointer
	}{{"cuInit", &f.init}, {"cuDriverGetVersion", &f.driverVersion}, {"cuGetErrorName", &f.errName},
		{"cuGetErrorString", &f.errString}, {"cuDeviceGetCount", &f.deviceCount}, {"cuDeviceGet", &f.deviceGet},
		{"cuDeviceGetName", &f.deviceName}, {"cuDeviceGetAttribute", &f.deviceAttr}, {"cuDeviceTotalMem_v2", &f.totalMem},
		{"cuDevicePrimaryCtxRetain", &f.ctxRetain}, {"cuDevicePrimaryCtxRelease_v2", &f.ctxRelease},
		{"cuCtxSetCurrent", &f.ctxSetCurrent}, {"cuCtxSynchronize", &f.ctxSync}, {"cuMemAlloc_v2", &f.memAlloc},
		{"cuMemFree_v2", &f.memFree}, {"cuMemcpyHtoD_v2", &f.htod}, {"cuMemcpyDtoH_v2", &f.dtoh},
		{"cuMemcpyDtoD_v2", &f.dtod}, {"cuMemsetD32Async", &f.memsetD32},
		{"cuModuleLoadData", &f.moduleLoad}, {"cuModuleGetFunction", &f.moduleGetFunction},
		{"cuModuleUnload", &f.moduleUnload}, {"cuLaunchKernel", &f.launch}, {"cuMemcpyHtoDAsync_v2", &f.htodAsync},
		{"cuMemAllocHost_v2", &f.memAllocHost}, {"cuMemFreeHost", &f.memFreeHost}} {
		if *s.dst, err = lib.sym(s.name); err != nil {
			return nil, err
		}
	}
	started := make(chan error)
	go d.loop(ordinal, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return d, nil
}

// loop is the device goroutine: it sets up the context, reports, then runs the work sent to it.
func (d *Device) loop(ordinal int, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.setup(ordinal); err != nil {
		started <- err
		return
	}
	started <- nil
	for w := range d.work {
		w()
	}
	if d.staging != nil {
		C.nfbo_ptr_in(d.fn.memFreeHost, d.staging)
	}
	C.nfbo_int_in(d.fn.ctxRelease, d.dev)
	close(d.done)
}

func (d *Device) setup(ordinal int) error {
	if err := d.check("cuInit", C.nfbo_cuInit(d.fn.init, 0)); err != nil {
		return err
	}
	var n, ver C.int
	if err := d.check("cuDriverGetVersion", C.nfbo_int_out(d.fn.driverVersion, &ver)); err != nil {
		return err
	}
	if err := d.check("cuDeviceGetCount", C.nfbo_int_out(d.fn.deviceCount, &n)); err != nil {
		return err
	}
	if ordinal < 0 || ordinal >= int(n) {
		return fmt.Errorf("cuda: GPU %d requested, the driver sees %d", ordinal, int(n))
	}
	if err := d.check("cuDeviceGet", C.nfbo_cuDeviceGet(d.fn.deviceGet, &d.dev, C.int(ordinal))); err != nil {
		return err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", C.nfbo_cuDeviceGetName(d.fn.deviceName, (*C.char)(unsafe.Pointer(&name[0])), 256, d.dev)); err != nil {
		return err
	}
	attr := func(a int) (int, error) {
		var v C.int
		err := d.check("cuDeviceGetAttribute", C.nfbo_cuDeviceGetAttribute(d.fn.deviceAttr, &v, C.int(a), d.dev))
		return int(v), err
	}
	var mem C.size_t
	if err := d.check("cuDeviceTotalMem_v2", C.nfbo_cuDeviceTotalMem(d.fn.totalMem, &mem, d.dev)); err != nil {
		return err
	}
	info := DeviceInfo{Ordinal: ordinal, Name: C.GoString((*C.char)(unsafe.Pointer(&name[0]))), TotalMem: uint64(mem),
		DriverVersion: int(ver), DriverPath: d.lib.path}
	var err error
	if info.Major, err = attr(attrCCMajor); err != nil {
		return err
	}
	if info.Minor, err = attr(attrCCMinor); err != nil {
		return err
	}
	if info.SMs, err = attr(attrSMCount); err != nil {
		return err
	}
	if info.MaxThreadsPerBlock, err = attr(attrMaxThreadsPerBlock); err != nil {
		return err
	}
	info.ComputeCapability = info.Major*10 + info.Minor
	d.Info = info
	if err := d.check("cuDevicePrimaryCtxRetain", C.nfbo_cuDevicePrimaryCtxRetain(d.fn.ctxRetain, &d.ctx, d.dev)); err != nil {
		return err
	}
	return d.check("cuCtxSetCurrent", C.nfbo_ptr_in(d.fn.ctxSetCurrent, d.ctx))
}

// check turns a CUresult into an error with the driver's name and description of the code.
func (d *Device) check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	var name, desc *C.char
	C.nfbo_errstr(d.fn.errName, r, &name)
	C.nfbo_errstr(d.fn.errString, r, &desc)
	e := &DriverError{Call: call, Code: int(r), Name: "unknown", Desc: "unknown"}
	if name != nil {
		e.Name = C.GoString(name)
	}
	if desc != nil {
		e.Desc = C.GoString(desc)
	}
	return e
}

// do runs f on the device goroutine and returns its error.
func (d *Device) do(f func() error) error {
	errc := make(chan error, 1)
	d.work <- func() { errc <- f() }
	return <-errc
}

// Do runs f on the device goroutine, handing it the Thread whose methods reach the driver directly: a training
// step submitted in one crossing instead of one per call (each crossing is a goroutine hop, tens of
// microseconds). Other goroutines' calls wait until f returns.
func (d *Device) Do(f func(*Thread) error) error { return d.do(func() error { return f(&Thread{d}) }) }

// Close releases the primary context and ends the device goroutine.
func (d *Device) Close() error {
	close(d.work)
	<-d.done
	return nil
}

// Alloc returns n bytes of device memory (cuMemAlloc_v2: plain allocations, never managed memory).
func (d *Device) Alloc(n int) (p Ptr, err error) {
	err = d.do(func() error { p, err = d.alloc(n); return err })
	return p, err
}

// Free releases memory from Alloc.
func (d *Device) Free(p Ptr) error { return d.do(func() error { return d.free(p) }) }

// Upload copies src to the device at dst. It returns before the GPU has the data: src is copied into pinned
// staging memory first (a copy larger than the staging area waits for the GPU instead).
func (d *Device) Upload(dst Ptr, src []float32) error {
	return d.do(func() error { return d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src)) })
}

// UploadInt32 is Upload for int32 values.
func (d *Device) UploadInt32(dst Ptr, src []int32) error {
	return d.do(func() error { return d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src)) })
}

// Download copies len(dst) floats from the device at src into dst, once every earlier call is done.
func (d *Device) Download(dst []float32, src Ptr) error {
	return d.do(func() error { return d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, 4*len(dst)) })
}

// DownloadInt32 copies len(dst) int32 values from the device at src into dst, once every earlier call is done.
func (d *Device) DownloadInt32(dst []int32, src Ptr) error {
	return d.do(func() error { return d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, 4*len(dst)) })
}

// DownloadFloat64 copies len(dst) float64 values from the device at src into dst, once every earlier call is
// done: a reduction's double-precision result.
func (d *Device) DownloadFloat64(dst []float64, src Ptr) error {
	return d.do(func() error { return d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, 8*len(dst)) })
}

// Zero sets n 4-byte words from dst to zero (cuMemsetD32Async on the default stream, so after every earlier
// launch and before every later one; a failure shows at the next call that waits).
func (d *Device) Zero(dst Ptr, n int) error { return d.do(func() error { return d.zero(dst, n) }) }

// Copy copies n 4-byte words from src to dst on the device (cuMemcpyDtoD_v2, not waiting); the ranges must not
// overlap.
func (d *Device) Copy(dst, src Ptr, n int) error {
	return d.do(func() error { return d.copy(dst, src, n) })
}

// Alloc is Device.Alloc on the device goroutine.
func (t *Thread) Alloc(n int) (Ptr, error) { return t.d.alloc(n) }

// Free is Device.Free on the device goroutine.
func (t *Thread) Free(p Ptr) error { return t.d.free(p) }

// Upload is Device.Upload on the device goroutine.
func (t *Thread) Upload(dst Ptr, src []float32) error {
	return t.d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src))
}

// UploadInt32 is Device.UploadInt32 on the device goroutine.
func (t *Thread) UploadInt32(dst Ptr, src []int32) error {
	return t.d.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src))
}

// Download is Device.Download on the device goroutine.
func (t *Thread) Download(dst []float32, src Ptr) error {
	return t.d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, 4*len(dst))
}

// DownloadFloat64 is Device.DownloadFloat64 on the device goroutine.
func (t *Thread) DownloadFloat64(dst []float64, src Ptr) error {
	return t.d.download(unsafe.Pointer(unsafe.SliceData(dst)), src, 8*len(dst))
}

// Zero is Device.Zero on the device goroutine.
func (t *Thread) Zero(dst Ptr, n int) error { return t.d.zero(dst, n) }

// Copy is Device.Copy on the device goroutine.
func (t *Thread) Copy(dst, src Ptr, n int) error { return t.d.copy(dst, src, n) }

// Synchronize is Device.Synchronize on the device goroutine.
func (t *Thread) Synchronize() error { return t.d.synchronize() }

// Launch is Kernel.Launch on the device goroutine.
func (t *Thread) Launch(k *Kernel, g Grid, args ...any) error { return k.launch(g, args) }

// Gemm is BLAS.Gemm on the device goroutine.
func (t *Thread) Gemm(b *BLAS, tA, tB bool, alpha float32, A Ptr, ar, ac int, B Ptr, br, bc int, beta float32, Cm Ptr) error {
	return b.gemm(tA, tB, alpha, A, ar, ac, B, br, bc, beta, Cm)
}

// The methods below run on the device goroutine.

func (d *Device) alloc(n int) (Ptr, error) {
	var p C.CUdeviceptr
	err := d.check("cuMemAlloc_v2", C.nfbo_cuMemAlloc(d.fn.memAlloc, &p, C.size_t(n)))
	return Ptr(p), err
}

func (d *Device) free(p Ptr) error {
	return d.check("cuMemFree_v2", C.nfbo_cuMemFree(d.fn.memFree, C.CUdeviceptr(p)))
}

// upload copies n bytes at src to dst through the staging area: a copy that does not fit what is left of it
// waits for the GPU to finish the earlier ones first, and one larger than the area is a synchronous copy.
func (d *Device) upload(dst Ptr, src unsafe.Pointer, n int) error {
	if n == 0 {
		return nil
	}
	if n > stagingBytes {
		d.stagingUsed = 0 // the synchronous copy waits for the earlier work
		return d.check("cuMemcpyHtoD_v2", C.nfbo_cuMemcpyHtoD(d.fn.htod, C.CUdeviceptr(dst), src, C.size_t(n)))
	}
	if d.staging == nil {
		if err := d.check("cuMemAllocHost_v2", C.nfbo_cuMemAllocHost(d.fn.memAllocHost, &d.staging, stagingBytes)); err != nil {
			d.staging = nil
			return err
		}
	}
	if d.stagingUsed+n > stagingBytes {
		if err := d.check("cuCtxSynchronize", C.nfbo_void(d.fn.ctxSync)); err != nil {
			return err
		}
		d.stagingUsed = 0
	}
	at := unsafe.Add(d.staging, d.stagingUsed)
	copy(unsafe.Slice((*byte)(at), n), unsafe.Slice((*byte)(src), n))
	d.stagingUsed += (n + 255) &^ 255
	return d.check("cuMemcpyHtoDAsync_v2", C.nfbo_cuMemcpyHtoDAsync(d.fn.htodAsync, C.CUdeviceptr(dst), at, C.size_t(n)))
}

// download copies n bytes from src to dst once the GPU is done with every earlier call (cuMemcpyDtoH_v2 on the
// legacy stream waits for it), after which the staging area is free again.
func (d *Device) download(dst unsafe.Pointer, src Ptr, n int) error {
	if n == 0 {
		return nil
	}
	err := d.check("cuMemcpyDtoH_v2", C.nfbo_cuMemcpyDtoH(d.fn.dtoh, dst, C.CUdeviceptr(src), C.size_t(n)))
	if err == nil {
		d.stagingUsed = 0
	}
	return err
}

func (d *Device) zero(dst Ptr, n int) error {
	if n == 0 {
		return nil
	}
	return d.check("cuMemsetD32Async", C.nfbo_cuMemsetD32Async(d.fn.memsetD32, C.CUdeviceptr(dst), 0, C.size_t(n)))
}

func (d *Device) copy(dst, src Ptr, n int) error {
	if n == 0 {
		return nil
	}
	return d.check("cuMemcpyDtoD_v2", C.nfbo_cuMemcpyDtoD(d.fn.dtod, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(4*n)))
}

// Module is a loaded CUBIN or PTX image.
type Module struct {
	d *Device
	h unsafe.Pointer
}

// Kernel is one entry point of a Module.
type Kernel struct {
	d    *Device
	h    unsafe.Pointer
	Name string
}

// LoadModule loads a CUBIN, or PTX with its trailing NUL, from NVRTC.Compile.
func (d *Device) LoadModule(image []byte) (*Module, error) {
	m := &Module{d: d}
	cimg := C.CBytes(image)
	defer C.free(cimg)
	err := d.do(func() error { return d.check("cuModuleLoadData", C.nfbo_cuModuleLoadData(d.fn.moduleLoad, &m.h, cimg)) })
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Kernel returns the entry point name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	k := &Kernel{d: m.d, Name: name}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	err := m.d.do(func() error {
		return m.d.check("cuModuleGetFunction "+name, C.nfbo_cuModuleGetFunction(m.d.fn.moduleGetFunction, &k.h, m.h, cn))
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Unload releases the module.
func (m *Module) Unload() error {
	return m.d.do(func() error { return m.d.check("cuModuleUnload", C.nfbo_ptr_in(m.d.fn.moduleUnload, m.h)) })
}

// Launch queues the kernel on the default stream and returns without waiting for it: a failure in the kernel
// shows at the next call that waits (a download). args are its parameters in order (see slot).
func (k *Kernel) Launch(g Grid, args ...any) error {
	return k.d.do(func() error { return k.launch(g, args) })
}

// launch is Launch on the device goroutine.
func (k *Kernel) launch(g Grid, args []any) error {
	if len(args) > 64 {
		return fmt.Errorf("cuda: kernel %s: %d arguments, at most 64", k.Name, len(args))
	}
	var slots [64]C.ulonglong
	for i, a := range args {
		v, err := slot(a)
		if err != nil {
			return fmt.Errorf("kernel %s argument %d: %w", k.Name, i, err)
		}
		slots[i] = C.ulonglong(v)
	}
	// The driver copies the parameters before cuLaunchKernel returns, so C memory is not needed: the slots
	// live in a Go array passed for the call's duration only (cgo's pointer rules hold: no Go pointers in it).
	r := C.nfbo_cuLaunchKernel(k.d.fn.launch, k.h, C.uint(g.Blocks), C.uint(g.Threads), C.uint(g.SharedBytes), &slots[0], C.int(len(args)))
	return k.d.check("cuLaunchKernel "+k.Name, r)
}

// Synchronize waits for every call queued on the device.
func (d *Device) Synchronize() error { return d.do(d.synchronize) }

func (d *Device) synchronize() error {
	err := d.check("cuCtxSynchronize", C.nfbo_void(d.fn.ctxSync))
	if err == nil {
		d.stagingUsed = 0
	}
	return err
}

// loadAll loads image and looks up each entry, then unloads it.
func loadAll(d *Device, image []byte, entries []string) error {
	m, err := d.LoadModule(image)
	if err != nil {
		return err
	}
	defer m.Unload()
	for _, e := range entries {
		if _, err := m.Kernel(e); err != nil {
			return err
		}
	}
	return nil
}

// LoadKernels compiles every embedded kernel source (Kernels) with n for the device's architecture, loads the
// images and returns their entry points by name. The modules stay loaded until the device is closed.
func (d *Device) LoadKernels(n *NVRTC) (map[string]*Kernel, error) {
	ks := map[string]*Kernel{}
	for _, src := range Kernels() {
		img, err := n.Compile(src.Name, src.Code, CompileOptions{Arch: d.Info.ComputeCapability})
		if err != nil {
			return nil, err
		}
		m, err := d.LoadModule(img)
		if err != nil {
			return nil, err
		}
		for _, e := range src.Entries {
			if ks[e], err = m.Kernel(e); err != nil {
				return nil, err
			}
		}
	}
	return ks, nil
}
