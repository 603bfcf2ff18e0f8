package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// TestAskRefusedSwitchesNothing: ask on a run made with -objective-cmd said "from now on its scores come from nfbo
// tell" and then refused (here: its model is gone); it says so only once it has taken the run over (issue #56).
func TestAskRefusedSwitchesNothing(t *testing.T) {
	dir, out, _, _, _ := demoRun(t, 35)
	ckpt := filepath.Join(dir, model.CheckpointName)
	if err := os.Rename(ckpt, ckpt+".away"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCmd(t, newAskCmd(), "", "-run", out)
	if err == nil {
		t.Fatalf("ask without the run's model: no error\n%s", stderr)
	}
	if strings.Contains(stderr, "from now on") {
		t.Errorf("a refused ask says the run switched to tell:\n%s", stderr)
	}
	if err := os.Rename(ckpt+".away", ckpt); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err = runCmd(t, newAskCmd(), "", "-run", out); err != nil || !strings.Contains(stderr, "from now on its scores come from nfbo tell") {
		t.Errorf("ask on the run: %v; want it to say the run's scores now come from tell:\n%s", err, stderr)
	}
}

// TestDamagedLogRecordNamed: a flipped score digit or SMILES character in evaluations.jsonl was accepted
// silently by status and -resume; every record carries a check, and status, -resume, ask and tell each refuse the
// run naming the damaged line (issue #56).
func TestDamagedLogRecordNamed(t *testing.T) {
	dir, out, args, calls, _ := demoRun(t, 35)
	logPath := filepath.Join(out, "evaluations.jsonl")
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for _, damage := range []struct{ name, from, to string }{
		{"score digit", `"score":`, `"score":1`},
		{"SMILES character", `"smiles":"`, `"smiles":"C`},
	} {
		t.Run(damage.name, func(t *testing.T) {
			bad := slices.Clone(lines)
			bad[2] = strings.Replace(bad[2], damage.from, damage.to, 1)
			if err := os.WriteFile(logPath, []byte(strings.Join(bad, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(logPath, b, 0o644)
			paid := len(calls())
			tellFile := filepath.Join(dir, "tell.csv")
			os.WriteFile(tellFile, []byte("id,score\nm1,0.5\n"), 0o644)
			for _, c := range []struct {
				name string
				cmd  *Command
				args []string
			}{
				{"status", newStatusCmd(), []string{"-run", out}},
				{"optimize -resume", newOptimizeCmd(), append(slices.Clone(args), "-resume")},
				{"ask", newAskCmd(), []string{"-run", out}},
				{"tell", newTellCmd(), []string{"-run", out, tellFile}},
			} {
				_, stderr, err := runCmd(t, c.cmd, "", c.args...)
				if err == nil || !strings.Contains(err.Error(), logPath+":3: damaged") {
					t.Errorf("%s on a log damaged on line 3: %v, want an error naming %s:3 as damaged\n%s", c.name, err, logPath, stderr)
				}
			}
			if n := len(calls()); n != paid {
				t.Errorf("%d objective calls on a damaged log, want none", n-paid)
			}
		})
	}
}

// TestInvalidRunJSONRebuilt: run.json made invalid stopped status, ask, -resume and -resume -restart with the
// parser's error and no way forward; -resume (and ask) rebuild it from the flags and the log, and status says
// how (issue #56).
func TestInvalidRunJSONRebuilt(t *testing.T) {
	_, out, args, calls, _ := demoRun(t, 45)
	paid := len(calls())
	infoPath := filepath.Join(out, "run.json")
	b, err := os.ReadFile(infoPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, leg := range [][]string{{"-resume"}, {"-resume", "-restart"}} {
		if err := os.WriteFile(infoPath, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := runCmd(t, newStatusCmd(), "", "-run", out); err == nil || !strings.Contains(err.Error(), "optimize -resume with the run's flags rebuilds it") {
			t.Errorf("status on an invalid run.json: %v, want the way to rebuild it", err)
		}
		stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append(slices.Clone(args), leg...)...)
		if err != nil && !strings.Contains(err.Error(), "is intact; resume without -restart") {
			t.Fatalf("%v on an invalid run.json: %v\n%s", leg, err, stderr)
		}
		if !strings.Contains(stderr, "rebuilt from this command's flags") {
			t.Errorf("%v: nothing says run.json was rebuilt:\n%s", leg, stderr)
		}
		if _, _, err := runCmd(t, newStatusCmd(), "", "-run", out); err != nil {
			t.Errorf("status after %v: %v\n%s", leg, err, stdout)
		}
	}
	if n := len(calls()); n != paid {
		t.Errorf("%d calls paid again after run.json was rebuilt", n-paid)
	}
}
