//go:build !unix

package rundir

import (
	"context"
	"errors"
)

// ErrLocked is wrapped by Lock's error when another process holds the run directory.
var ErrLocked = errors.New("in use by another nfbo process")

// Lock does nothing where flock is not available.
func Lock(dir string) (unlock func(), err error) { return func() {}, nil }

// LockWait does nothing where flock is not available.
func LockWait(ctx context.Context, dir string) (unlock func(), err error) { return func() {}, nil }

// LockFileWait does nothing where flock is not available.
func LockFileWait(ctx context.Context, path string) (unlock func(), err error) { return func() {}, nil }
