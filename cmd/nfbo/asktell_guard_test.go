package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

// TestAskOutputNeverARunFile asks with -o naming the run's own files, directly, through another path and through
// a symbolic link: each is refused before anything is written, and the run's files are unchanged; a batch file
// beside them is fine.
func TestAskOutputNeverARunFile(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	writeTinyModel(t, dir)
	run := filepath.Join(dir, "run")
	batch := askBatch(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "16",
		"-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	tell(t, run, tellFile(t, dir, "b1.csv", batch[:3]))
	link := filepath.Join(dir, "log-link.jsonl")
	if err := os.Symlink(filepath.Join(run, rundir.EvalLogFile), link); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		for _, name := range []string{rundir.EvalLogFile, rundir.AskedFile, rundir.InfoFile, rundir.ArgsFile} {
			b, err := os.ReadFile(filepath.Join(run, name))
			if err != nil {
				t.Fatal(err)
			}
			m[name] = b
		}
		return m
	}
	before := snapshot()
	for _, out := range []string{
		filepath.Join(run, rundir.EvalLogFile),
		filepath.Join(run, rundir.AskedFile),
		filepath.Join(run, rundir.InfoFile),
		filepath.Join(run, "..", "run", ".", rundir.ArgsFile),
		filepath.Join(run, rundir.CheckpointFile),
		filepath.Join(run, rundir.LockFile),
		link,
	} {
		_, _, err := runCmd(t, newAskCmd(), "", "-run", run, "-o", out)
		if err == nil || !strings.Contains(err.Error(), "is a file of the run") {
			t.Errorf("ask -o %s: %v, want a refusal", out, err)
		}
	}
	after := snapshot()
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("a refused ask changed %s", name)
		}
	}
	out := filepath.Join(run, "batch1.csv")
	if _, stderr, err := runCmd(t, newAskCmd(), "", "-run", run, "-o", out); err != nil {
		t.Fatalf("ask -o %s: %v\n%s", out, err, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.HasPrefix(string(b), "id,smiles\n"+batch[3][0]+",") {
		t.Errorf("batch file: %q", b)
	}
}

// TestAskRepeatsFirstCommand repeats the very first ask with the same flags (a client that lost the answer
// retries its command, the model given by another path): it gets the same batch; the same command with another
// value of a flag that makes the run is refused, naming the flag, and changes nothing.
func TestAskRepeatsFirstCommand(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	writeTinyModel(t, dir)
	run := filepath.Join(dir, "run")
	flags := []string{"-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "16",
		"-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir}
	first := askBatch(t, append([]string{"-run", run}, flags...)...)
	again := askBatch(t, append([]string{"-run", run}, flags...)...)
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("the first ask repeated gave %v, want %v", again, first)
	}
	cwd, _ := os.Getwd()
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	other := append([]string{"-run", run}, flags...)
	other[len(other)-1] = rel
	if b := askBatch(t, other...); fmt.Sprint(b) != fmt.Sprint(first) {
		t.Errorf("the first ask with the model's relative path gave %v", b)
	}
	ledger, _ := os.ReadFile(filepath.Join(run, rundir.AskedFile))
	changed := append([]string{"-run", run}, flags...)
	changed[9] = "20" // -budget
	_, _, err = runCmd(t, newAskCmd(), "", changed...)
	if err == nil || !strings.Contains(err.Error(), "-budget 20 (the run's: 16)") {
		t.Errorf("ask with another -budget: %v, want a refusal naming -budget", err)
	}
	if now, _ := os.ReadFile(filepath.Join(run, rundir.AskedFile)); !bytes.Equal(now, ledger) {
		t.Errorf("a refused ask changed the ledger")
	}
}

// TestAskN takes a batch a few molecules at a time with -n: the same ones until they are told, then the next,
// those handed out before first; without -n the whole rest; the next batch once all of it is told.
func TestAskN(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	writeTinyModel(t, dir)
	run := filepath.Join(dir, "run")
	first := askBatch(t, "-run", run, "-n", "3", "-task", "demo", "-init", guacamol100, "-init-count", "6",
		"-budget", "16", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	ids := func(rows [][2]string) string {
		var s []string
		for _, r := range rows {
			s = append(s, r[0])
		}
		return strings.Join(s, " ")
	}
	if got := ids(first); got != "m1 m2 m3" {
		t.Fatalf("ask -n 3: %s, want m1 m2 m3", got)
	}
	if got := ids(askBatch(t, "-run", run, "-n", "3")); got != "m1 m2 m3" {
		t.Fatalf("ask -n 3 again: %s, want the same", got)
	}
	tell(t, run, tellFile(t, dir, "a.csv", first[:2]))
	if got := ids(askBatch(t, "-run", run, "-n", "3")); got != "m3 m4 m5" {
		t.Fatalf("ask -n 3 after telling m1 m2: %s, want m3 m4 m5", got)
	}
	rest := askBatch(t, "-run", run)
	if got := ids(rest); got != "m3 m4 m5 m6" {
		t.Fatalf("ask without -n: %s, want m3 m4 m5 m6", got)
	}
	tell(t, run, tellFile(t, dir, "b.csv", rest))
	if next := askBatch(t, "-run", run, "-n", "2"); ids(next) != "m7 m8" {
		t.Fatalf("the next batch with -n 2: %s, want m7 m8", ids(next))
	}
	if _, _, err := runCmd(t, newAskCmd(), "", "-run", run, "-n", "-1"); err == nil {
		t.Error("ask -n -1 was accepted")
	}
}
