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
	unlock, err = lockFile(filepath.Join(dir, LockFile))
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("rundir: run directory %s is %w", dir, err)
	}
	return unlock, err
}

// LockWait is Lock that waits for the other process to let go, until ctx is done.
func LockWait(ctx context.Context, dir string) (unlock func(), err error) {
	return wait(ctx, func() (func(), error) { return Lock(dir) })
}

// LockFileWait takes the exclusive lock of the file path (flock; the file is created if missing and left in
// place), waiting for another process to let go until ctx is done. It is for files shared by runs rather than
// held by one, such as a benchmark's rows, whose read-merge-write must not interleave with another process's.
func LockFileWait(ctx context.Context, path string) (unlock func(), err error) {
	return wait(ctx, func() (func(), error) { return lockFile(path) })
}

// lockFile takes the exclusive lock of path without waiting; a lock held elsewhere is an error wrapping
// ErrLocked.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rundir: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s is locked)", ErrLocked, path)
		}
		return nil, fmt.Errorf("rundir: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// wait calls lock until it does not fail with ErrLocked or ctx is done, backing off up to half a second.
func wait(ctx context.Context, lock func() (func(), error)) (unlock func(), err error) {
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		unlock, err := lock()
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
