package main

import (
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
	stdout, stderr, err := runCmd(t, newBenchCmd(), "", "-suite", "pmo20", "-tasks", "qed", "-methods", "nfbo",
		"-seeds", "1", "-model", "M", "-out", t.TempDir(), "-data", "../../data", "-n")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := "-budget 10000 -setting 1000+9000 -preset pmo"; !strings.Contains(stdout, want) || strings.Contains(stdout, "-init-count") {
		t.Errorf("command lacks %q, or holds -init-count:\n%s", want, stdout)
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
