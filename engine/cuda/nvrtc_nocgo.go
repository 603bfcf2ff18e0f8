//go:build !cgo

package cuda

// NVRTC is a loaded NVRTC library; a build without cgo cannot load one.
type NVRTC struct{ Major, Minor int }

// LoadNVRTC returns ErrNoCUDA in a build without cgo.
func LoadNVRTC(Env) (*NVRTC, error) { return nil, ErrNoCUDA }

// Path returns "".
func (*NVRTC) Path() string { return "" }

// Compile returns ErrNoCUDA in a build without cgo.
func (*NVRTC) Compile(string, string, CompileOptions) ([]byte, error) { return nil, ErrNoCUDA }
