//go:build !cgo

package gpustep

import "github.com/nfbo/nfbo/engine/cuda"

// openCUDA returns cuda.ErrNoCUDA in a build without cgo, for every part.
func openCUDA(_ cuda.Env, ordinal int) (backend, cuda.DeviceInfo, error) {
	return nil, cuda.DeviceInfo{}, &UnavailableError{Ordinal: ordinal, NVRTC: cuda.ErrNoCUDA, GPU: cuda.ErrNoCUDA}
}
