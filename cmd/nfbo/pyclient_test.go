package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// pyClientTests is the Python client's test file, run by TestPythonClient against real servers.
const pyClientTests = "../../clients/python/test_nfbo_client.py"

// TestPythonClient runs clients/python's tests (the client's ask, tell in its three forms, refused tells,
// status, report and loop to the end of the budget, and a bearer token right and wrong) with the Python that
// has RDKit, against two real servers on loopback: a run of budget 50, and a run served with -token-file. Then
// the run's evaluation log must hold exactly the budget, every call scored as the client scored it.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	needRDKit(t) // the servers canonicalise with RDKit; the client itself needs only the standard library
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	base, stderr := startServe(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "40",
		"-budget", "50", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	// serve accepts a token on loopback too, so the token path is tested without listening beyond this host.
	const token = "0123456789abcdef0123"
	tokenPath := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenBase, tokenStderr := startServe(t, "-run", filepath.Join(dir, "token-run"), "-token-file", tokenPath,
		"-task", "demo", "-init", guacamol100, "-init-count", "5", "-budget", "10", "-model", dir)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// -B: no __pycache__ in the source tree.
	cmd := exec.CommandContext(ctx, objective.DefaultPython, "-B", pyClientTests, "-v")
	cmd.Env = append(os.Environ(), "NFBO_URL="+base, "NFBO_TOKEN_URL="+tokenBase, "NFBO_TOKEN="+token,
		// urllib honours proxy variables, and a proxy would not reach these loopback servers.
		"no_proxy=127.0.0.1,localhost", "NO_PROXY=127.0.0.1,localhost")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s\nserver:\n%s\ntoken server:\n%s", pyClientTests, err, out, stderr, tokenStderr)
	}
	t.Logf("%s", out)
	// A test skipped for want of a server would hide a broken client.
	if strings.Contains(string(out), "skipped") {
		t.Fatalf("%s skipped tests against the servers:\n%s", pyClientTests, out)
	}

	recs, _, torn, err := rundir.ReadLog(filepath.Join(run, rundir.EvalLogFile))
	if err != nil || torn != 0 {
		t.Fatalf("read the log: %v (torn %d)", err, torn)
	}
	if len(recs) != 50 {
		t.Fatalf("%d calls in the log, want the budget, 50", len(recs))
	}
	var errs []string
	for i, r := range recs {
		switch {
		case r.Call != i+1:
			t.Errorf("record %d has call %d", i+1, r.Call)
		case r.Error != "":
			errs = append(errs, r.Error)
		case r.Score != lengthScore(r.Canonical):
			t.Errorf("call %d: %s scored %v, want %v", r.Call, r.Canonical, r.Score, lengthScore(r.Canonical))
		}
	}
	// The error row told by hand, then the failure of loop's score function.
	want := []string{"synthesis failed", "RuntimeError: could not make it"}
	if strings.Join(errs, "|") != strings.Join(want, "|") {
		t.Errorf("error rows %q, want %q", errs, want)
	}
}
