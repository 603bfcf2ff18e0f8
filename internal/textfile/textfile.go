// Package textfile opens the text files that nfbo reads (molecules, initial sets, SMILES to score or
// reconstruct), decompressing them when their name ends in .gz, so that every command takes a compressed file
// alike.
package textfile

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// Open opens the file name for reading; a name ending in ".gz" is decompressed as it is read (a damaged stream
// then fails the read that meets the damage). Closing the result closes the file.
func Open(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return gzipFile{z, f}, nil
}

// gzipFile reads a gzip stream from a file and closes both.
type gzipFile struct {
	*gzip.Reader
	f *os.File
}

// Close closes the stream and the file.
func (g gzipFile) Close() error {
	err := g.Reader.Close()
	if ferr := g.f.Close(); err == nil {
		err = ferr
	}
	return err
}
