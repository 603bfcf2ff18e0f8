package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFlowstatsCmd runs flowstats on a tiny random model: every table is printed, the anchors are the best by
// the -task column, and bad flags are usage errors.
func TestFlowstatsCmd(t *testing.T) {
	dir := t.TempDir()
	writeTinyModel(t, dir)
	out, stderr, err := runCmd(t, newFlowstatsCmd(), "", "-model", dir, "-data", guacamol100, "-n", "40",
		"-anchors", guacamol100, "-task", "adip", "-top", "3", "-t", "60", "-nll-t", "40,60", "-samples", "50",
		"-per-anchor", "4", "-lengths", "0.8,0.05", "-backend", "go")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| data | 40 |", "| prior samples, T = 60 | 50 |",
		"| 40 |", "| 60 |",
		"the best 3 molecules by adip of " + guacamol100,
		"| 0.8 | ", " / 12 |", "| 0.05 | ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// A tiny random model still inverts exactly: every molecule that fits comes back.
	if m := regexp.MustCompile(`Decoding at T = 60: (\d+) of (\d+) molecules`).FindStringSubmatch(out); m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("output lacks a full reconstruction line: %q", m)
	}
	for _, args := range [][]string{
		{"-model", dir},
		{"-model", dir, "-data", guacamol100, "-task", "adip"},
		{"-model", dir, "-data", guacamol100, "-lengths", "0.8,x"},
		{"-model", dir, "-data", guacamol100, "-prob", "0"},
	} {
		if _, _, err := runCmd(t, newFlowstatsCmd(), "", args...); err == nil {
			t.Errorf("flowstats %v: no error", args)
		}
	}
	if _, _, err := runCmd(t, newFlowstatsCmd(), "", "-model", dir, "-data", filepath.Join(dir, "none.csv")); err == nil {
		t.Error("missing -data file: no error")
	}
}
