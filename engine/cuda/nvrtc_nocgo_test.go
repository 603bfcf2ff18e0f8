//go:build !cgo

package cuda

import (
	"errors"
	"testing"
)

// Without cgo every entry point says so instead of failing obscurely.
func TestNoCgo(t *testing.T) {
	if _, err := LoadNVRTC(OSEnv()); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("LoadNVRTC without cgo: %v, want ErrNoCUDA", err)
	}
}
