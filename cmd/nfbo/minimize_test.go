package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeMinimize runs the length objective (len(SMILES)/10) with -minimize: the log keeps the objective's
// scores, the run's best molecule is its shortest, status lists the lowest scores first, the report's figures are
// of −score, and a resume without -minimize is refused.
func TestOptimizeMinimize(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out := filepath.Join(dir, "run")
	flags := []string{"-task", "demo", "-objective-cmd", lengthOracle(t, dir), "-init", guacamol100, "-init-count", "20",
		"-budget", "40", "-candidates", "200", "-model", dir, "-rules", "none", "-out", out}
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append(flags, "-minimize")...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	_, scores := readLogSMILES(t, filepath.Join(out, rundir.EvalLogFile))
	for i, s := range scores {
		if s <= 0 { // the objective's scores are lengths, positive; the optimiser's −score never reaches the log
			t.Fatalf("call %d: the log holds %v", i+1, s)
		}
	}
	lowest := slices.Min(scores)
	if !strings.Contains(stdout, "best molecules (score, SMILES):\n  "+strconv.FormatFloat(lowest, 'f', 6, 64)+"  ") {
		t.Errorf("the first best molecule is not the lowest score %v:\n%s", lowest, stdout)
	}
	run, err := bench.LoadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if f := run.Figures(); f.Top[0] != -lowest {
		t.Errorf("Top-1 %v, want −(lowest score) %v", f.Top[0], -lowest)
	}
	st, err := rundir.ReadStatus(out, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(st.Best); i++ {
		if st.Best[i].Score < st.Best[i-1].Score {
			t.Errorf("status best not lowest first: %v then %v", st.Best[i-1].Score, st.Best[i].Score)
		}
	}
	if st.Best[0].Score != lowest {
		t.Errorf("status best %v, want %v", st.Best[0].Score, lowest)
	}
	if _, _, err := runCmd(t, newOptimizeCmd(), "", append(flags, "-resume")...); err == nil || !strings.Contains(err.Error(), "minimize true") {
		t.Errorf("resume without -minimize: %v", err)
	}
}
