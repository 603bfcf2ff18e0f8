package cuda

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoCUDA is returned by every entry point of a build without cgo, which cannot load C libraries.
var ErrNoCUDA = errors.New("cuda: this nfbo was built without cgo, so it cannot load the CUDA libraries (build with CGO_ENABLED=1)")

// Attempt is one place a library was looked for and why it was not taken.
type Attempt struct {
	Path   string // a file path, or a bare soname for the system's search
	Reason string
}

// LoadError reports a library that could not be loaded, with every place tried.
type LoadError struct {
	Lib      string // what was looked for, e.g. "NVRTC"
	Sonames  []string
	Attempts []Attempt
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: cannot load %s (%s); tried:", e.Lib, strings.Join(e.Sonames, ", "))
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %s", a.Path, a.Reason)
	}
	fmt.Fprintf(&b, "\nset %s to the folder that holds it", LibDirsEnv)
	return b.String()
}

// SymbolError reports an entry point missing from a loaded library.
type SymbolError struct {
	Path, Symbol, Reason string
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cuda: %s has no symbol %s: %s", e.Path, e.Symbol, e.Reason)
}

// nvrtcSonames are the NVRTC libraries accepted, newest first: CUDA 13's and 12's wheels, and Debian's
// NVRTC 11.8 (soname 11.2), with which make test compiles the kernels.
var nvrtcSonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
