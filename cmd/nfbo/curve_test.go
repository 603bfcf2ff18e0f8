package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log of three runs: the first is killed after step 50 with its last
// checkpoint at step 20, the second resumes from 20, logs step 30 again and
// is interrupted at 35, the third resumes from 35. Messages between the runs
// are ignored.
const curveTestLog = `pretrain: 3200 molecules (0 skipped): 3000 train, 200 validation; V=10 T=8, nlsq, 1234 parameters; steps 0 → 60, batch 128
pretrain: graphs compiled in 0.1s
step 10/60 epoch 0 loss 10.0000 nll/token 1.0000 sim/token 0.2000 30.0 seq/s left 1m0s
step 20/60 epoch 0 loss 9.0000 nll/token 0.9000 sim/token 0.1900 30.0 seq/s left 50s | val nll/token 0.9500 sim/token 0.1950 | checkpoint
step 30/60 epoch 1 loss 8.0000 nll/token 0.8000 sim/token 0.1800 30.0 seq/s left 40s
step 40/60 epoch 1 loss 7.0000 nll/token 0.7000 sim/token 0.1700 30.0 seq/s left 30s | val nll/token 0.7500 sim/token 0.1750
step 50/60 epoch 2 loss 5.0000 nll/token 0.5000 sim/token 0.1500 30.0 seq/s left 20s
pretrain: 3200 molecules (0 skipped): 3000 train, 200 validation; V=10 T=8, nlsq, 1234 parameters; steps 20 → 60, batch 128
pretrain: graphs compiled in 0.1s
step 30/60 epoch 1 loss 8.5000 nll/token 0.8500 sim/token 0.1850 30.0 seq/s left 40s | val nll/token 0.8800 sim/token 0.1880
pretrain: interrupted at step 35; checkpoint written to x/seqflow.ckpt
nfbo: context canceled
pretrain: 3200 molecules (0 skipped): 3000 train, 200 validation; V=10 T=8, nlsq, 1234 parameters; steps 35 → 60, batch 128
pretrain: graphs compiled in 0.1s
step 40/60 epoch 1 loss 6.5000 nll/token 0.6500 sim/token 0.1650 30.0 seq/s left 20s
step 40/60 epoch 1 loss 6.0000 nll/token 0.6000 sim/token 0.1600 30.0 seq/s left 20s | val nll/token 0.6200 sim/token 0.1620 | checkpoint
`

func TestParseTrainLogResume(t *testing.T) {
	lg, err := parseTrainLog("train.log", strings.NewReader(curveTestLog))
	if err != nil {
		t.Fatal(err)
	}
	if lg.Batch != 128 || lg.TrainSize != 3000 || !lg.Consistent {
		t.Errorf("batch %d, train size %d, consistent %v; want 128, 3000, true", lg.Batch, lg.TrainSize, lg.Consistent)
	}
	// Step 30 and 40 come from the later runs; the first run's steps 40 and
	// 50 were dropped by the header "steps 20 →" (its training was lost),
	// and the later of the two lines for step 40 wins.
	want := []logPoint{
		{Step: 10, Epoch: 0, Loss: 10, NLL: 1, Sim: 0.2, Line: 3},
		{Step: 20, Epoch: 0, Loss: 9, NLL: 0.9, Sim: 0.19, HasVal: true, ValNLL: 0.95, ValSim: 0.195, Line: 4},
		{Step: 30, Epoch: 1, Loss: 8.5, NLL: 0.85, Sim: 0.185, HasVal: true, ValNLL: 0.88, ValSim: 0.188, Line: 10},
		{Step: 40, Epoch: 1, Loss: 6, NLL: 0.6, Sim: 0.16, HasVal: true, ValNLL: 0.62, ValSim: 0.162, Line: 16},
	}
	if len(lg.Points) != len(want) {
		t.Fatalf("got %d points %+v, want %d", len(lg.Points), lg.Points, len(want))
	}
	for i, w := range want {
		if lg.Points[i] != w {
			t.Errorf("point %d:\n got %+v\nwant %+v", i, lg.Points[i], w)
		}
	}
	// 3000 training sequences in batches of 128: 24 steps an epoch, the
	// last of 56 sequences.
	for _, tc := range []struct {
		step, epoch, want int64
		ok                bool
	}{{20, 0, 2560, true}, {24, 0, 3000, true}, {25, 1, 3128, true}, {40, 1, 5048, true}, {30, 0, 0, false}, {10, 1, 0, false}} {
		n, ok := lg.seqsSeen(logPoint{Step: tc.step, Epoch: tc.epoch})
		if n != tc.want || ok != tc.ok {
			t.Errorf("seqsSeen(step %d, epoch %d) = %d, %v; want %d, %v", tc.step, tc.epoch, n, ok, tc.want, tc.ok)
		}
	}
}

// Without header lines only "the later line for a step wins" applies.
func TestParseTrainLogRepeatedStepNoHeader(t *testing.T) {
	log := `step 20/30 epoch 0 loss 2.0000 nll/token 0.2000 sim/token 0.0200 1.0 seq/s left 1s
step 10/30 epoch 0 loss 1.0000 nll/token 0.1000 sim/token 0.0100 1.0 seq/s left 1s
step 20/30 epoch 0 loss 3.0000 nll/token 0.3000 sim/token 0.0300 1.0 seq/s left 1s
`
	lg, err := parseTrainLog("x", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Points) != 2 || lg.Points[0].Step != 10 || lg.Points[1].Loss != 3 || lg.Points[1].Line != 3 {
		t.Fatalf("points %+v; want steps 10 and 20, step 20 from line 3", lg.Points)
	}
	if lg.Batch != 0 {
		t.Errorf("batch %d without a header, want 0", lg.Batch)
	}
}

func TestParseTrainLogMalformed(t *testing.T) {
	good := "step 10/30 epoch 0 loss 1.0000 nll/token 0.1000 sim/token 0.0100 1.0 seq/s left 1s\n"
	for _, tc := range []struct{ name, bad, want string }{
		{"number", "step 20/30 epoch 0 loss 1.0x nll/token 0.1 sim/token 0.01 1.0 seq/s left 1s", "1.0x"},
		{"short", "step 20/30 epoch 0 loss 1.0", "malformed step line"},
		{"keyword", "step 20/30 epoch 0 loss 1.0 nll 0.1 sim/token 0.01 1.0 seq/s left 1s", "malformed step line"},
		{"val", good[:len(good)-1] + " | val nll/token abc sim/token 0.1", "abc"},
		{"part", good[:len(good)-1] + " | frobnicate", "frobnicate"},
	} {
		log := good + "nfbo: context canceled\n" + tc.bad + "\n" + good
		_, err := parseTrainLog("runs/train.log", strings.NewReader(log))
		if err == nil {
			t.Errorf("%s: no error for %q", tc.name, tc.bad)
			continue
		}
		if !strings.HasPrefix(err.Error(), "runs/train.log:3: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q; want it to start with runs/train.log:3: and mention %q", tc.name, err, tc.want)
		}
	}
	if _, err := parseTrainLog("empty.log", strings.NewReader("pretrain: graphs compiled in 0.1s\n")); err == nil || !strings.Contains(err.Error(), "empty.log: no step lines") {
		t.Errorf("log without steps: error %v", err)
	}
}

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

// A log whose last line is still being written (pretraining running) is read without it, with a note; before,
// "curve" refused it as malformed.
func TestCurveTornLastLine(t *testing.T) {
	torn := curveTestLog + "step 50/60 epoch 2 loss 5.5"
	lg, err := parseTrainLog("train.log", strings.NewReader(torn))
	if err != nil {
		t.Fatalf("torn last line: %v", err)
	}
	if len(lg.Points) != 4 || lg.TornLine != 17 || lg.TornBytes != len("step 50/60 epoch 2 loss 5.5") {
		t.Errorf("%d points, torn line %d (%d bytes); want 4 points and line 17 left out", len(lg.Points), lg.TornLine, lg.TornBytes)
	}
	// Left out even when it parses: the number at its end may be cut short.
	lg, err = parseTrainLog("train.log", strings.NewReader(curveTestLog+"step 50/60 epoch 2 loss 5.0000 nll/token 0.5000 sim/token 0.15 30.0 seq/s left 2"))
	if err != nil || len(lg.Points) != 4 || lg.TornLine != 17 {
		t.Errorf("torn line that parses: %v, %d points, torn line %d", err, len(lg.Points), lg.TornLine)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "train.log")
	os.WriteFile(path, []byte(torn), 0o644)
	_, stderr, err := runCmd(t, newCurveCmd(), "", "-out", filepath.Join(dir, "c"), path)
	if err != nil || !strings.Contains(stderr, "train.log:17: the last line has no newline yet (27 bytes") {
		t.Errorf("curve on a torn log: %v\n%s", err, stderr)
	}
	// A malformed complete line is still an error, quoted and clipped.
	bad := curveTestLog + "step 70/60 epoch \x1b[31m" + strings.Repeat("x", 1<<16) + "\n"
	_, err = parseTrainLog("train.log", strings.NewReader(bad))
	if err == nil || !strings.Contains(err.Error(), "train.log:17: malformed step line") || len(err.Error()) > 400 ||
		strings.Contains(err.Error(), "\x1b") {
		t.Errorf("malformed line: %.400q", err)
	}
}

// FuzzParseTrainLog feeds arbitrary logs to the curve reader: it must never panic, and the points it returns
// must be sorted by step, one per step, each with the line it came from. The seed corpus is
// testdata/fuzz/FuzzParseTrainLog and the f.Add calls.
func FuzzParseTrainLog(f *testing.F) {
	f.Add([]byte(curveTestLog))
	f.Add([]byte(curveTestLog + "step 50/60 epoch 2 loss 5.5"))
	f.Add([]byte("step 1/2 epoch 0 loss 1 nll/token 2 sim/token 3 4 seq/s left 1s | val nll/token 1 sim/token 2 | checkpoint\n"))
	f.Add([]byte("step\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lg, err := parseTrainLog("fuzz.log", bytes.NewReader(data))
		if err != nil {
			return
		}
		lines := bytes.Count(data, []byte("\n"))
		for i, p := range lg.Points {
			if i > 0 && p.Step <= lg.Points[i-1].Step {
				t.Fatalf("points not in increasing step order: %+v", lg.Points)
			}
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("point %+v: line outside the %d complete lines", p, lines)
			}
		}
		_ = lg.numVal()
	})
}
