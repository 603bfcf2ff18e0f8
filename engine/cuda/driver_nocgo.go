//go:build !cgo

package cuda

// Device is a GPU; a build without cgo cannot open one.
type Device struct{ Info DeviceInfo }

// OpenDevice returns ErrNoCUDA in a build without cgo.
func OpenDevice(Env, int) (*Device, error) { return nil, ErrNoCUDA }

// Close does nothing.
func (*Device) Close() error { return nil }

func loadAll(*Device, []byte, []string) error { return ErrNoCUDA }

// BLAS is a cuBLAS handle; a build without cgo cannot make one.
type BLAS struct {
	Version int
	Path    string
}

// OpenBLAS returns ErrNoCUDA in a build without cgo.
func (*Device) OpenBLAS(Env) (*BLAS, error) { return nil, ErrNoCUDA }

// Close does nothing.
func (*BLAS) Close() error { return nil }
