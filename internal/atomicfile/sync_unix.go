//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// syncUnsupported reports whether err is a file system's refusal to sync a directory.
func syncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
