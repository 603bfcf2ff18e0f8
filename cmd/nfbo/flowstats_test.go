package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model/modeltest"
)

// TestFlowstatsCmd checks the flags around modelcheck.Flowstats (whose test checks the tables): bad flags are
// usage errors, and a run reaches the model and the data.
func TestFlowstatsCmd(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
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
	out, stderr, err := runCmd(t, newFlowstatsCmd(), "", "-model", dir, "-data", guacamol100, "-n", "10", "-top", "2", "-t", "60",
		"-nll-t", "60", "-samples", "5", "-per-anchor", "2", "-lengths", "0.5", "-backend", "go")
	if err != nil || !strings.Contains(out, "10 molecules of "+guacamol100) || !strings.Contains(out, "the first 2 molecules of "+guacamol100) {
		t.Errorf("flowstats: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
}
