//go:build unix

package rundir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrLocked is wrapped by Lock's error when another process holds the run directory.
var ErrLocked = errors.New("in use by another nfbo process")

// Lock takes the exclusive lock of the run directory dir (flock on its LockFile), so that two processes (say,
// a bench resuming a run that is still going, or a tell while a serve runs) never write the same evaluation log
// and checkpoint. It does not wait: a directory held by another process is an error wrapping ErrLocked. The
// kernel drops the lock when the process ends, however it ends, so a killed run leaves no stale lock.
func Lock(dir string) (unlock func(), err error) {
	f, err := openLock(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("rundir: run directory %s is %w (%s is locked)", dir, ErrLocked, f.Name())
		}
		return nil, fmt.Errorf("rundir: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// LockWait is Lock that waits for the other process to let go, until ctx is done.
func LockWait(ctx context.Context, dir string) (unlock func(), err error) {
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		unlock, err := Lock(dir)
		if !errors.Is(err, ErrLocked) {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w; gave up waiting: %w", err, context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

func openLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rundir: lock run directory: %w", err)
	}
	return f, nil
}

func isSyncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
