package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// failingOracle scores len(SMILES)/10. While $FAIL_CCO is set it crashes on any request holding CCO (so that the
// pool gives up on that molecule: it scores 0, unpaid); while $CLOSE_AT is set it refuses every request once
// that many molecules were scored (counted in the file $STATE, across restarts), which stops the run.
const failingOracle = `import json, os, sys
state = os.environ["STATE"]
for line in sys.stdin:
    req = json.loads(line)
    smiles = req["smiles"]
    if os.environ.get("FAIL_CCO") and "CCO" in smiles:
        sys.exit(3)
    done = open(state).read().count("x") if os.path.exists(state) else 0
    if os.environ.get("CLOSE_AT") and done >= int(os.environ["CLOSE_AT"]):
        resp = {"ok": False, "error": "the lab is closed"}
    else:
        resp = {"ok": True, "scores": [len(s) / 10 for s in smiles], "errors": ["" for s in smiles]}
        with open(state, "a") as f:
            f.write("x" * len(smiles))
    resp["id"] = req.get("id")
    print(json.dumps(resp), flush=True)
`

// failingRun prepares a tiny model, the failing oracle and six initial molecules for a run of budget calls, and
// returns the run directory and the optimize flags; $STATE is set to a file of the test's.
func failingRun(t *testing.T, budget int) (run string, flags []string) {
	t.Helper()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	script := filepath.Join(dir, "failing.py")
	if err := os.WriteFile(script, []byte(failingOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	python := strings.Fields(lengthOracle(t, dir))[0]
	init := filepath.Join(dir, "init.smi")
	os.WriteFile(init, []byte("CCO\nc1ccccc1O\nCC(=O)Nc1ccc(O)cc1\nCCN(CC)CC\nCC(C)Cc1ccc(cc1)C(C)C(=O)O\nOCC(O)CO\n"), 0o644)
	run = filepath.Join(dir, "run")
	flags = []string{"-task", "demo", "-objective-cmd", python + " " + script, "-init", init, "-budget", strconv.Itoa(budget),
		"-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir, "-rules", "none", "-out", run}
	t.Setenv("STATE", filepath.Join(dir, "scored"))
	return run, flags
}

// TestResumeAfterGivenUpInitialMolecule: an initial molecule the objective gave up on (unpaid) is sent again
// when the run resumes and paid this time; the run goes on (it was refused with "the configuration differs"),
// and its log ends with exactly the budget.
func TestResumeAfterGivenUpInitialMolecule(t *testing.T) {
	run, flags := failingRun(t, 16)
	t.Setenv("FAIL_CCO", "1")
	t.Setenv("CLOSE_AT", "5")
	_, stderr, err := runCmd(t, newOptimizeCmd(), "", flags...)
	if err == nil {
		t.Fatalf("the first leg finished; want it stopped by the closed lab\n%s", stderr)
	}
	if smiles, _ := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile)); len(smiles) != 5 {
		t.Fatalf("%d calls after the first leg, want the 5 initial molecules but CCO", len(smiles))
	}
	os.Unsetenv("FAIL_CCO")
	os.Unsetenv("CLOSE_AT")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append(flags, "-resume")...)
	if err != nil {
		t.Fatalf("resume: %v\n%s\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "6 initial molecules are paid for now against 5") {
		t.Errorf("no word of the molecule paid on resume:\n%s", stderr)
	}
	smiles, _ := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile))
	if len(smiles) != 16 {
		t.Errorf("%d calls in the log, want the budget 16", len(smiles))
	}
	seen := map[string]bool{}
	for _, s := range smiles {
		if seen[s] {
			t.Errorf("%s paid twice", s)
		}
		seen[s] = true
	}
	if !seen["CCO"] {
		t.Error("CCO was not paid on resume")
	}
}

// TestResumeKeepsStartedConfig: a run goes on with the configuration it started with where nfbo's defaults have
// changed since (simulated by a config.json holding another MaxStale than today's default, a setting no flag
// reaches), given the same flags; a flag that asks for another configuration is still refused.
func TestResumeKeepsStartedConfig(t *testing.T) {
	run, flags := failingRun(t, 21)
	t.Setenv("CLOSE_AT", "11") // the initial 6 and the first batch of 5, then the lab closes
	if _, stderr, err := runCmd(t, newOptimizeCmd(), "", flags...); err == nil {
		t.Fatalf("the first leg finished; want it stopped by the closed lab\n%s", stderr)
	}
	path := filepath.Join(run, rundir.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["MaxStale"] != 50.0 {
		t.Fatalf("config.json's MaxStale is %v, want today's default 50:\n%s", cfg["MaxStale"], b)
	}
	cfg["MaxStale"] = 49 // as an nfbo with another default wrote it
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("CLOSE_AT")

	_, stderr, err := runCmd(t, newOptimizeCmd(), "", append(slices.Clone(flags), "-queries", "4", "-resume")...)
	if err == nil || !strings.Contains(stderr+err.Error(), "configuration differs") {
		t.Fatalf("resume with -queries 4: err %v, want the configuration refused\n%s", err, stderr)
	}
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append(flags, "-resume")...)
	if err != nil {
		t.Fatalf("resume with the same flags: %v\n%s\n%s", err, stdout, stderr)
	}
	if smiles, _ := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile)); len(smiles) != 21 {
		t.Errorf("%d calls in the log, want the budget 21", len(smiles))
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Errorf("config.json rewritten on resume:\n%s\nwant\n%s", after, b)
	}
}
