package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// TestAskRefusedSwitchesNothing: ask on a run made with -objective-cmd said "from now on its scores come from nfbo
// tell" and then refused (here: its model is gone); it says so only once it has taken the run over (issue #56).
func TestAskRefusedSwitchesNothing(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle, _ := countingOracle(t, dir)
	smi, _, _ := writeInitFiles(t, dir, 25)
	out := filepath.Join(dir, "run")
	if _, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", oracle, "-init", smi,
		"-budget", "35", "-candidates", "200", "-model", dir, "-out", out, "-seed", "2"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	ckpt := filepath.Join(dir, model.CheckpointName)
	if err := os.Rename(ckpt, ckpt+".away"); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCmd(t, newAskCmd(), "", "-run", out)
	if err == nil {
		t.Fatalf("ask without the run's model: no error\n%s", stderr)
	}
	if strings.Contains(stderr, "from now on") {
		t.Errorf("a refused ask says the run switched to tell:\n%s", stderr)
	}
	if err := os.Rename(ckpt+".away", ckpt); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err = runCmd(t, newAskCmd(), "", "-run", out); err != nil || !strings.Contains(stderr, "from now on its scores come from nfbo tell") {
		t.Errorf("ask on the run: %v; want it to say the run's scores now come from tell:\n%s", err, stderr)
	}
}
