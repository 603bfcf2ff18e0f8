package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write replaces a file whole, leaves no temporary file, makes it readable by the group, and a failed write
// leaves the old file as it was, naming the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, content := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("read %q (%v), want %q", b, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o040 == 0 {
		t.Errorf("mode %v (%v), want group-readable", fi.Mode(), err)
	}
	boom := errors.New("boom")
	err := WriteFunc(path, func(w io.Writer) error {
		io.WriteString(w, "partial")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want boom naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "second, longer" {
		t.Errorf("after a failed write: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files left in the directory, want 1", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
