package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// curveTestLog is engine/train's test log of three runs (see its log_test.go).
var curveTestLog = func() string {
	b, err := os.ReadFile("../../engine/train/testdata/pretrain.log")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// nfbo curve writes PREFIX.png and PREFIX.svg (pretrain's tests check them) and prints the validation rows as a
// Markdown table; a -from past the last step fails, and no log is a usage error.
func TestCurveCommandWritesPlots(t *testing.T) {
	dir := t.TempDir()
	logName := filepath.Join(dir, "train.log")
	if err := os.WriteFile(logName, []byte(curveTestLog), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "img", "pretrain")
	stdout, stderr, code := run(t, "", "curve", "-out", prefix, logName)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, name := range []string{prefix + ".png", prefix + ".svg"} {
		if fi, err := os.Stat(name); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a non-empty file", name, err)
		}
	}
	if !strings.Contains(stdout, "| 40 | 1 | 5048 | 6.0000 | 0.6000 | 0.1600 | 0.6200 | 0.1620 |") {
		t.Errorf("stdout lacks the validation row of step 40:\n%s", stdout)
	}
	if _, _, code := run(t, "", "curve", "-from", "100", "-out", prefix, logName); code != 1 {
		t.Errorf("-from past the last step: exit %d, want 1", code)
	}
	if _, _, code := run(t, "", "curve"); code != 2 {
		t.Errorf("no log: exit %d, want 2", code)
	}
}

// curve reads a log whose last line is still being written, and says so.
func TestCurveTornLastLine(t *testing.T) {
	torn := curveTestLog + "step 50/60 epoch 2 loss 5.5"
	dir := t.TempDir()
	path := filepath.Join(dir, "train.log")
	os.WriteFile(path, []byte(torn), 0o644)
	_, stderr, err := runCmd(t, newCurveCmd(), "", "-out", filepath.Join(dir, "c"), path)
	if err != nil || !strings.Contains(stderr, "train.log:17: the last line has no newline yet (27 bytes") {
		t.Errorf("curve on a torn log: %v\n%s", err, stderr)
	}
}
