// Package chemtest holds what the chemistry packages' tests share: RDKit through Debian's Python, which the
// tests skip without, and fail without under CI=true (DEVELOPERS.md), and the molecule sets shipped in data/.
package chemtest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
)

// NeedRDKit skips the test when the RDKit worker's Python (chem/objective.DefaultPython) cannot import RDKit,
// or fails it under CI=true.
func NeedRDKit(t testing.TB) {
	t.Helper()
	if err := exec.Command(objective.DefaultPython, "-c", "import rdkit").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RDKit is required under CI=true: %s -c 'import rdkit': %v", objective.DefaultPython, err)
		}
		t.Skipf("RDKit not available (%s -c 'import rdkit': %v)", objective.DefaultPython, err)
	}
}

// RDKit runs Python with RDKit (NeedRDKit first) and the arguments args ("-c" and a program, or a script file
// and its arguments) on lines, one per line of its standard input, and returns its output lines, which must be
// one per input line.
func RDKit(t testing.TB, lines []string, args ...string) []string {
	t.Helper()
	NeedRDKit(t)
	cmd := exec.Command(objective.DefaultPython, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("RDKit %s: %v\n%s", args[0], err, stderr.String())
	}
	var res []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		res = append(res, sc.Text())
	}
	if len(res) != len(lines) {
		t.Fatalf("RDKit answered %d of %d lines", len(res), len(lines))
	}
	return res
}

// Data returns the path of a file under the module's data/ directory, e.g. Data("zinc250k", "zinc.txt.gz").
func Data(elem ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", "..", "data"}, elem...)...)
}

// Zinc returns the first n molecules of ZINC250k (data/zinc250k/zinc.txt.gz).
func Zinc(t testing.TB, n int) []string {
	t.Helper()
	f, err := os.Open(Data("zinc250k", "zinc.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(z)
	for sc.Scan() && len(out) < n {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// LongEnv is the environment variable under which the data-set tests read every row of their sets (`make
// test-long`, which CI runs after `make test`); without it they read a fixed sample, so that `make test` stays
// within minutes on two cores while checking every column and code path.
const LongEnv = "NFBO_LONG_TESTS"

// Stride returns the step at which a data-set test reads its rows: 1 (every row) when LongEnv is "1", else
// every n-th row (every 20·n-th under -short). It logs which, so that a passing run says how much it checked.
func Stride(t testing.TB, n int) int {
	t.Helper()
	switch {
	case os.Getenv(LongEnv) == "1":
		return 1
	case testing.Short():
		n *= 20
	}
	t.Logf("every %d-th row of the set (%s=1, make test-long: all)", n, LongEnv)
	return n
}

// Every returns every n-th of xs, from the first: a data-set test's sample at Stride's step.
func Every[T any](xs []T, n int) []T {
	var out []T
	for i := 0; i < len(xs); i += n {
		out = append(out, xs[i])
	}
	return out
}
