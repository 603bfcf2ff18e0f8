package textfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	const text = "CCO\nc1ccccc1\n"
	plain := filepath.Join(dir, "m.smi")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	b := bytes.NewBuffer(gzipped(text))
	packed := filepath.Join(dir, "m.smi.gz")
	if err := os.WriteFile(packed, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{plain, packed} {
		r, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != text {
			t.Errorf("%s: read %q, %v; want %q", name, got, err, text)
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}

	for name, data := range map[string][]byte{"bom.smi": []byte("\ufeff" + text), "bom.smi.gz": gzipped("\ufeff" + text)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != text {
			t.Errorf("%s: read %q, %v; want %q without the byte order mark", name, got, err, text)
		}
	}

	if _, err := Open(filepath.Join(dir, "missing.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
	notGzip := filepath.Join(dir, "plain.gz")
	if err := os.WriteFile(notGzip, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(notGzip); err == nil || !strings.Contains(err.Error(), notGzip) {
		t.Errorf("not gzip: %v, want an error naming the file", err)
	}
	cut := filepath.Join(dir, "cut.smi.gz")
	if err := os.WriteFile(cut, b.Bytes()[:b.Len()-6], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(cut)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); err == nil {
		t.Error("a truncated stream read without an error")
	}
}

func gzipped(text string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(text))
	z.Close()
	return b.Bytes()
}
