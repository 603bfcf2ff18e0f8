package train

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// testLog is a log of three runs (testdata/pretrain.log): the first is killed after step 50 with its last
// checkpoint at step 20, the second resumes from 20, logs step 30 again and is interrupted at 35, the third
// resumes from 35. Messages between the runs are ignored.
var testLog = func() string {
	b, err := os.ReadFile("testdata/pretrain.log")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestParseLogResume(t *testing.T) {
	lg, err := ParseLog("train.log", strings.NewReader(testLog))
	if err != nil {
		t.Fatal(err)
	}
	if lg.Batch != 128 || lg.TrainSize != 3000 || !lg.Consistent {
		t.Errorf("batch %d, train size %d, consistent %v; want 128, 3000, true", lg.Batch, lg.TrainSize, lg.Consistent)
	}
	// Step 30 and 40 come from the later runs; the first run's steps 40 and
	// 50 were dropped by the header "steps 20 →" (its training was lost),
	// and the later of the two lines for step 40 wins.
	want := []LogPoint{
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
		n, ok := lg.SeqsSeen(LogPoint{Step: tc.step, Epoch: tc.epoch})
		if n != tc.want || ok != tc.ok {
			t.Errorf("seqsSeen(step %d, epoch %d) = %d, %v; want %d, %v", tc.step, tc.epoch, n, ok, tc.want, tc.ok)
		}
	}
}

// Without header lines only "the later line for a step wins" applies.
func TestParseLogRepeatedStepNoHeader(t *testing.T) {
	log := `step 20/30 epoch 0 loss 2.0000 nll/token 0.2000 sim/token 0.0200 1.0 seq/s left 1s
step 10/30 epoch 0 loss 1.0000 nll/token 0.1000 sim/token 0.0100 1.0 seq/s left 1s
step 20/30 epoch 0 loss 3.0000 nll/token 0.3000 sim/token 0.0300 1.0 seq/s left 1s
`
	lg, err := ParseLog("x", strings.NewReader(log))
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

func TestParseLogMalformed(t *testing.T) {
	good := "step 10/30 epoch 0 loss 1.0000 nll/token 0.1000 sim/token 0.0100 1.0 seq/s left 1s\n"
	for _, tc := range []struct{ name, bad, want string }{
		{"number", "step 20/30 epoch 0 loss 1.0x nll/token 0.1 sim/token 0.01 1.0 seq/s left 1s", "1.0x"},
		{"short", "step 20/30 epoch 0 loss 1.0", "malformed step line"},
		{"keyword", "step 20/30 epoch 0 loss 1.0 nll 0.1 sim/token 0.01 1.0 seq/s left 1s", "malformed step line"},
		{"val", good[:len(good)-1] + " | val nll/token abc sim/token 0.1", "abc"},
		{"part", good[:len(good)-1] + " | frobnicate", "frobnicate"},
		{"lr", good[:len(good)-1] + " | lr -1e-3", "learning-rate"},
	} {
		log := good + "nfbo: context canceled\n" + tc.bad + "\n" + good
		_, err := ParseLog("runs/train.log", strings.NewReader(log))
		if err == nil {
			t.Errorf("%s: no error for %q", tc.name, tc.bad)
			continue
		}
		if !strings.HasPrefix(err.Error(), "runs/train.log:3: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q; want it to start with runs/train.log:3: and mention %q", tc.name, err, tc.want)
		}
	}
	if _, err := ParseLog("empty.log", strings.NewReader("pretrain: graphs compiled in 0.1s\n")); err == nil || !strings.Contains(err.Error(), "empty.log: no step lines") {
		t.Errorf("log without steps: error %v", err)
	}
}

// FuzzParseLog feeds arbitrary logs to the curve reader: it must never panic, and the points it returns
// must be sorted by step, one per step, each with the line it came from. The seed corpus is
// testdata/fuzz/FuzzParseLog and the f.Add calls.
func FuzzParseLog(f *testing.F) {
	f.Add([]byte(testLog))
	f.Add([]byte(testLog + "step 50/60 epoch 2 loss 5.5"))
	f.Add([]byte("step 1/2 epoch 0 loss 1 nll/token 2 sim/token 3 4 seq/s left 1s | val nll/token 1 sim/token 2 | checkpoint\n"))
	f.Add([]byte("step\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lg, err := ParseLog("fuzz.log", bytes.NewReader(data))
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
		_ = lg.NumVal()
	})
}

// A log whose last line is still being written (pretraining running) is read without it, with a note; before,
// "curve" refused it as malformed.
func TestParseLogTornLastLine(t *testing.T) {
	torn := testLog + "step 50/60 epoch 2 loss 5.5"
	lg, err := ParseLog("train.log", strings.NewReader(torn))
	if err != nil {
		t.Fatalf("torn last line: %v", err)
	}
	if len(lg.Points) != 4 || lg.TornLine != 17 || lg.TornBytes != len("step 50/60 epoch 2 loss 5.5") {
		t.Errorf("%d points, torn line %d (%d bytes); want 4 points and line 17 left out", len(lg.Points), lg.TornLine, lg.TornBytes)
	}
	// Left out even when it parses: the number at its end may be cut short.
	lg, err = ParseLog("train.log", strings.NewReader(testLog+"step 50/60 epoch 2 loss 5.0000 nll/token 0.5000 sim/token 0.15 30.0 seq/s left 2"))
	if err != nil || len(lg.Points) != 4 || lg.TornLine != 17 {
		t.Errorf("torn line that parses: %v, %d points, torn line %d", err, len(lg.Points), lg.TornLine)
	}
	// A malformed complete line is still an error, quoted and clipped.
	bad := testLog + "step 70/60 epoch \x1b[31m" + strings.Repeat("x", 1<<16) + "\n"
	_, err = ParseLog("train.log", strings.NewReader(bad))
	if err == nil || !strings.Contains(err.Error(), "train.log:17: malformed step line") || len(err.Error()) > 400 ||
		strings.Contains(err.Error(), "\x1b") {
		t.Errorf("malformed line: %.400q", err)
	}
}

// FormatHeader's and FormatStep's lines read back as what they say.
func TestFormatRoundTrip(t *testing.T) {
	h := FormatHeader(Header{Molecules: 3200, Train: 3000, Val: 200, V: 10, T: 8, Transform: "nlsq", Params: 1234, BLAS: "gonum",
		From: 20, To: 60, Batch: 128})
	p := Progress{Step: 40, TotalSteps: 60, Epoch: 1, StepStats: StepStats{Loss: 6, NLL: 0.6, Sim: 0.16}, SeqPerSec: 30,
		Remaining: 20 * time.Second, Val: &EvalStats{NLL: 0.62, Sim: 0.162, EmbedCos: 0.987654}, Recon: &ReconStats{OK: 199, N: 200},
		LR: 0.000123456, Checkpoint: true}
	lg, err := ParseLog("x", strings.NewReader(h+"\n"+FormatStep(p)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := lg.Points[0]
	if lg.Batch != 128 || lg.TrainSize != 3000 || len(lg.Points) != 1 || got.Step != 40 || got.Epoch != 1 || got.Loss != 6 ||
		got.NLL != 0.6 || got.Sim != 0.16 || !got.HasVal || got.ValNLL != 0.62 || got.ValSim != 0.162 ||
		got.EmbedCos != 0.987654 || got.ReconOK != 199 || got.ReconN != 200 || got.LR != 0.0001235 {
		t.Errorf("read back %+v from %q", lg, h)
	}
}
