//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// runLockFile is the file in a run directory that an optimize process holds an exclusive lock on.
const runLockFile = "lock"

// lockRunDir takes an exclusive, non-blocking lock on dir's lock file, so that two processes (say, a bench
// resuming a run that is still going) never write the same evaluation log and checkpoint. The kernel drops the
// lock when the process ends, however it ends, so a killed run leaves nothing to clean up.
func lockRunDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, runLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("optimize: lock run directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("optimize: run directory %s is in use by another nfbo process (%s is locked)", dir, path)
		}
		return nil, fmt.Errorf("optimize: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
