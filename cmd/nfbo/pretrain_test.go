package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/model"
)

// Short molecules keep T (and so the graph) small.
const pretrainTestData = `CCO
[NH3+]CC(=O)[O-]
[C][C][O]
c1ccccc1
CC(=O)O
CCN
not a molecule (
CCCC
OCCO
CC(C)O
C1CC1
CCOC
NCCN
CC=O
C#N
CCCl
`

// The CLI around pretrain.Run (whose tests cover resuming, the schedule and the stopping rule): step lines
// every -log-every steps on standard output, ending with the last step, a bad line on standard error as
// FILE:LINE:, a setting that cannot work as a usage error, and -resume continuing the run.
func TestPretrainCmd(t *testing.T) {
	dir, data := pretrainTestDir(t)
	out := filepath.Join(dir, "model")
	common := []string{"-data", data, "-out", out, "-batch", "4", "-val-frac", "0.2", "-val-every", "0", "-checkpoint-every", "0", "-seed", "7"}
	stdout, stderr, code := run(t, "", append([]string{"pretrain", "-steps", "5", "-log-every", "2"}, common...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Count(stderr, data+":") != 1 || !strings.Contains(stderr, data+":7:") {
		t.Errorf("want exactly one bad line, %s:7:, on stderr:\n%s", data, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "step 2/5") || !strings.Contains(lines[1], "step 4/5") || !strings.Contains(lines[2], "step 5/5") {
		t.Errorf("want the lines of steps 2, 4 and 5 (the last):\n%s", stdout)
	}
	stdout, stderr, code = run(t, "", append([]string{"pretrain", "-resume", "-steps", "6"}, common...)...)
	if code != 0 || strings.TrimSpace(stdout) == "" || !strings.Contains(stdout, "step 6/6") {
		t.Errorf("-resume: exit %d, want step 6 of 6:\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-steps", "5"}, common...)...); code != 1 || !strings.Contains(stderr, "use -resume") {
		t.Errorf("pretrain over an existing checkpoint without -resume: exit %d, want 1:\n%s", code, stderr)
	}
	noval := []string{"pretrain", "-steps", "5", "-patience", "2", "-val-frac", "0", "-data", data, "-out", filepath.Join(dir, "noval")}
	if _, stderr, code := run(t, "", noval...); code != 2 || !strings.Contains(stderr, "pretrain: -patience needs validation") {
		t.Errorf("-patience without validation: exit %d, want 2 and a usage error:\n%s", code, stderr)
	}
}

// pretrain -init-only writes a random paper-preset model at step 0 that recon
// inverts exactly on every usable molecule.
func TestPretrainInitOnlyPaperRecon(t *testing.T) {
	t.Parallel()
	dir, data := pretrainTestDir(t)
	out := filepath.Join(dir, "paper")
	if _, stderr, code := run(t, "", "pretrain", "-init-only", "-preset", "paper", "-vocab", "guacamol+zinc", "-data", data, "-out", out); code != 0 ||
		!strings.Contains(stderr, "wrote the model at step 0") {
		t.Fatalf("pretrain -init-only: exit %d\n%s", code, stderr)
	}
	ck, err := model.LoadModelDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ck.Params.NumParams(), model.Paper(ck.Params.Config.V, ck.Params.Config.T); got < 31_000_000 || ck.Params.Config.Blocks != want.Blocks {
		t.Fatalf("checkpoint has %d parameters, %d blocks; want a paper-preset model", got, ck.Params.Config.Blocks)
	}
	good := strings.ReplaceAll(pretrainTestData, "not a molecule (\n", "")
	if err := os.WriteFile(data, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "", "recon", "-model", out, "-backend", "go", data)
	if code != 0 || !strings.Contains(stdout, "reconstructed 15 of 15 molecules (1.0000)") {
		t.Fatalf("recon: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// pretrainTestDir returns a temporary directory holding pretrainTestData as mols.smi, and that file's path.
func pretrainTestDir(t *testing.T) (dir, data string) {
	t.Helper()
	dir = t.TempDir()
	data = filepath.Join(dir, "mols.smi")
	if err := os.WriteFile(data, []byte(pretrainTestData), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, data
}

func TestPretrainUsage(t *testing.T) {
	if _, _, code := run(t, "", "pretrain", "-out", t.TempDir()); code != 2 {
		t.Errorf("missing -data: exit %d, want 2", code)
	}
	if _, _, code := run(t, "", "pretrain", "-data", "x", "-out", "y", "-val-frac", "1.5"); code != 2 {
		t.Errorf("-val-frac 1.5: exit %d, want 2", code)
	}
}

// pretrain -device cuda without a GPU fails within seconds, exit 1, naming what is missing (the driver
// library, and NVRTC when it is missing too), before anything is written to -out; a -resume does the same and
// leaves the checkpoint alone. -device names nothing else.
func TestPretrainDeviceCUDAWithoutGPU(t *testing.T) {
	if os.Getenv("NFBO_GPU") == "1" {
		t.Skip("NFBO_GPU=1: a GPU is there")
	}
	dir, data := pretrainTestDir(t)
	out := filepath.Join(dir, "new")
	start := time.Now()
	_, stderr, code := run(t, "", "pretrain", "-device", "cuda", "-data", data, "-out", out, "-steps", "2")
	if code == 0 {
		t.Skip("a GPU is present; run with NFBO_GPU=1")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the error took %v", el)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	driver := "libcuda.so.1"
	if strings.Contains(stderr, "built without cgo") {
		driver = "CUDA driver" // a build without cgo names the parts, not the libraries
	}
	for _, w := range []string{"pretrain: -device cuda:", driver, "nfbo gpu"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the error lacks %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("-out %s was created (%v)", out, err)
	}
	t.Logf("without a GPU:\n%s", stderr)

	// A run checkpointed on the CPU cannot be resumed on a missing GPU, and stays as it was.
	cpu := filepath.Join(dir, "cpu")
	if _, stderr, code := run(t, "", "pretrain", "-data", data, "-out", cpu, "-steps", "1", "-batch", "4", "-val-frac", "0.2", "-recon", "0"); code != 0 {
		t.Fatalf("CPU run: exit %d\n%s", code, stderr)
	}
	ck := filepath.Join(cpu, model.CheckpointName)
	before, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "", "pretrain", "-resume", "-device", "cuda", "-data", data, "-out", cpu, "-steps", "2"); code != 1 || !strings.Contains(stderr, driver) {
		t.Errorf("-resume -device cuda: exit %d\n%s", code, stderr)
	}
	if after, err := os.ReadFile(ck); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the checkpoint changed (%v)", err)
	}
	if _, stderr, code := run(t, "", "pretrain", "-device", "tpu", "-data", data, "-out", out); code != 2 || !strings.Contains(stderr, `-device "tpu"`) {
		t.Errorf("-device tpu: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", "pretrain", "-profile", "-data", data, "-out", out); code != 2 || !strings.Contains(stderr, "-profile needs -device cuda") {
		t.Errorf("-profile on the CPU: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", "pretrain", "-tf32", "-data", data, "-out", out); code != 2 || !strings.Contains(stderr, "-tf32 needs -device cuda") {
		t.Errorf("-tf32 on the CPU: exit %d\n%s", code, stderr)
	}
}
