package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/model/modeltest"
)

// TestOptimizeCmdBrokenObjective runs optimize, as a user would, against
// objective programs that are broken in the ways seen in the field. Each must
// stop the run with an error naming the program, pay nothing for molecules
// that got no answer, and leave a run that, once the program is fixed,
// resumes and scores those molecules (issue #11, defect 1).
func TestOptimizeCmdBrokenObjective(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Python workers and an optimiser run per case")
	}
	const header = "import json, sys, time\n"
	cases := []struct {
		name, script string
		args         []string
		// paid is the most calls the broken program may be paid for: 0 when
		// it never answers; the error streak when it answers only errors.
		paid int
		want string
	}{
		{"exits", header + "sys.exit(3)\n", nil, 0, "failed 9 requests in a row"},
		{"hangs", header + "time.sleep(600)\n", []string{"-timeout", "1s"}, 0, "did not answer within 1s"},
		{"nan", header + `for line in sys.stdin:
    req = json.loads(line)
    n = len(req.get("smiles", []))
    print(json.dumps({"id": req["id"], "ok": True, "scores": [float("nan")] * n}), flush=True)
`, nil, 0, "no usable score"},
		{"errors", header + `for line in sys.stdin:
    req = json.loads(line)
    n = len(req.get("smiles", []))
    print(json.dumps({"id": req["id"], "ok": True, "scores": [None] * n, "errors": ["licence expired"] * n}), flush=True)
`, nil, 2 * objective.DefaultMaxErrorStreak, "licence expired"},
	}
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	fixed := lengthOracle(t, dir)
	python := strings.Fields(fixed)[0]
	const budget = 150
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := filepath.Join(dir, tc.name+".py")
			if err := os.WriteFile(script, []byte(tc.script), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "run-"+tc.name)
			args := append([]string{"-task", "demo", "-objective-cmd", python + " " + script, "-init", guacamol100,
				"-init-count", "6", "-budget", strconv.Itoa(budget), "-candidates", "200", "-model", dir, "-out", out}, tc.args...)
			_, stderr, err := runCmd(t, newOptimizeCmd(), "", args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an error saying %q\nstderr:\n%s", err, tc.want, stderr)
			}
			if tc.paid == 0 && !strings.Contains(err.Error(), script) {
				t.Errorf("err = %v, want it to name the program %s", err, script)
			}
			smiles, scores := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
			if len(smiles) > tc.paid || len(smiles) >= budget {
				t.Errorf("%d calls paid to a broken program, want at most %d", len(smiles), tc.paid)
			}
			for i, s := range scores {
				if s != 0 {
					t.Errorf("call %d scored %v by a program that gives no score", i+1, s)
				}
			}
			paidBroken := len(smiles)

			// The program is fixed: -resume with the same command scores what was
			// left unanswered, pays nothing twice and spends the budget exactly.
			if err := os.WriteFile(script, []byte(exampleOracle), 0o644); err != nil {
				t.Fatal(err)
			}
			// A generous -timeout (the last one given wins): the hung case's 1s is for the broken program, and a
			// loaded machine can take longer than that to start the fixed one.
			resume := append(append([]string{}, args...), "-resume", "-timeout", "2m")
			if _, stderr, err := runCmd(t, newOptimizeCmd(), "", resume...); err != nil {
				t.Fatalf("resume after the fix: %v\nstderr:\n%s", err, stderr)
			}
			smiles, scores = readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
			if len(smiles) != budget {
				t.Errorf("%d calls in the log after the resume, want the budget %d", len(smiles), budget)
			}
			seen := map[string]bool{}
			for i, s := range smiles {
				if seen[s] {
					t.Errorf("call %d pays for %s a second time", i+1, s)
				}
				seen[s] = true
			}
			// Every molecule after the broken program's calls got a real score:
			// the fixed oracle scores len(SMILES)/10 > 0.
			for i := paidBroken; i < len(scores); i++ {
				if scores[i] <= 0 {
					t.Errorf("call %d scored %v after the fix", i+1, scores[i])
				}
			}
		})
	}
}
