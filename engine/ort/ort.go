// Package ort runs SeqFlow encoding and decoding on ONNX Runtime (CPU),
// from the ONNX graphs that engine/onnx exports: Runner is a
// model.LatentCodec. Open falls back to the pure-Go codec
// (model.GoLatentCodec) when the runtime library cannot be loaded.
//
// The library, libonnxruntime.so.1 (1.30.0, from the npm package
// onnxruntime-node), is loaded at run time: from $NFBO_ORT_LIB if set, else
// from the repository's git-ignored third_party/onnxruntime/lib, looked for
// from the working directory and from the executable's directory upwards.
// A missing library is never a crash: Open returns the pure-Go codec and
// writes one warning.
//
// ONNX Runtime's environment is process-wide: the first successful load
// fixes the library for the life of the process. It is the one piece of
// global state in nfbo, owned by onnxruntime_go.
package ort

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nfbo/nfbo/model"
)

// LibEnv is the environment variable that overrides the library path.
const LibEnv = "NFBO_ORT_LIB"

// DefaultLibPath is the library's place in the repository (git-ignored,
// filled by scripts/setup.sh).
const DefaultLibPath = "third_party/onnxruntime/lib/libonnxruntime.so.1"

// ErrUnavailable is wrapped by NewRunner's error when ONNX Runtime cannot be
// used: no library, a library that fails to load, or a build without cgo.
var ErrUnavailable = errors.New("ONNX Runtime unavailable")

// Options configure NewRunner and Open. The zero value is ready to use.
type Options struct {
	// LibPath is the ONNX Runtime library; "" means FindLibrary.
	LibPath string
	// Threads is ONNX Runtime's intra-op thread count; 0 means the number
	// of CPUs the Go runtime uses.
	Threads int
	// Spin lets ONNX Runtime's idle intra-op threads spin instead of
	// sleeping. Off by default: on a machine whose cores are busy (two
	// benchmark runs on two cores, fine-tuning beside decoding) spinning
	// threads took 40 % more CPU and 20 % more wall time to decode the same
	// molecules (BENCHMARKS.md, "ONNX Runtime thread spinning").
	Spin bool
	// Batch is the most sequences per session run; 0 means 256 (larger
	// batches were no faster on 2 cores and need more memory).
	Batch int
	// MinDecodeBatch is the smallest batch the Runner decodes on ONNX
	// Runtime; smaller batches decode in pure Go, which is faster there
	// because ONNX Runtime's per-operator overhead (the NLSq cubic alone is
	// some 50 small operators per coupling) dominates a one-row step. 0
	// means 16; a negative value sends every batch to ONNX Runtime.
	MinDecodeBatch int
	// Warn receives Open's one-line warning when it falls back to pure Go;
	// nil means os.Stderr.
	Warn io.Writer
}

func (o Options) batch() int {
	if o.Batch > 0 {
		return o.Batch
	}
	return 256
}

func (o Options) minDecodeBatch() int {
	switch {
	case o.MinDecodeBatch > 0:
		return o.MinDecodeBatch
	case o.MinDecodeBatch < 0:
		return 0
	}
	return 16
}

// FindLibrary returns the ONNX Runtime library path: $NFBO_ORT_LIB when
// set, else the first existing DefaultLibPath found from the working
// directory or the executable's directory and their parents.
func FindLibrary() (string, error) {
	if p := os.Getenv(LibEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrUnavailable, LibEnv, p, err)
		}
		return p, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, DefaultLibPath)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("%w: %s not found from the working or executable directory, and %s is not set", ErrUnavailable, DefaultLibPath, LibEnv)
}

// Open returns an ONNX Runtime codec for f, or, when ONNX Runtime is
// unavailable, the pure-Go codec (model.GoLatentCodec) after writing one
// warning to opt.Warn. Other errors (a graph ONNX Runtime rejects) are
// returned.
func Open(f *model.Flow, opt Options) (model.LatentCodec, error) {
	r, err := NewRunner(f, opt)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, ErrUnavailable) {
		return nil, err
	}
	w := opt.Warn
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "nfbo: warning: %v; using the pure-Go flow (slower)\n", err)
	return model.NewGoLatentCodec(f, 0), nil
}
