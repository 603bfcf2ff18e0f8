// Package textfile opens the text files that nfbo reads (molecules, initial sets, SMILES to score or
// reconstruct) alike for every command: decompressed when their name ends in .gz, and without the byte order
// mark that some editors and spreadsheets write at the start of a UTF-8 file.
package textfile

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// bom is the UTF-8 byte order mark.
const bom = "\ufeff"

// Open opens the file name for reading; a name ending in ".gz" is decompressed as it is read (a damaged stream
// then fails the read that meets the damage), and a byte order mark at the start is skipped. Closing the
// result closes the file.
func Open(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	t := &file{f: f}
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		if t.z, err = gzip.NewReader(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r = t.z
	}
	t.r = bufio.NewReader(r)
	if b, err := t.r.Peek(len(bom)); err == nil && string(b) == bom {
		t.r.Discard(len(bom))
	}
	return t, nil
}

// file reads a text file, through gzip when z is set.
type file struct {
	r *bufio.Reader
	z *gzip.Reader
	f *os.File
}

// Read reads the text.
func (t *file) Read(p []byte) (int, error) { return t.r.Read(p) }

// Close closes the gzip stream, if any, and the file.
func (t *file) Close() error {
	var err error
	if t.z != nil {
		err = t.z.Close()
	}
	if ferr := t.f.Close(); err == nil {
		err = ferr
	}
	return err
}
