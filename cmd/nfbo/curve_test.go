package main

import (
	"bytes"
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

// nfbo curve writes non-empty PNG and SVG files and prints the validation
// rows as a Markdown table.
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
	png, err := os.ReadFile(prefix + ".png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s.png: err %v, %d bytes, not a PNG", prefix, err, len(png))
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("%s.svg: err %v, %d bytes, not an SVG", prefix, err, len(svg))
	}
	for _, want := range []string{
		"| step | epoch | sequences seen |",
		"| 20 | 0 | 2560 | 9.0000 | 0.9000 | 0.1900 | 0.9500 | 0.1950 |",
		"| 30 | 1 | 3768 | 8.5000 | 0.8500 | 0.1850 | 0.8800 | 0.1880 |",
		"| 40 | 1 | 5048 | 6.0000 | 0.6000 | 0.1600 | 0.6200 | 0.1620 |",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "| 10 |") {
		t.Errorf("table shows step 10, which has no validation:\n%s", stdout)
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
