package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dry run lists one optimize command per (task, method, seed), with the
// method's flags, and composes valt's initial data: the 100 molecules plus
// the two best-scoring valt molecules of the 10k set.
func TestBenchDryRun(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runCmd(t, newBenchCmd(), "", "-suite", "guacamol7", "-tasks", "adip,valt",
		"-methods", "nfbo,nfbo-no-tacs,ga", "-seeds", "1,2", "-model", "M", "-out", out, "-data", "../../data", "-n")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2*3*2 {
		t.Fatalf("%d commands, want 12:\n%s", len(lines), stdout)
	}
	for _, want := range []string{
		"optimize -task adip -init ../../data/guacamol/guacamol_train_data_first_100.csv -init-count 100 -budget 500 -preset guacamol-500",
		"-out " + filepath.Join(out, "adip", "nfbo-no-tacs", "seed2") + " -seed 2 -workers 1 -rules none -no-tacs",
		"-out " + filepath.Join(out, "valt", "ga", "seed1") + " -seed 1 -workers 1 -rules none -method ga -setting 100+500",
		"-init " + filepath.Join(out, "init", "valt_init.csv") + " -init-count 102",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no command contains %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "init", "valt_init.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(rows) != 1+102 || rows[0] != "smile,valt" {
		t.Fatalf("valt_init.csv: %d lines, header %q; want 103 and smile,valt", len(rows), rows[0])
	}
	if strings.HasSuffix(rows[101], ",0.0") || strings.HasSuffix(rows[102], ",0.0") {
		t.Errorf("the two added valt molecules score 0: %q, %q", rows[101], rows[102])
	}
}

// PMO pays for its initial molecules out of the budget: the 1,000 + 9,000 setting is 10,000 calls, how many of
// them go to initial molecules the method's preset chooses, and every run is filed under the suite's setting.
func TestBenchPMOBudget(t *testing.T) {
	stdout, stderr, err := runCmd(t, newBenchCmd(), "", "-suite", "pmo20-fixed", "-tasks", "qed", "-methods", "nfbo",
		"-seeds", "1", "-model", "M", "-out", t.TempDir(), "-data", "../../data", "-n")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := "-init ../../data/zinc250k/zinc.txt.gz -budget 10000 -setting 1000+9000 -preset pmo"; !strings.Contains(stdout, want) ||
		strings.Contains(stdout, "-init-count") {
		t.Errorf("command lacks %q, or holds -init-count:\n%s", want, stdout)
	}
}

// pmo20 is PMO's protocol: 5 seeds unless told otherwise, each seed's runs (every task and method) from its own
// draw of ZINC250k, under a setting of its own; graph-ga pays for the first 120 of the draw, its population.
func TestBenchPMORandomStarts(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runCmd(t, newBenchCmd(), "", "-suite", "pmo20", "-tasks", "qed,median1", "-methods", "nfbo,graph-ga",
		"-model", "M", "-out", out, "-data", "../../data", "-n")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2*2*5 {
		t.Fatalf("%d commands, want 20 (2 tasks, 2 methods, 5 seeds):\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		seed := l[strings.Index(l, " -seed ")+len(" -seed "):]
		seed = seed[:strings.Index(seed, " ")]
		init := "-init " + filepath.Join(out, "init", "zinc250k_seed"+seed+".csv") + " -budget 10000 -setting 1000+9000 random -preset pmo"
		if !strings.Contains(l, init) {
			t.Errorf("seed %s: command lacks %q: %s", seed, init, l)
		}
		if graph := strings.Contains(l, "-method graph-ga"); graph != strings.Contains(l, "-init-count 120") {
			t.Errorf("graph-ga %v, -init-count 120 %v: %s", graph, !graph, l)
		}
	}
	draws := map[string]bool{}
	for seed := 1; seed <= 5; seed++ {
		b, err := os.ReadFile(filepath.Join(out, "init", fmt.Sprintf("zinc250k_seed%d.csv", seed)))
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(rows) != 1+1000 || rows[0] != "smiles,name" {
			t.Fatalf("seed %d: %d lines, header %q; want 1001 and smiles,name", seed, len(rows), rows[0])
		}
		draws[string(b)] = true
	}
	if len(draws) != 5 {
		t.Errorf("5 seeds drew %d different sets", len(draws))
	}
}

// pmo20-zinc gives every run the best 1,000 of ZINC250k by the task's score, free, and 10,000 calls of its own,
// under a setting of its own; a dry run scores nothing.
func TestBenchZINCScored(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runCmd(t, newBenchCmd(), "", "-suite", "pmo20-zinc", "-tasks", "qed", "-methods", "nfbo",
		"-seeds", "2", "-model", "M", "-out", out, "-data", "../../data", "-n")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := "-init " + filepath.Join(out, "init", "zinc250k_best_qed.csv") + " -init-count 1000 -budget 10000 -setting 1000+10000 ZINC-scored -preset pmo"
	if !strings.Contains(stdout, want) {
		t.Errorf("command lacks %q:\n%s", want, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "init", "zinc250k_scores")); err == nil {
		t.Error("a dry run scored ZINC250k")
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-suite", "nope", "-model", "M", "-out", "O"},
		{"-suite", "guacamol7", "-model", "M", "-out", "O", "-methods", "sgd"},
		{"-suite", "guacamol7", "-model", "M", "-out", "O", "-tasks", "qed"},
		{"-suite", "guacamol7"},
	} {
		if _, _, err := runCmd(t, newBenchCmd(), "", args...); exitCode(err) != 2 {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
}
