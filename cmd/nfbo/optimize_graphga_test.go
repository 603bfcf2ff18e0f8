package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeGraphGA runs -method graph-ga, the graph GA with mol_opt's settings, on qed with RDKit: it names
// itself so in run.json and says its settings, pays for its initial molecules and spends the budget exactly.
func TestOptimizeGraphGA(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out := filepath.Join(dir, "run")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-method", "graph-ga", "-task", "qed", "-init", guacamol100,
		"-init-count", "20", "-budget", "160", "-model", dir, "-out", out, "-seed", "2")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	if want := "graph GA with mol_opt's settings (mutation rate 0.067, parents by score, children of 39.15 ± 3.5 heavy atoms) (population 120, 70 children per " +
		"generation, robust alphabet, graph+rings crossover, graph mutation)"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	info, err := rundir.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Method != "graph-ga" || info.Calls != 160 || !info.Finished || info.Initial != 20 || info.CPUSeconds <= 0 {
		t.Errorf("run.json: method %q, %d calls, finished %t, %d initial, CPU seconds %v; want graph-ga, 160, true, 20, > 0",
			info.Method, info.Calls, info.Finished, info.Initial, info.CPUSeconds)
	}
	// The first generation's children: 70 (those tried less the duplicates and the invalid).
	i := strings.Index(stdout, "iter 1 ")
	if i < 0 {
		t.Fatalf("no first generation:\n%s", stdout)
	}
	var gen, calls, budget, proposed, fresh, dup, invalid int
	if _, err := fmt.Sscanf(stdout[i:], "iter %d calls %d/%d best %f proposed %d new %d dup %d invalid %d",
		&gen, &calls, &budget, new(float64), &proposed, &fresh, &dup, &invalid); err != nil || proposed-dup-invalid != 70 {
		t.Errorf("first generation: %d tried, %d duplicates, %d invalid (%v), want 70 children:\n%s", proposed, dup, invalid, err, stdout)
	}
}
