package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestAskCappedBatchPartlyTold asks for a last batch cut short by the budget, tells part of it (every subset
// shape: the first rows, the last, every other one) and asks again: the answer is exactly the untold rest of
// the batch with the same ids, never a molecule beyond the budget, and telling it finishes the run with the
// budget in the log and nothing awaiting.
func TestAskCappedBatchPartlyTold(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	// 6 initial molecules, then batches of up to 10 (a pick that is a paid molecule under another key is not asked
	// for again): the last optimiser batch is capped at what the budget leaves.
	flags := []string{"-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "20", "-anchors", "2",
		"-queries", "5", "-candidates", "100", "-model", dir}
	subsets := map[string]func(i int) bool{
		"first": func(i int) bool { return i < 2 },
		"last":  func(i int) bool { return i >= 2 },
		"odd":   func(i int) bool { return i%2 == 1 },
		"one":   func(i int) bool { return i == 2 },
	}
	for name, told := range subsets {
		t.Run(name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			batch := askBatch(t, append([]string{"-run", run}, flags...)...)
			paid := 0 // the calls told before batch
			for paid+len(batch) < 20 {
				paid += len(batch)
				tell(t, run, tellFile(t, dir, "all.csv", batch))
				batch = askBatch(t, "-run", run)
			}
			if len(batch) != 20-paid || len(batch) < 3 {
				t.Fatalf("the capped batch has %d molecules after %d paid, want the budget's last %d (at least 3)", len(batch), paid, 20-paid)
			}
			var part, rest [][2]string
			for i, r := range batch {
				if told(i) {
					part = append(part, r)
				} else {
					rest = append(rest, r)
				}
			}
			tell(t, run, tellFile(t, dir, "part.csv", part))
			again := askBatch(t, "-run", run)
			if fmt.Sprint(again) != fmt.Sprint(rest) {
				t.Fatalf("asked again after telling %v of the capped batch %v: got %v, want the untold %v", part, batch, again, rest)
			}
			if out := tell(t, run, tellFile(t, dir, "rest.csv", rest)); !containsAll(out, fmt.Sprintf("told %d new scores", len(rest)), "20 calls paid of 20", "0 molecules await") {
				t.Errorf("tell of the rest: %q", out)
			}
			if smiles, _ := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile)); len(smiles) != 20 {
				t.Errorf("%d calls in the log, want 20", len(smiles))
			}
			if rows := askBatch(t, "-run", run); len(rows) != 0 {
				t.Errorf("ask of the finished run gave %v", rows)
			}
			l, err := rundir.ReadLedger(run)
			if err != nil || len(l.Items) != 20 {
				t.Errorf("the ledger holds %d ids (%v), want the 20 paid", len(l.Items), err)
			}
		})
	}
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
