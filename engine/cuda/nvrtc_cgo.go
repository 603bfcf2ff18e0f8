//go:build cgo

package cuda

/*
#include <stddef.h>
#include <stdlib.h>

typedef int (*pfn_nvrtcVersion)(int*, int*);
typedef const char* (*pfn_nvrtcGetErrorString)(int);
typedef int (*pfn_nvrtcCreateProgram)(void**, const char*, const char*, int, const char* const*, const char* const*);
typedef int (*pfn_nvrtcCompileProgram)(void*, int, const char* const*);
typedef int (*pfn_nvrtcGetSize)(void*, size_t*);
typedef int (*pfn_nvrtcGetBytes)(void*, char*);
typedef int (*pfn_nvrtcDestroyProgram)(void**);

static int nfbo_nvrtcVersion(void* f, int* major, int* minor) { return ((pfn_nvrtcVersion)f)(major, minor); }
static const char* nfbo_nvrtcGetErrorString(void* f, int r) { return ((pfn_nvrtcGetErrorString)f)(r); }
static int nfbo_nvrtcCreateProgram(void* f, void** prog, const char* src, const char* name) {
	return ((pfn_nvrtcCreateProgram)f)(prog, src, name, 0, NULL, NULL);
}
static int nfbo_nvrtcCompileProgram(void* f, void* prog, int n, char** opts) {
	return ((pfn_nvrtcCompileProgram)f)(prog, n, (const char* const*)opts);
}
static int nfbo_nvrtcGetSize(void* f, void* prog, size_t* n) { return ((pfn_nvrtcGetSize)f)(prog, n); }
static int nfbo_nvrtcGetBytes(void* f, void* prog, char* dst) { return ((pfn_nvrtcGetBytes)f)(prog, dst); }
static int nfbo_nvrtcDestroyProgram(void* f, void** prog) { return ((pfn_nvrtcDestroyProgram)f)(prog); }
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"unsafe"
)

// NVRTC is a loaded NVRTC library. Its methods may be called from any goroutine (NVRTC is thread-safe per
// program).
type NVRTC struct {
	lib          *library
	Major, Minor int

	version, errorString, create, compile, destroy unsafe.Pointer
	logSize, log, ptxSize, ptx, cubinSize, cubin   unsafe.Pointer
}

// LoadNVRTC finds and loads NVRTC (libnvrtc.so.13, .12, or Debian's 11.2) in env's search order and binds its
// entry points. NVRTC opens its builtins library by name when it compiles, so the builtins found beside it are
// loaded first, globally.
func LoadNVRTC(env Env) (*NVRTC, error) {
	lib, err := openFirst("NVRTC", nvrtcSonames, SearchDirs(env), func(dir string) {
		if bs, _ := filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so.*")); len(bs) > 0 {
			dlopen(bs[0], true) // a failure shows up as NVRTC's own error when it compiles
		}
	})
	if err != nil {
		return nil, err
	}
	n := &NVRTC{lib: lib}
	for _, s := range []struct {
		name string
		dst  *unsafe.Pointer
	}{{"nvrtcVersion", &n.version}, {"nvrtcGetErrorString", &n.errorString}, {"nvrtcCreateProgram", &n.create},
		{"nvrtcCompileProgram", &n.compile}, {"nvrtcDestroyProgram", &n.destroy},
		{"nvrtcGetProgramLogSize", &n.logSize}, {"nvrtcGetProgramLog", &n.log},
		{"nvrtcGetPTXSize", &n.ptxSize}, {"nvrtcGetPTX", &n.ptx},
		{"nvrtcGetCUBINSize", &n.cubinSize}, {"nvrtcGetCUBIN", &n.cubin}} {
		if *s.dst, err = lib.sym(s.name); err != nil {
			return nil, err
		}
	}
	var major, minor C.int
	if r := C.nfbo_nvrtcVersion(n.version, &major, &minor); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcVersion: %s", n.errString(r))
	}
	n.Major, n.Minor = int(major), int(minor)
	return n, nil
}

// Path returns the file NVRTC was loaded from.
func (n *NVRTC) Path() string { return n.lib.path }

func (n *NVRTC) errString(r C.int) string {
	return fmt.Sprintf("%s (%d)", C.GoString(C.nfbo_nvrtcGetErrorString(n.errorString, r)), int(r))
}

// Compile compiles the CUDA C source src (named name in messages) and returns a CUBIN, or PTX with its
// trailing NUL (as cuModuleLoadData takes it) when opts.PTX is set.
func (n *NVRTC) Compile(name, src string, opts CompileOptions) ([]byte, error) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog unsafe.Pointer
	if r := C.nfbo_nvrtcCreateProgram(n.create, &prog, csrc, cname); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram %s: %s", name, n.errString(r))
	}
	defer C.nfbo_nvrtcDestroyProgram(n.destroy, &prog)

	optList := opts.options()
	// The option array lives in C memory: cgo forbids passing Go memory that holds C pointers.
	cOpts := (**C.char)(C.malloc(C.size_t(len(optList)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(cOpts))
	arr := unsafe.Slice(cOpts, len(optList))
	for i, o := range optList {
		arr[i] = C.CString(o)
		defer C.free(unsafe.Pointer(arr[i]))
	}
	if r := C.nfbo_nvrtcCompileProgram(n.compile, prog, C.int(len(optList)), cOpts); r != 0 {
		log, _ := n.bytes(prog, n.logSize, n.log)
		return nil, &CompileError{Name: name, Log: string(trimNUL(log)) + "\n" + n.errString(r), Options: optList}
	}
	if opts.PTX {
		return n.bytes(prog, n.ptxSize, n.ptx)
	}
	return n.bytes(prog, n.cubinSize, n.cubin)
}

// bytes reads one of a program's outputs through its size and copy entry points.
func (n *NVRTC) bytes(prog, sizeFn, getFn unsafe.Pointer) ([]byte, error) {
	var size C.size_t
	if r := C.nfbo_nvrtcGetSize(sizeFn, prog, &size); r != 0 {
		return nil, fmt.Errorf("cuda: NVRTC output size: %s", n.errString(r))
	}
	if size == 0 {
		return nil, nil
	}
	buf := C.malloc(size)
	defer C.free(buf)
	if r := C.nfbo_nvrtcGetBytes(getFn, prog, (*C.char)(buf)); r != 0 {
		return nil, fmt.Errorf("cuda: NVRTC output: %s", n.errString(r))
	}
	return C.GoBytes(buf, C.int(size)), nil
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}
