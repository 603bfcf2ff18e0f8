package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// pretrain -steps 4 writes the same weights as -steps 2 followed by
// -resume -steps 4, and a bad line is reported with its file and line.
func TestPretrainResumeMatchesStraight(t *testing.T) {
	dir, data := pretrainTestDir(t)
	common := []string{"-data", data, "-batch", "4", "-val-frac", "0.2", "-val-every", "1", "-checkpoint-every", "1", "-seed", "7"}
	straight := filepath.Join(dir, "straight")
	_, stderr, code := run(t, "", append([]string{"pretrain", "-out", straight, "-steps", "4"}, common...)...)
	if code != 0 {
		t.Fatalf("straight run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, data+":7:") {
		t.Errorf("bad line 7 not reported as %s:7: in\n%s", data, stderr)
	}
	if strings.Count(stderr, data+":") != 1 {
		t.Errorf("want exactly one bad line (7), stderr:\n%s", stderr)
	}
	split := filepath.Join(dir, "split")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", split, "-steps", "2"}, common...)...); code != 0 {
		t.Fatalf("first half: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := run(t, "", append([]string{"pretrain", "-out", split, "-steps", "4", "-resume"}, common...)...)
	if code != 0 {
		t.Fatalf("resumed half: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "step 4/4") || strings.Contains(stdout, "step 2/4") {
		t.Errorf("resumed run should report steps 3 and 4 only:\n%s", stdout)
	}
	// Every validation reports the closest embeddings and the reconstruction of the validation molecules.
	if m := regexp.MustCompile(`\| embed cos 0\.\d{6} \| recon (\d+)/(\d+)`).FindStringSubmatch(stdout); m == nil || m[1] != m[2] {
		t.Errorf("validation lines lack \"embed cos C | recon N/N\":\n%s", stdout)
	}
	sameWeights(t, straight, split)
	if _, _, code := run(t, "", append([]string{"pretrain", "-out", straight, "-steps", "4"}, common...)...); code == 0 {
		t.Error("pretrain over an existing checkpoint without -resume succeeded")
	}
}

// pretrain -init-only writes a random paper-preset model at step 0 that recon
// inverts exactly on every usable molecule.
func TestPretrainInitOnlyPaperRecon(t *testing.T) {
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

// loadParams returns the weights of the model in dir.
func loadParams(t *testing.T, dir string) *model.Params {
	t.Helper()
	ck, err := model.LoadModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ck.Params
}

// sameWeights fails t unless the models in the two directories, a straight run and a resumed one, have the
// same weights bit for bit.
func sameWeights(t *testing.T, straight, resumed string) {
	t.Helper()
	ta, tb := loadParams(t, straight).Tensors(), loadParams(t, resumed).Tensors()
	for i := range ta {
		for j := range ta[i].Data {
			if math.Float32bits(ta[i].Data[j]) != math.Float32bits(tb[i].Data[j]) {
				t.Fatalf("%s[%d]: straight %v, resumed %v", ta[i].Name, j, ta[i].Data[j], tb[i].Data[j])
			}
		}
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

func TestLooksLikeSELFIES(t *testing.T) {
	for s, want := range map[string]bool{
		"[C][C][O]": true, "[C].[O]": true, "[NH3+]CC(=O)[O-]": false, "CCO": false, "": false, "[C][C": false,
	} {
		if got := looksLikeSELFIES(s); got != want {
			t.Errorf("looksLikeSELFIES(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestPretrainUsage(t *testing.T) {
	if _, _, code := run(t, "", "pretrain", "-out", t.TempDir()); code != 2 {
		t.Errorf("missing -data: exit %d, want 2", code)
	}
	if _, _, code := run(t, "", "pretrain", "-data", "x", "-out", "y", "-val-frac", "1.5"); code != 2 {
		t.Errorf("-val-frac 1.5: exit %d, want 2", code)
	}
}

// pretrain -patience N stops after N validations without improvement, with a
// checkpoint; a resume keeps the count (and so has nothing to do), and
// -patience 0 trains on from where it stopped.
func TestPretrainPatience(t *testing.T) {
	dir, data := pretrainTestDir(t)
	out := filepath.Join(dir, "model")
	// No validation can lower the NLL by 1e9 nats: the curve is flat at the third.
	common := []string{"-data", data, "-out", out, "-batch", "4", "-val-frac", "0.2", "-val-every", "1", "-checkpoint-every", "0", "-seed", "7"}
	stdout, stderr, code := run(t, "", append([]string{"pretrain", "-steps", "50", "-patience", "2", "-min-delta", "1e9"}, common...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "the validation curve is flat: 2 validations since step 1 ") || !strings.Contains(stderr, "stopped at step 3,") {
		t.Errorf("stderr does not say the curve is flat at step 3:\n%s", stderr)
	}
	if !strings.Contains(stdout, "step 3/50") || strings.Contains(stdout, "step 4/50") {
		t.Errorf("training did not end at step 3:\n%s", stdout)
	}
	_, stderr, code = run(t, "", append([]string{"pretrain", "-resume", "-steps", "50", "-patience", "2", "-min-delta", "1e9"}, common...)...)
	if code != 0 || !strings.Contains(stderr, "nothing to do") {
		t.Errorf("resume of a flat run: exit %d, want 0 and \"nothing to do\":\n%s", code, stderr)
	}
	stdout, stderr, code = run(t, "", append([]string{"pretrain", "-resume", "-steps", "4"}, common...)...)
	if code != 0 {
		t.Fatalf("resume with -patience 0: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "step 4/4") || strings.Contains(stdout, "step 3/4") {
		t.Errorf("resume did not continue from the checkpoint of step 3:\n%s", stdout)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-steps", "5", "-patience", "2", "-val-frac", "0"}, "-data", data, "-out", filepath.Join(dir, "noval"))...); code != 2 || !strings.Contains(stderr, "-patience needs validation") {
		t.Errorf("-patience without validation: exit %d, want 2 and a usage error:\n%s", code, stderr)
	}
}

// pretrain -decay-steps N lowers the learning rate over N steps and ends there by default; the schedule is
// saved in the checkpoint, so a run interrupted in the decay and resumed gives the straight run's weights bit
// for bit, and a new -decay-steps on a resume starts from the rate reached.
func TestPretrainDecay(t *testing.T) {
	dir, data := pretrainTestDir(t)
	common := []string{"-data", data, "-batch", "4", "-val-frac", "0.2", "-val-every", "2", "-checkpoint-every", "0", "-log-every", "1", "-seed", "7"}
	straight := filepath.Join(dir, "straight")
	stdout, stderr, code := run(t, "", append([]string{"pretrain", "-out", straight, "-decay-steps", "4", "-lr-min", "1e-4"}, common...)...)
	if code != 0 {
		t.Fatalf("straight run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "learning rate 0.001 falling along a half cosine to 0.0001 from step 0 to step 4") {
		t.Errorf("no note of the decay:\n%s", stderr)
	}
	// The rate of each step: 1e-3 at the first, the cosine's values after, 1e-4 only at the end (step 5 on).
	wantLR := []string{"| lr 0.001", "| lr 0.0008682", "| lr 0.00055", "| lr 0.0002318"}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], "step 4/4") {
		t.Fatalf("want steps 1-4 (the decay's end), got:\n%s", stdout)
	}
	for i, w := range wantLR {
		if !strings.Contains(lines[i], w) {
			t.Errorf("step %d: %q lacks %q", i+1, lines[i], w)
		}
	}
	split := filepath.Join(dir, "split")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", split, "-decay-steps", "4", "-lr-min", "1e-4", "-steps", "2"}, common...)...); code != 0 {
		t.Fatalf("first half: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code = run(t, "", append([]string{"pretrain", "-out", split, "-resume"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "step 4/4") || !strings.Contains(stdout, "| lr 0.0002318") {
		t.Fatalf("resume within the decay: exit %d, want steps 3-4 at the saved schedule's rates\n%s\n%s", code, stdout, stderr)
	}
	sameWeights(t, straight, split)
	// A new decay on a resume starts from the rate of the last step taken.
	_, stderr, code = run(t, "", append([]string{"pretrain", "-out", split, "-resume", "-decay-steps", "2", "-lr-min", "1e-5"}, common...)...)
	if code != 0 || !strings.Contains(stderr, "learning rate 0.0002318 falling along a half cosine to 1e-05 from step 4 to step 6") {
		t.Errorf("new decay on resume: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", filepath.Join(dir, "bad"), "-decay-steps", "4", "-lr-min", "0.01"}, common...)...); code != 2 || !strings.Contains(stderr, "-lr-min") {
		t.Errorf("-lr-min above the rate: exit %d, want 2 and a usage error:\n%s", code, stderr)
	}
}

// pretrain -decay-start S -decay-steps N is a schedule fixed in steps: the rate stays at 1e-3 until step S
// and falls to -lr-min by S+N, where the run ends by default; the same command resumed before and inside the
// decay gives the straight run's weights bit for bit, and a resume past S without that decay saved is refused.
func TestPretrainDecayStart(t *testing.T) {
	dir, data := pretrainTestDir(t)
	schedule := []string{"-data", data, "-batch", "4", "-val-frac", "0.2", "-val-every", "2", "-checkpoint-every", "0", "-log-every", "1", "-seed", "7",
		"-decay-start", "2", "-decay-steps", "4", "-lr-min", "1e-4"}
	straight := filepath.Join(dir, "straight")
	stdout, stderr, code := run(t, "", append([]string{"pretrain", "-out", straight}, schedule...)...)
	if code != 0 {
		t.Fatalf("straight run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "learning rate 0.001 falling along a half cosine to 0.0001 from step 2 to step 6") {
		t.Errorf("no note of the decay:\n%s", stderr)
	}
	wantLR := []string{"| lr 0.001", "| lr 0.001", "| lr 0.001", "| lr 0.0008682", "| lr 0.00055", "| lr 0.0002318"}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(wantLR) || !strings.Contains(lines[5], "step 6/6") {
		t.Fatalf("want steps 1-6 (the decay's end), got:\n%s", stdout)
	}
	for i, w := range wantLR {
		if !strings.Contains(lines[i], w) {
			t.Errorf("step %d: %q lacks %q", i+1, lines[i], w)
		}
	}
	// Interrupted before the decay (step 1) and inside it (step 4), each time resumed with the same command.
	split := filepath.Join(dir, "split")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", split, "-steps", "1"}, schedule...)...); code != 0 {
		t.Fatalf("steps 1: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", split, "-resume", "-steps", "4"}, schedule...)...); code != 0 {
		t.Fatalf("steps 2-4: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code = run(t, "", append([]string{"pretrain", "-out", split, "-resume"}, schedule...)...)
	if code != 0 || !strings.Contains(stdout, "step 6/6") || !strings.Contains(stdout, "| lr 0.0002318") {
		t.Fatalf("steps 5-6: exit %d, want the saved schedule's rates to step 6\n%s\n%s", code, stdout, stderr)
	}
	sameWeights(t, straight, split)
	// A run already past step 1 with no decay saved cannot take one that began there.
	constant := filepath.Join(dir, "constant")
	common := schedule[:len(schedule)-6]
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", constant, "-steps", "3"}, common...)...); code != 0 {
		t.Fatalf("constant run: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", constant, "-resume", "-decay-start", "1", "-decay-steps", "4"}, common...)...); code == 0 || !strings.Contains(stderr, "-decay-start 1: the run is at step 3, past it") {
		t.Errorf("decay that began in the past: exit %d, want an error saying so:\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", filepath.Join(dir, "bad"), "-decay-start", "3"}, common...)...); code != 2 || !strings.Contains(stderr, "-decay-start 3 needs -decay-steps") {
		t.Errorf("-decay-start alone: exit %d, want 2 and a usage error:\n%s", code, stderr)
	}
}

// pretrain -init-embed DIR starts a run from DIR's token embeddings (and only those), the same command
// resumes it, and a model of another vocabulary is refused, saying how it differs.
func TestPretrainInitEmbed(t *testing.T) {
	dir, data := pretrainTestDir(t)
	common := []string{"-data", data, "-vocab", "guacamol+zinc", "-init-only", "-seed", "7"}
	src := filepath.Join(dir, "src")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", src, "-seed", "3"}, common[:len(common)-2]...)...); code != 0 {
		t.Fatalf("source model: exit %d\n%s", code, stderr)
	}
	dst := filepath.Join(dir, "dst")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", dst, "-preset", "medium", "-init-embed", src}, common...)...); code != 0 {
		t.Fatalf("-init-embed: exit %d\n%s", code, stderr)
	}
	plain := filepath.Join(dir, "plain")
	if _, stderr, code := run(t, "", append([]string{"pretrain", "-out", plain, "-preset", "medium"}, common...)...); code != 0 {
		t.Fatalf("without -init-embed: exit %d\n%s", code, stderr)
	}
	a, b, c := loadParams(t, src), loadParams(t, dst), loadParams(t, plain)
	if b.Config != model.Medium(a.Config.V, a.Config.T) {
		t.Errorf("config %+v, want the medium preset", b.Config)
	}
	if !slices.Equal(a.Embed.Data, b.Embed.Data) {
		t.Error("the embeddings are not the source model's")
	}
	if slices.Equal(a.Embed.Data, c.Embed.Data) {
		t.Error("a run with another seed and no -init-embed has the same embeddings: the test tells nothing")
	}
	// The other tensors are the new run's own (its seed's, as without -init-embed).
	tb, tc := b.Tensors(), c.Tensors()
	for i := 1; i < len(tb); i++ {
		if !slices.Equal(tb[i].Data, tc[i].Data) {
			t.Errorf("%s differs from the run without -init-embed", tb[i].Name)
		}
	}
	// The same command resumes the run: its embeddings then come from its own checkpoint.
	if _, stderr, code := run(t, "", "pretrain", "-out", dst, "-resume", "-steps", "1", "-batch", "4", "-val-frac", "0.2", "-data", data, "-init-embed", plain); code != 0 {
		t.Errorf("resume with -init-embed: exit %d\n%s", code, stderr)
	}
	_, stderr, code := run(t, "", "pretrain", "-out", filepath.Join(dir, "other"), "-data", data, "-vocab", "guacamol", "-init-only", "-init-embed", src)
	if code == 0 || !strings.Contains(stderr, "-init-embed: "+src+" has 267 tokens, the run's vocabulary 185") {
		t.Errorf("another vocabulary: exit %d, want an error naming the sizes:\n%s", code, stderr)
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
}
