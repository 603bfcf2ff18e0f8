package bo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, EvalLogFile)
	// A crash in the middle of a write leaves a last line without its newline: it is dropped.
	if err := os.WriteFile(path, []byte("{\"smiles\":\"1.\",\"score\":0.5}\n{\"smiles\":\"2.\",\"sco"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &toyScorer{}
	l, err := OpenEvalLog(path, sc)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 {
		t.Fatalf("Len = %d after a cut last line, want 1", l.Len())
	}
	scores, paid, err := l.Evaluate(context.Background(), []string{"1.", "2.", "3."})
	if err != nil {
		t.Fatal(err)
	}
	if scores[0] != 0.5 || paid[0] || !paid[1] || !paid[2] || sc.calls != 2 {
		t.Errorf("scores %v paid %v scorer calls %d; want 0.5 replayed and two paid", scores, paid, sc.calls)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 3 {
		t.Errorf("log has %d lines, want 3:\n%s", len(lines), b)
	}
	// Reopened, everything replays and nothing is paid.
	l, _ = OpenEvalLog(path, sc)
	_, paid, _ = l.Evaluate(context.Background(), []string{"3.", "2."})
	if paid[0] || paid[1] || sc.calls != 2 {
		t.Errorf("after reopening: paid %v, scorer calls %d; want nothing paid", paid, sc.calls)
	}
	l.Close()
	// A bad line that is not the last one is an error naming the file and line.
	os.WriteFile(path, []byte("{\"smiles\":\"1.\",\"score\":0.5}\nnot json\n{\"smiles\":\"2.\",\"score\":1}\n"), 0o644)
	if _, err := OpenEvalLog(path, sc); err == nil || !strings.Contains(err.Error(), EvalLogFile+":2") {
		t.Errorf("bad line 2: error %v, want one naming %s:2", err, EvalLogFile)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	for _, content := range []string{"first", "second"} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("read %q, want %q", b, content)
		}
	}
	if m, _ := filepath.Glob(path + ".tmp*"); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
