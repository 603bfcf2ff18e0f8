package main

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/ort"
	"github.com/nfbo/nfbo/model"
)

// testModelDir writes a small random-init SeqFlow whose vocabulary covers
// the first n molecules of the GuacaMol sample, and returns the model
// directory and those molecules as SMILES.
func testModelDir(t *testing.T, n int) (dir string, smiles []string) {
	t.Helper()
	fh, err := os.Open("../../data/guacamol/guacamol_10k.smiles")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	var corpus [][]string
	maxLen := 0
	for sc.Scan() && len(smiles) < n {
		s := strings.TrimSpace(sc.Text())
		sf, err := selfies.Encode(s)
		if err != nil {
			continue
		}
		toks, err := selfies.Split(sf)
		if err != nil {
			t.Fatal(err)
		}
		smiles = append(smiles, s)
		corpus = append(corpus, toks)
		maxLen = max(maxLen, len(toks))
	}
	voc := vocab.Build(corpus)
	cfg := model.Config{V: voc.Len(), F: 8, T: maxLen + 1, MaxT: 288, Blocks: 2, LSTMLayers: 1, H: 16,
		Couplings: 2, U: 16, CouplingDepth: 2, Transform: model.NLSq, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := model.SaveCheckpoint(filepath.Join(dir, model.CheckpointName), &model.Checkpoint{Params: p, Vocab: voc.Tokens()}); err != nil {
		t.Fatal(err)
	}
	return dir, smiles
}

func TestRecon(t *testing.T) {
	dir, smiles := testModelDir(t, 40)
	in := filepath.Join(t.TempDir(), "mols.txt")
	// Mix SMILES and SELFIES and a blank line.
	sf, _ := selfies.Encode(smiles[0])
	lines := append([]string{sf, ""}, smiles[1:]...)
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	backends := []string{"go", "auto"}
	if ort.Available() == nil {
		backends = append(backends, "ort")
	}
	for _, backend := range backends {
		stdout, stderr, code := run(t, "", "recon", "-model", dir, "-backend", backend, "-batch", "7", in)
		if code != 0 || !strings.Contains(stdout, "reconstructed 40 of 40 molecules (1.0000)") {
			t.Fatalf("-backend %s: exit %d\nstdout:\n%s\nstderr:\n%s", backend, code, stdout, stderr)
		}
	}

	// After a fine-tune the flow is still exactly invertible.
	ft := filepath.Join(t.TempDir(), "ft.txt")
	os.WriteFile(ft, []byte(strings.Join(smiles[:20], "\n")+"\n"), 0o644)
	stdout, stderr, code := run(t, "", "recon", "-model", dir, "-backend", "go", "-finetune", ft, in)
	if code != 0 || !strings.Contains(stdout, "reconstructed 40 of 40 molecules (1.0000)") ||
		!strings.Contains(stderr, "fine-tuned one epoch on 20 molecules") {
		t.Fatalf("-finetune: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// Several epochs, embeddings frozen: each epoch reports the closest pair, and the flow still reconstructs.
	stdout, stderr, code = run(t, "", "recon", "-model", dir, "-backend", "go", "-finetune", ft, "-epochs", "2", "-freeze-embed", in)
	if code != 0 || !strings.Contains(stdout, "reconstructed 40 of 40 molecules (1.0000)") ||
		!strings.Contains(stderr, "recon: epoch 2 (2 steps): closest embeddings") || !strings.Contains(stderr, "fine-tuned 2 epochs on 20 molecules") {
		t.Fatalf("-finetune -epochs 2: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	os.WriteFile(ft, []byte(smiles[0]+"\n[Xx][C]\n"), 0o644)
	if _, stderr, code := run(t, "", "recon", "-model", dir, "-backend", "go", "-finetune", ft, in); code != 1 || !strings.Contains(stderr, ft+":2:") {
		t.Fatalf("bad -finetune file: exit %d, stderr %q", code, stderr)
	}

	// Bad lines are reported with file and line, and the status is 1.
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte(smiles[0]+"\n[Xx][C]\nC1CC\n"+strings.Repeat("C", 500)+"\n"), 0o644)
	stdout, stderr, code = run(t, "", "recon", "-model", dir, "-backend", "go", bad)
	if code != 1 || !strings.Contains(stdout, "reconstructed 1 of 1") || !strings.Contains(stdout, "3 lines could not be encoded") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{bad + ":2: ", `unknown token "[Xx]"`, bad + ":3: ", bad + ":4: ", "too long"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// The flow forces <stop> by id; it must be the vocabulary's.
func TestStopIDs(t *testing.T) {
	if model.StopID != vocab.Stop {
		t.Fatalf("model.StopID = %d, vocab.Stop = %d", model.StopID, vocab.Stop)
	}
}

func TestReconUsage(t *testing.T) {
	for _, args := range [][]string{
		{"recon", "x.txt"},
		{"recon", "-model", "m"},
		{"recon", "-model", "m", "-format", "inchi", "x"},
	} {
		if _, _, code := run(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	_, stderr, code := run(t, "", "recon", "-model", filepath.Join(t.TempDir(), "none"), "x.txt")
	if code != 1 || !strings.Contains(stderr, "none") {
		t.Errorf("missing model: exit %d, stderr %q", code, stderr)
	}
}

func TestExport(t *testing.T) {
	dir, _ := testModelDir(t, 5)
	out := filepath.Join(t.TempDir(), "flow.onnx")
	stdout, stderr, code := run(t, "", "export", "-model", dir, "-out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, name := range []string{"flow.encode.onnx", "flow.decode.onnx"} {
		p := filepath.Join(filepath.Dir(out), name)
		fi, err := os.Stat(p)
		if err != nil || fi.Size() == 0 || !strings.Contains(stdout, p) {
			t.Errorf("%s: %v (stdout %q)", name, err, stdout)
		}
	}
	if _, _, code := run(t, "", "export", "-model", dir); code != 2 {
		t.Errorf("export without -out: exit %d, want 2", code)
	}
}
