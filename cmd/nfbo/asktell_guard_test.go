package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestAskOutputNeverARunFile asks with -o naming the run's own files, directly, through another path and through
// a symbolic link: each is refused before anything is written, and the run's files are unchanged; a batch file
// beside them is fine.
func TestAskOutputNeverARunFile(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
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
	modeltest.WriteShippedVocabModel(t, dir)
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
	modeltest.WriteShippedVocabModel(t, dir)
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

// TestTellRefusesAmbiguous: input whose meaning is a guess is refused whole with FILE:LINE, through the tell
// command and the server, and changes nothing: a row with more fields than the header (the score column shifts),
// two score columns, a JSON line with a repeated key, hexadecimal scores.
func TestTellRefusesAmbiguous(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	askBatch(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "16",
		"-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	bad := map[string]struct{ text, want string }{
		"extra.csv":   {"id,note,score\nm1,ok,0.5\nm4,1,2,0.7\n", ":3: 4 fields, the header has 3"},
		"short.csv":   {"id,score,error\nm1,0.5,\nm2,0.6\n", ":3: 2 fields, the header has 3"},
		"twice.csv":   {"id,score,Score\nm1,0.5,0.6\n", `:1: header "id,score,Score" has two "score" columns (2 and 3)`},
		"ids.csv":     {"ID,score,id\nm1,0.5,m2\n", `:1: header "ID,score,id" has two "id" columns (1 and 3)`},
		"hex.csv":     {"id,score\nm1,0.5\nm2,0x1p-2\n", `:3: id m2: score "0x1p-2" is not a decimal number`},
		"under.csv":   {"id,score\nm2,1_000\n", ":2: id m2: score \"1_000\" is not a"},
		"repeat.json": {"{\"id\": \"m1\", \"score\": 0.5}\n{\"id\": \"m2\", \"score\": 0.5, \"score\": 0.6}\n", `:2: key "score" appears twice`},
		"case.json":   {"{\"id\": \"m2\", \"score\": 0.5, \"Score\": 0.6}\n", `:1: key "Score" appears twice`},
		"hex.json":    {"{\"id\": \"m2\", \"score\": \"0x1p-2\"}\n", `:1: id m2: score "0x1p-2" is not a decimal number`},
	}
	logPath := filepath.Join(run, rundir.EvalLogFile)
	for name, c := range bad {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(c.text), 0o644)
		_, _, err := runCmd(t, newTellCmd(), "", "-run", run, path)
		if err == nil || !strings.Contains(err.Error(), path+c.want) || !strings.Contains(err.Error(), "nothing was applied") {
			t.Errorf("tell %s: %v, want %q", name, err, path+c.want)
		}
	}
	if b, _ := os.ReadFile(logPath); len(b) != 0 {
		t.Fatalf("refused tells wrote %q", b)
	}
	// The same bodies through the server.
	base, _ := startServe(t, "-run", run)
	for name, c := range bad {
		var rep map[string]string
		if code := call(t, "POST", base+"/v1/tell", c.text, &rep); code != 400 || !strings.Contains(rep["error"], "request body"+c.want) {
			t.Errorf("serve tell %s: %d %v, want 400 with %q", name, code, rep, c.want)
		}
	}
	if b, _ := os.ReadFile(logPath); len(b) != 0 {
		t.Fatalf("refused tells through the server wrote %q", b)
	}
}
