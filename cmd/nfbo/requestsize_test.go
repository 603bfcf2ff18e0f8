package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
)

// sizeOracle is exampleOracle that also appends the number of molecules of each score request, one a line, to
// the file named by its first argument.
const sizeOracle = `import json, sys

sizes = open(sys.argv[1], "a")
for line in sys.stdin:
    req = json.loads(line)
    sizes.write("%d\n" % len(req["smiles"]))
    sizes.flush()
    resp = {"id": req["id"], "ok": True, "scores": [len(s) / 10 for s in req["smiles"]]}
    print(json.dumps(resp), flush=True)
`

// sizeOracleCmd writes sizeOracle into dir and returns its command line and the file of request sizes.
func sizeOracleCmd(t *testing.T, dir string) (cmdLine, sizes string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	script := filepath.Join(dir, "sizes.py")
	if err := os.WriteFile(script, []byte(sizeOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	sizes = filepath.Join(dir, "sizes")
	return python + " " + script + " " + sizes, sizes
}

// requestSizes reads the request sizes sizeOracle recorded.
func requestSizes(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", path, f)
		}
		out = append(out, n)
	}
	return out
}

// With -request-size 1, each request to the objective program holds one molecule, so that a crash or kill costs
// at most one molecule per worker; without it, requests hold up to 64.
func TestRequestSize(t *testing.T) {
	in := strings.Repeat("CCO\nc1ccccc1\nCCN\n", 3)
	t.Run("score", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []int
		}{
			{nil, []int{9}},
			{[]string{"-request-size", "1"}, []int{1, 1, 1, 1, 1, 1, 1, 1, 1}},
			{[]string{"-request-size", "4"}, []int{4, 4, 1}},
		} {
			oracle, sizes := sizeOracleCmd(t, t.TempDir())
			args := append([]string{"-task", "demo", "-objective-cmd", oracle}, tc.args...)
			if _, stderr, err := runCmd(t, newScoreCmd(), in, args...); err != nil {
				t.Fatalf("score %q: %v\n%s", tc.args, err, stderr)
			}
			if got := requestSizes(t, sizes); !slices.Equal(got, tc.want) {
				t.Errorf("score %q: requests of %v molecules, want %v", tc.args, got, tc.want)
			}
		}
	})
	t.Run("optimize", func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs the optimiser")
		}
		dir := t.TempDir()
		modeltest.WriteShippedVocabModel(t, dir)
		oracle, sizes := sizeOracleCmd(t, dir)
		out := filepath.Join(dir, "run")
		_, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", oracle, "-request-size", "1",
			"-init", guacamol100, "-init-count", "20", "-budget", "25", "-candidates", "200", "-model", dir, "-out", out)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		got := requestSizes(t, sizes)
		calls, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
		if len(got) != len(calls) {
			t.Errorf("%d requests for %d paid calls, want one each", len(got), len(calls))
		}
		for i, n := range got {
			if n != 1 {
				t.Errorf("request %d holds %d molecules, want 1", i+1, n)
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, tc := range []struct {
			cmd  *Command
			args []string
		}{
			{newScoreCmd(), []string{"-task", "demo", "-objective-cmd", "true"}},
			{newOptimizeCmd(), []string{"-task", "demo", "-objective-cmd", "true", "-init", guacamol100, "-model", t.TempDir(),
				"-out", t.TempDir()}},
		} {
			_, _, err := runCmd(t, tc.cmd, "CCO\n", append(tc.args, "-request-size", "0")...)
			if err == nil || !strings.Contains(err.Error(), "-request-size must be at least 1, not 0") || exitCode(err) != 2 {
				t.Errorf("%s -request-size 0: %v (exit %d), want a usage error", tc.cmd.Name(), err, exitCode(err))
			}
		}
	})
}
