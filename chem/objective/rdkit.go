package objective

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/nfbo/nfbo/data"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/internal/suggest"
)

// workerSource is the RDKit worker, embedded so that the nfbo binary works
// from any directory; workerScript writes it to a private cache file.
//
//go:embed rdkitworker/worker.py
var workerSource []byte

// DefaultPython is the interpreter that sees Debian's python3-rdkit. The
// pyenv or venv python3 that may come first on PATH usually does not.
const DefaultPython = "/usr/bin/python3"

// DefaultMaxSMILESLen is the worker's default limit on SMILES length.
// RDKit's parser slows roughly cubically on long chains (a 2,000-atom chain
// takes about 11 s), so longer strings score 0 with a reason instead of
// hanging a worker.
const DefaultMaxSMILESLen = 1000

// RDKitOptions configures NewRDKit.
type RDKitOptions struct {
	PoolOptions
	// Python is the interpreter. If empty, the default is DefaultPython.
	// It runs in isolated mode (-I): PYTHONPATH and the user's
	// site-packages are ignored, so point Python at an interpreter whose
	// own installation has RDKit (e.g. a conda environment's python).
	Python string
	// MaxSMILESLen is the longest SMILES the worker parses. If 0, the
	// default is DefaultMaxSMILESLen; negative means no limit.
	MaxSMILESLen int
}

// NewRDKit returns a pool of RDKit workers. The workers start on first use;
// call Start to start them at once and learn whether RDKit is installed
// (the error then wraps ErrRDKitMissing, whose message names the apt
// command).
func NewRDKit(opts RDKitOptions) (*Pool, error) {
	python := opts.Python
	if python == "" {
		python = DefaultPython
	}
	if _, err := exec.LookPath(python); err != nil {
		if python != DefaultPython {
			// A mistyped -python: the apt advice for DefaultPython would mislead.
			return nil, fmt.Errorf("objective: the Python interpreter %s cannot be run (%v): %w; "+
				"name an interpreter that can import rdkit", python, err, ErrRDKitMissing)
		}
		return nil, rdkitMissing(python, err.Error())
	}
	script, err := workerScript()
	if err != nil {
		return nil, err
	}
	rulesData, err := rulesDataDir()
	if err != nil {
		return nil, err
	}
	maxLen := opts.MaxSMILESLen
	switch {
	case maxLen == 0:
		maxLen = DefaultMaxSMILESLen
	case maxLen < 0:
		maxLen = 0
	}
	po := opts.PoolOptions
	// -I: isolated mode, so PYTHONPATH and the user's site-packages cannot
	// shadow Debian's RDKit or numpy. -u: unbuffered stderr.
	po.command = []string{python, "-I", "-u", script, "--max-smiles-len", strconv.Itoa(maxLen), "--rules-data", rulesData}
	po.name = "RDKit worker (" + python + ")"
	po.handshake = true
	return newPool(po), nil
}

// workerScript writes the embedded worker to the user's cache directory
// (or the temporary directory) under a name derived from its content, so
// that binaries of different versions never share a file, and returns its
// path.
func workerScript() (string, error) {
	sum := sha256.Sum256(workerSource)
	dir, err := cacheDir()
	if err != nil {
		return "", fmt.Errorf("objective: writing the RDKit worker: %w", err)
	}
	path := filepath.Join(dir, "nfbo-rdkit-worker-"+hex.EncodeToString(sum[:8])+".py")
	if err := writeCached(path, workerSource); err != nil {
		return "", fmt.Errorf("objective: writing the RDKit worker: %w", err)
	}
	return path, nil
}

// rulesDataDir writes the default chemistry rules' generated data (package data's rules files: the alerts and
// the atom environments seen in real molecules) to a directory of the cache named by their content, for the
// worker's --rules-data, and returns its path.
func rulesDataDir() (string, error) {
	files := []string{"alerts.tsv", "environments.txt.gz"}
	h := sha256.New()
	contents := make([][]byte, len(files))
	for i, name := range files {
		b, err := data.Rules(name)
		if err != nil {
			return "", fmt.Errorf("objective: %w", err)
		}
		contents[i] = b
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	base, err := cacheDir()
	if err != nil {
		return "", fmt.Errorf("objective: writing the rules data: %w", err)
	}
	dir := filepath.Join(base, "nfbo-rules-"+hex.EncodeToString(h.Sum(nil)[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("objective: writing the rules data: %w", err)
	}
	for i, name := range files {
		if err := writeCached(filepath.Join(dir, name), contents[i]); err != nil {
			return "", fmt.Errorf("objective: writing the rules data: %w", err)
		}
	}
	return dir, nil
}

// cacheDir is nfbo's directory in the user's cache directory, or the temporary directory.
func cacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err == nil {
		dir = filepath.Join(dir, "nfbo")
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		dir = os.TempDir()
	}
	return dir, nil
}

// writeCached makes path hold content unless it does already, atomically, so a concurrent nfbo never reads a
// half-written file.
func writeCached(path string, content []byte) error {
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, content) {
		return nil
	}
	return atomicfile.Write(path, content)
}

// Version describes the worker's software.
type Version struct {
	Protocol int
	RDKit    string
	Numpy    string
	Python   string
}

// Version asks one worker for its protocol, RDKit, numpy and Python versions.
func (pl *Pool) Version(ctx context.Context) (Version, error) {
	resp, err := pl.single(ctx, &request{Op: "hello"})
	if err != nil {
		return Version{}, fmt.Errorf("objective: version: %w", err)
	}
	return Version{Protocol: resp.Protocol, RDKit: resp.RDKit, Numpy: resp.Numpy, Python: resp.Python}, nil
}

// Tasks asks one worker for the tasks it implements.
func (pl *Pool) Tasks(ctx context.Context) ([]TaskInfo, error) {
	resp, err := pl.single(ctx, &request{Op: "tasks"})
	if err != nil {
		return nil, fmt.Errorf("objective: listing tasks: %w", err)
	}
	return resp.Tasks, nil
}

// single sends one request to one worker, retrying on a fresh worker.
func (pl *Pool) single(ctx context.Context, req *request) (*response, error) {
	var resp *response
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		r, err := pl.do(ctx, s, req, 0)
		resp = r
		return 1, err
	}
	var lastErr error
	poison := func(_ int, err error) { lastErr = err }
	if _, err := pl.run(ctx, 1, fn, poison, nil); err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, lastErr
	}
	return resp, nil
}

// UnknownTaskError is CheckTasks' answer for a task the RDKit worker does not have.
type UnknownTaskError struct {
	Task    string
	Known   []string // the worker's task names
	Aliases []string // and their other names
}

// Error names the task, the known name nearest to it when one is near, and the command that lists them all
// (the whole list, 43 names, is too long for a message).
func (e *UnknownTaskError) Error() string {
	msg := fmt.Sprintf("unknown task %q", e.Task)
	if near := suggest.Closest(e.Task, append(slices.Clip(e.Known), e.Aliases...)); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return msg + fmt.Sprintf(" (\"nfbo tasks\" lists the %d tasks)", len(e.Known))
}

// CheckTasks returns an *UnknownTaskError for the first of tasks that the worker knows neither by name nor by
// alias, so that a command fails before its first batch rather than on it.
func (pl *Pool) CheckTasks(ctx context.Context, tasks []string) error {
	infos, err := pl.Tasks(ctx)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	var names, aliases []string
	for _, t := range infos {
		known[t.Name] = true
		for _, a := range t.Aliases {
			known[a] = true
		}
		names = append(names, t.Name)
		aliases = append(aliases, t.Aliases...)
	}
	for _, task := range tasks {
		if !known[task] {
			return &UnknownTaskError{Task: task, Known: names, Aliases: aliases}
		}
	}
	return nil
}
