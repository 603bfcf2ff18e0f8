package model

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testCheckpoint(t *testing.T) *Checkpoint {
	t.Helper()
	cfg := tinyConfig(NLSq)
	p := hardParams(t, cfg, 31, 0.3)
	vocab := []string{"<start>", "<stop>"}
	for i := 2; i < cfg.V; i++ {
		vocab = append(vocab, "[T"+string(rune('a'+i))+"]")
	}
	return &Checkpoint{Params: p, Vocab: vocab, Optim: map[string][]byte{
		"adam.m":   {1, 2, 3},
		"rng":      []byte("pcg state"),
		"data.pos": {},
	}}
}

func equalCheckpoints(t *testing.T, got, want *Checkpoint) {
	t.Helper()
	if got.Params.Config != want.Params.Config {
		t.Fatalf("config %+v, want %+v", got.Params.Config, want.Params.Config)
	}
	gt, wt := got.Params.Tensors(), want.Params.Tensors()
	for i := range wt {
		if gt[i].Name != wt[i].Name || !equalShape(gt[i].Shape, wt[i].Shape) {
			t.Fatalf("tensor %d: %s %v, want %s %v", i, gt[i].Name, gt[i].Shape, wt[i].Name, wt[i].Shape)
		}
		for j := range wt[i].Data {
			if gt[i].Data[j] != wt[i].Data[j] {
				t.Fatalf("tensor %s[%d] = %g, want %g", wt[i].Name, j, gt[i].Data[j], wt[i].Data[j])
			}
		}
	}
	if strings.Join(got.Vocab, " ") != strings.Join(want.Vocab, " ") {
		t.Fatalf("vocab %v, want %v", got.Vocab, want.Vocab)
	}
	if len(got.Optim) != len(want.Optim) {
		t.Fatalf("optim has %d entries, want %d", len(got.Optim), len(want.Optim))
	}
	for k, v := range want.Optim {
		if !bytes.Equal(got.Optim[k], v) {
			t.Fatalf("optim[%q] = %v, want %v", k, got.Optim[k], v)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CheckpointName)
	ck := testCheckpoint(t)
	if err := SaveCheckpoint(path, ck); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	equalCheckpoints(t, got, ck)
	// The directory form used by --model.
	got, err = LoadModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	equalCheckpoints(t, got, ck)

	// Overwrite with new weights and no optimiser state; no temp files remain.
	ck2 := testCheckpoint(t)
	ck2.Params = hardParams(t, ck2.Params.Config, 32, 0.3)
	ck2.Optim = nil
	if err := SaveCheckpoint(path, ck2); err != nil {
		t.Fatal(err)
	}
	got, err = LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	equalCheckpoints(t, got, ck2)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries after two saves, want 1", len(ents))
	}
	// Saving is deterministic (optimiser keys are sorted).
	p2 := filepath.Join(dir, "again")
	if err := SaveCheckpoint(p2, ck); err != nil {
		t.Fatal(err)
	}
	p3 := filepath.Join(dir, "again2")
	if err := SaveCheckpoint(p3, ck); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(p2)
	b3, _ := os.ReadFile(p3)
	if !bytes.Equal(b2, b3) {
		t.Fatal("two saves of the same checkpoint differ")
	}
}

func TestCheckpointPaperPreset(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 125 MB file")
	}
	p, err := NewParams(Paper(185, 100), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	vocab := make([]string, 185)
	vocab[0], vocab[1] = "<start>", "<stop>"
	for i := 2; i < len(vocab); i++ {
		vocab[i] = "[X" + strings.Repeat("a", i%7) + "]"
	}
	ck := &Checkpoint{Params: p, Vocab: vocab}
	path := filepath.Join(t.TempDir(), "paper.ckpt")
	if err := SaveCheckpoint(path, ck); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	equalCheckpoints(t, got, ck)
}

func TestCheckpointBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.ckpt")
	if err := SaveCheckpoint(path, testCheckpoint(t)); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	badVersion := bytes.Clone(good)
	badVersion[8] = 9
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotCheckpoint},
		{"foreign", []byte("PK\x03\x04 this is a zip file, not a checkpoint"), ErrNotCheckpoint},
		{"gob", []byte("\x1f\xff\x81\x03\x01\x01\x06Tensor"), ErrNotCheckpoint},
		{"magic only", good[:8], ErrTruncated},
		{"half", good[:len(good)/2], ErrTruncated},
		{"no checksum", good[:len(good)-1], ErrTruncated},
		{"trailing", append(bytes.Clone(good), 0), ErrCorrupt},
		{"bit flip", flipped, ErrCorrupt},
		{"version", badVersion, ErrVersion},
	}
	for _, c := range cases {
		p := write(c.name, c.data)
		_, err := LoadCheckpoint(p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
	}
	if _, err := LoadCheckpoint(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestCheckpointRejectsBadInput(t *testing.T) {
	ck := testCheckpoint(t)
	ck.Vocab = ck.Vocab[:3]
	path := filepath.Join(t.TempDir(), "x.ckpt")
	if err := SaveCheckpoint(path, ck); err == nil || !strings.Contains(err.Error(), "vocab") {
		t.Fatalf("short vocabulary: err = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a failed save left a file behind")
	}
	if err := SaveCheckpoint(filepath.Join(t.TempDir(), "no", "such", "dir", "x"), testCheckpoint(t)); err == nil {
		t.Fatal("save into a missing directory succeeded")
	}
}
