package bo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

func TestEvalLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, rundir.EvalLogFile)
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
	if _, err := OpenEvalLog(path, sc); err == nil || !strings.Contains(err.Error(), rundir.EvalLogFile+":2") {
		t.Errorf("bad line 2: error %v, want one naming %s:2", err, rundir.EvalLogFile)
	}
}

// A checkpoint or pending batch damaged on disk is refused, by InspectRunDir before anything is paid and by a
// resumed Run, with a *RunDirError wrapping rundir.ErrDamaged: whichever byte is flipped, and when the file is cut short
// or appended to. (Before the envelope, most byte flips were loaded silently.)
func TestRunDirDamage(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, &recorder{cancel: cancel, after: 2}, ctx)
	cancel()
	st, err := InspectRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Checkpoint || !st.Pending || st.Unchecked || st.Iterations != 2 || st.Calls == 0 {
		t.Fatalf("InspectRunDir = %+v, want an intact checkpoint at iteration 2 with its calls and a pending batch", st)
	}
	for _, name := range []string{rundir.CheckpointFile, rundir.PendingFile} {
		path := filepath.Join(dir, name)
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		damaged := func(what string, data []byte) {
			t.Helper()
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := InspectRunDir(dir)
			var re *RunDirError
			if !errors.Is(err, rundir.ErrDamaged) || !errors.As(err, &re) || re.Path != path {
				t.Fatalf("%s, %s: InspectRunDir error %v, want a *RunDirError for %s wrapping rundir.ErrDamaged", name, what, err, path)
			}
		}
		// Every byte of the header, and about 300 of the payload spread over it (CRC-32C detects every
		// single-bit error, so more would test the CRC, not the envelope).
		step := max(1, len(good)/300)
		for i := 0; i < len(good); i++ {
			if i >= rundir.EnvelopeHeader && i%step != 0 && i != len(good)-1 {
				continue
			}
			for _, bit := range []byte{0x01, 0x80} {
				data := bytes.Clone(good)
				data[i] ^= bit
				damaged(fmt.Sprintf("bit %#x of byte %d flipped", bit, i), data)
			}
		}
		damaged("cut short", good[:len(good)-1])
		damaged("header only", good[:rundir.EnvelopeHeader])
		damaged("cut in the header", good[:10])
		damaged("appended to", append(bytes.Clone(good), 0))

		// A resumed run stops at the damaged file before anything is evaluated.
		data := bytes.Clone(good)
		data[len(data)/2] ^= 0xff
		os.WriteFile(path, data, 0o644)
		sc := &toyScorer{}
		_, res, err := runToy(t, toyConfig(dir), memObjective{sc}, 1, nil, context.Background())
		var re *RunDirError
		if res.Status != StatusFailed || !errors.Is(err, rundir.ErrDamaged) || !errors.As(err, &re) || sc.calls != 0 {
			t.Errorf("%s: resume of a damaged file: status %v, err %v, %d calls; want a *RunDirError and no call", name, res.Status, err, sc.calls)
		}
		os.WriteFile(path, good, 0o644)
	}
	if _, res, err := runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, nil, context.Background()); err != nil || res.Status != StatusBudgetSpent {
		t.Fatalf("resume from the restored files: %v %v", res.Status, err)
	}
}

// Checkpoints written before the envelope (a bare gob stream) are still read, reported as unchecked, and the
// next checkpoint has the envelope.
func TestRunDirLegacyCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, &recorder{cancel: cancel, after: 1}, ctx)
	cancel()
	for _, name := range []string{rundir.CheckpointFile, rundir.PendingFile} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data[rundir.EnvelopeHeader:], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := InspectRunDir(dir)
	if err != nil || !st.Checkpoint || !st.Unchecked || st.Iterations != 1 {
		t.Fatalf("InspectRunDir of a bare gob checkpoint: %+v, %v", st, err)
	}
	rec := &recorder{}
	if _, res, err := runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, rec, context.Background()); err != nil || res.Status != StatusBudgetSpent {
		t.Fatalf("resume of a bare gob checkpoint: %v %v", res.Status, err)
	}
	if len(rec.log) == 0 || rec.log[0].Iteration != 2 {
		t.Errorf("resumed at %v, want iteration 2", rec.log)
	}
	if st, err := InspectRunDir(dir); err != nil || st.Unchecked {
		t.Errorf("after the resumed run: %+v, %v; want the envelope", st, err)
	}
}

// Config.Check finds what NewOptimizer finds, without a Problem.
func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		n    int
		want string
	}{
		{toyConfig(""), 30, ""},
		{toyConfig(""), 2, "3 anchors but only 2 initial points"},
		{Config{}, 30, "Budget = 0"},
		{Config{Budget: 10, Queries: 500, Candidates: 100}, 30, "Queries = 500 > Candidates = 100"},
		{Config{Budget: 10, PerturbProb: 2}, 30, "PerturbProb"},
	} {
		err := tc.cfg.Check(tc.n, toyT*2)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v, %d) = %v, want %q", tc.cfg, tc.n, err, tc.want)
		}
		if tc.want == "" {
			continue
		}
		init := toyInitial(rand.New(rand.NewPCG(99, 99)), tc.n, toyT, toyV)
		_, nerr := NewOptimizer(tc.cfg, Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}},
			Initial: init}, rand.NewPCG(1, 1), nil)
		if nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("NewOptimizer: %v, Check: %v; want the same error", nerr, err)
		}
	}
}
