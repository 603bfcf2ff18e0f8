//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void* nfbo_dlopen(const char* path, int global) {
	return dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
}
static const char* nfbo_dlerror(void) { return dlerror(); }
static void* nfbo_dlsym(void* h, const char* name) {
	dlerror();
	return dlsym(h, name);
}
*/
import "C"

import (
	"os"
	"path/filepath"
	"unsafe"
)

// library is a dlopen'ed shared library.
type library struct {
	path string
	h    unsafe.Pointer
}

func dlerror() string {
	if e := C.nfbo_dlerror(); e != nil {
		return C.GoString(e)
	}
	return "unknown dlopen error"
}

func dlopen(path string, global bool) (unsafe.Pointer, string) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	g := C.int(0)
	if global {
		g = 1
	}
	h := C.nfbo_dlopen(cp, g)
	if h == nil {
		return nil, dlerror()
	}
	return h, ""
}

// openFirst loads the first of sonames found in dirs (in order; each folder is tried with every soname before
// the next folder) and then through the system's search. before, when not nil, is called with the folder a
// library is about to be loaded from (NVRTC loads its builtins first).
func openFirst(lib string, sonames, dirs []string, before func(dir string)) (*library, error) {
	le := &LoadError{Lib: lib, Sonames: sonames}
	try := func(path string, bare bool) *library {
		if !bare {
			if _, err := os.Stat(path); err != nil {
				return nil
			}
			if before != nil {
				before(filepath.Dir(path))
			}
		}
		h, reason := dlopen(path, false)
		if h == nil {
			le.Attempts = append(le.Attempts, Attempt{Path: path, Reason: reason})
			return nil
		}
		return &library{path: path, h: h}
	}
	for _, d := range dirs {
		found := false
		for _, s := range sonames {
			if l := try(filepath.Join(d, s), false); l != nil {
				return l, nil
			} else if _, err := os.Stat(filepath.Join(d, s)); err == nil {
				found = true
			}
		}
		if !found {
			le.Attempts = append(le.Attempts, Attempt{Path: d, Reason: "not found here"})
		}
	}
	for _, s := range sonames {
		if l := try(s, true); l != nil {
			return l, nil
		}
	}
	return nil, le
}

// sym returns the address of an entry point.
func (l *library) sym(name string) (unsafe.Pointer, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	p := C.nfbo_dlsym(l.h, cn)
	if p == nil {
		return nil, &SymbolError{Path: l.path, Symbol: name, Reason: dlerror()}
	}
	return p, nil
}
