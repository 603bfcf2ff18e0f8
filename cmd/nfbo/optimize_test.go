package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

const guacamol100 = "../../data/guacamol/guacamol_train_data_first_100.csv"

// lengthOracle writes the protocol's example objective (score = len(SMILES)/10) and returns its command line.
func lengthOracle(t testing.TB, dir string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	script := filepath.Join(dir, "oracle.py")
	if err := os.WriteFile(script, []byte(exampleOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	return python + " " + script
}

func TestOptimizeCmdObjectiveCmd(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out := filepath.Join(dir, "run")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", guacamol100, "-init-count", "20", "-budget", "30", "-candidates", "200", "-model", dir, "-out", out)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "Top-10") {
		t.Errorf("no figures printed")
	}
	if !regexp.MustCompile(` decoded \d+ \(\d+ new\)`).MatchString(stdout) {
		t.Errorf("no progress line says how many candidates were decoded and how many were new:\n%s", stdout)
	}
	if strings.Contains(stderr, "cannot tell the tokens") {
		t.Errorf("a flow with distinct embeddings was reported as confusing tokens")
	}
	// 20 initial molecules scored through the log (PMO's accounting) + 10 new ones: exactly the budget.
	if smiles, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl")); len(smiles) != 30 {
		t.Errorf("%d calls in the log, want 30", len(smiles))
	}
	if _, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", "true", "-init", guacamol100,
		"-model", dir, "-out", filepath.Join(dir, "none"), "-resume"); err == nil || !strings.Contains(err.Error(), "holds no run") {
		t.Errorf("-resume of a directory without a run: %v", err)
	}
}

// readLogSMILES returns the canonical SMILES and scores of an evaluation log, in call order.
func readLogSMILES(t *testing.T, path string) ([]string, []float64) {
	t.Helper()
	recs, _, torn, err := rundir.ReadLog(path)
	if err != nil || torn != 0 {
		t.Fatalf("read %s: %v (torn %d)", path, err, torn)
	}
	var s []string
	var y []float64
	for i, r := range recs {
		if r.Call != i+1 {
			t.Errorf("%s: record %d has call %d", path, i+1, r.Call)
		}
		s, y = append(s, r.Canonical), append(y, r.Score)
	}
	return s, y
}

// TestOptimizeCmdRDKit runs the whole optimiser on the RDKit pool: GuacaMol's adip with the initial scores read
// from the data file, then qed with the initial molecules scored by the objective (PMO's accounting).
func TestOptimizeCmdRDKit(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	for _, tc := range []struct {
		task   string
		budget int
		paid   int // lines in the log
	}{{"adip", 20, 20}, {"qed", 40, 40}} {
		out := filepath.Join(dir, tc.task)
		stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", tc.task, "-init", guacamol100, "-init-count", "20",
			"-budget", strconv.Itoa(tc.budget), "-candidates", "300", "-variant", "reference", "-sampler", "pathwise", "-model", dir, "-out", out, "-seed", "3",
			"-rules", "none") // the random test model proposes molecules the default rules would almost all drop
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", tc.task, err, stdout, stderr)
		}
		smiles, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
		if len(smiles) != tc.paid {
			t.Errorf("%s: %d paid calls in the log, want %d", tc.task, len(smiles), tc.paid)
		}
		seen := map[string]bool{}
		for _, s := range smiles {
			if seen[s] {
				t.Errorf("%s: %s paid twice", tc.task, s)
			}
			seen[s] = true
		}
		for _, want := range []string{"status: budget spent", "best molecules", "Top-1 ", "AUC Top-10 "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.task, want, stdout)
			}
		}
		if !strings.Contains(stdout, "iter 1 calls ") {
			t.Errorf("%s: no progress line:\n%s", tc.task, stdout)
		}
		run, err := bench.LoadRun(out)
		if err != nil {
			t.Fatal(err)
		}
		if !run.Info.Finished || run.Info.Budget != tc.budget || run.Info.Task != tc.task || run.Info.Initial != 20 {
			t.Errorf("%s: run.json %+v", tc.task, run.Info)
		}
		if (tc.task == "adip") != (len(run.Info.InitialScores) == 20) {
			t.Errorf("%s: %d initial scores in run.json", tc.task, len(run.Info.InitialScores))
		}
	}
	// The finished run cannot be started again without -resume; with it, it prints its results at once.
	_, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "adip", "-init", guacamol100, "-init-count", "20",
		"-budget", "20", "-candidates", "300", "-variant", "reference", "-sampler", "pathwise", "-model", dir, "-out", filepath.Join(dir, "adip"), "-seed", "3",
		"-rules", "none")
	if err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("second start without -resume: %v", err)
	}
	stdout, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "adip", "-init", guacamol100, "-init-count", "20", "-resume",
		"-budget", "20", "-candidates", "300", "-variant", "reference", "-sampler", "pathwise", "-model", dir, "-out", filepath.Join(dir, "adip"), "-seed", "3",
		"-rules", "none")
	if err != nil || !strings.Contains(stdout, "status: budget spent") || strings.Contains(stdout, "iter ") {
		t.Errorf("resume of a finished run: %v\n%s", err, stdout)
	}
}

func TestOptimizeCmdInitErrors(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("name,score\nx,1\n"), 0o644)
	badScore := filepath.Join(dir, "badscore.csv")
	os.WriteFile(badScore, []byte("smiles,adip\nCCO,0.1\nCCN,abc\n"), 0o644)
	for _, tc := range []struct{ file, want string }{
		{bad, "bad.csv:1: no smiles or smile column"},
		{badScore, "badscore.csv:3: column 2 (adip)"},
		{filepath.Join(dir, "missing.smi"), "missing.smi"},
	} {
		_, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "adip", "-init", tc.file, "-model", dir, "-out", filepath.Join(dir, "out"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
	if _, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "adip", "-init", bad, "-model", dir); err == nil {
		t.Error("missing -out accepted")
	}
}

// The baselines spend exactly the budget through the same budgeted log as
// NF-BO, each molecule once, and label their runs for the report; resuming
// a finished baseline replays from its cache and pays for nothing more.
func TestOptimizeCmdBaselines(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle := lengthOracle(t, dir)
	for _, method := range []string{"ga", "prior"} {
		t.Run(method, func(t *testing.T) {
			out := filepath.Join(dir, method)
			args := []string{"-method", method, "-task", "demo", "-objective-cmd", oracle, "-init", guacamol100,
				"-init-count", "20", "-budget", "40", "-model", dir, "-out", out, "-seed", "3"}
			stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", args...)
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			smiles, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
			if len(smiles) != 40 {
				t.Fatalf("%d calls in the log, want 40", len(smiles))
			}
			run, err := bench.LoadRun(out)
			if err != nil {
				t.Fatal(err)
			}
			if run.Info.Method != method || !run.Info.Finished {
				t.Fatalf("run.json: method %q finished %v; want %q, true", run.Info.Method, run.Info.Finished, method)
			}
			if _, _, err := runCmd(t, newOptimizeCmd(), "", append(args, "-resume")...); err != nil {
				t.Fatalf("resume: %v", err)
			}
			again, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl"))
			if len(again) != 40 {
				t.Fatalf("resume of a finished run paid again: %d calls", len(again))
			}
		})
	}
}

// A run directory is locked by the process that runs it: a second process gets a clear error, and the lock goes
// when the first lets go.
func TestRunDirLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := rundir.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description, so a second open in this process conflicts as a second
	// process would.
	if _, err := rundir.Lock(dir); err == nil || !strings.Contains(err.Error(), "in use by another nfbo process") {
		t.Fatalf("second lock: err = %v, want in use", err)
	}
	unlock()
	unlock2, err := rundir.Lock(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

// TestOptimizeCmdMergedEmbeddings: a model whose embeddings of [C] and [Cl] point the same way cannot propose
// one of them; optimize says so before it pays for anything.
func TestOptimizeCmdMergedEmbeddings(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	path := filepath.Join(dir, model.CheckpointName)
	ck, err := model.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := voc.ID("[C]")
	cl, _ := voc.ID("[Cl]")
	F := ck.Params.Config.F
	for i := range F {
		ck.Params.Embed.Data[cl*F+i] = 3 * ck.Params.Embed.Data[c*F+i]
	}
	if err := model.SaveCheckpoint(path, ck); err != nil {
		t.Fatal(err)
	}
	lo, hi := voc.Token(min(c, cl)), voc.Token(max(c, cl)) // ties decode to the lower id
	_, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", guacamol100, "-init-count", "20", "-budget", "30", "-candidates", "200", "-model", dir,
		"-out", filepath.Join(dir, "run"))
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr)
	}
	want := "cannot tell the tokens " + hi + " and " + lo + " apart"
	if n := strings.Count(stderr, want); n != 1 {
		t.Errorf("stderr says %q %d times, want once:\n%s", want, n, stderr)
	}
}

// optimize -backend cuda without a GPU fails within seconds, naming what is missing (the driver library), before
// the run directory exists or the objective runs.
func TestOptimizeCmdBackendCUDAWithoutGPU(t *testing.T) {
	if os.Getenv("NFBO_GPU") == "1" {
		t.Skip("NFBO_GPU=1: a GPU is there")
	}
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out := filepath.Join(dir, "run")
	start := time.Now()
	_, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", "false", "-backend", "cuda",
		"-init", guacamol100, "-init-count", "20", "-budget", "30", "-candidates", "200", "-model", dir, "-out", out)
	if err == nil {
		t.Skip("a GPU is present; run with NFBO_GPU=1")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the error took %v", el)
	}
	msg := err.Error()
	if !strings.Contains(msg, "backend cuda") || !strings.Contains(msg, "libcuda.so.1") {
		t.Errorf("the error does not say what is missing:\n%s", msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("-out %s was created (%v)", out, err)
	}
}

// runJSONOracle scores like exampleOracle and, at every request, appends to the file argv[2] what run.json
// (argv[1]) records then: "calls seconds", or "none".
const runJSONOracle = `import json, sys
runjson, seen = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    req = json.loads(line)
    try:
        info = json.load(open(runjson))
        rec = "%d %f" % (info["calls"], info["seconds"])
    except Exception:
        rec = "none"
    with open(seen, "a") as f:
        f.write(rec + "\n")
    smiles = req.get("smiles") or []
    print(json.dumps({"id": req.get("id"), "ok": True, "scores": [len(s) / 10 for s in smiles],
                      "errors": [""] * len(smiles)}), flush=True)
`

// TestRunJSONKeptCurrent checks that run.json counts the calls and the wall time after every iteration, not
// only when the run ends or is interrupted: a run killed without the chance to write it (SIGKILL, a machine
// taken away) keeps what it paid and how long it ran. The objective reads run.json at each request; the
// request of the optimiser's third batch must find the first two batches counted.
func TestRunJSONKeptCurrent(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	script, seen := filepath.Join(dir, "oracle.py"), filepath.Join(dir, "seen.txt")
	if err := os.WriteFile(script, []byte(runJSONOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmdline := strings.Join([]string{python, script, filepath.Join(out, rundir.InfoFile), seen}, " ")
	if _, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", cmdline, "-init", guacamol100,
		"-init-count", "20", "-budget", "35", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir,
		"-out", out); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for line := range strings.Lines(string(b)) {
		var calls int
		var secs float64
		if n, _ := fmt.Sscanf(line, "%d %f", &calls, &secs); n != 2 {
			continue
		}
		if calls > 20 && secs <= 0 {
			t.Errorf("run.json records %d calls and %v s during the run", calls, secs)
		}
		most = max(most, calls)
	}
	if most < 30 {
		t.Errorf("the objective's requests saw run.json count at most %d calls, want 30 (20 initial + two batches of 5) "+
			"before the last batch:\n%s", most, b)
	}
	info, err := rundir.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Finished || info.Calls != 35 || info.Seconds <= 0 || info.CPUSeconds <= 0 {
		t.Errorf("run.json at the end: finished %v, calls %d, seconds %v, CPU seconds %v; want true, 35, > 0, > 0",
			info.Finished, info.Calls, info.Seconds, info.CPUSeconds)
	}
	// The kernels: who ran the flow, then the BLAS (what a repeat of the run must run on).
	if want := "; " + train.BLASKernels(); !strings.HasPrefix(info.Kernels, "go; ") && !strings.HasPrefix(info.Kernels, "onnxruntime; ") ||
		!strings.HasSuffix(info.Kernels, want) {
		t.Errorf("run.json's kernels %q, want the flow's backend and %q", info.Kernels, want)
	}
}
