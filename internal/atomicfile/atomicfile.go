// Package atomicfile writes files so that a crash leaves either the old file or the new one, never a part: the
// one implementation of nfbo's atomic writes (run directories, model checkpoints, ONNX exports, the RDKit
// worker's script, ask's output files).
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path atomically: see WriteFunc.
func Write(path string, data []byte) error {
	return WriteFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes what write writes to path atomically: into a temporary file in the same directory (mode
// 0644, readable by the user's group as a file os.Create makes), which it syncs and renames over path, then it
// syncs the directory so that the rename survives a crash too. On any error the temporary file is removed and
// path is as it was. Errors name path.
func WriteFunc(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // CreateTemp's 0600 would make a user's file (ask's -o) unreadable to their group
	if err == nil {
		bw := bufio.NewWriterSize(f, 1<<20)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// SyncDir makes the directory entries of dir durable (a file just created or renamed there). A file system
// that cannot sync a directory is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !syncUnsupported(err) {
		return err
	}
	return nil
}
