package modelcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo/flowstats"
	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// guacamol100 holds 100 scored GuacaMol molecules (smile, and a column per task).
const guacamol100 = "../data/guacamol/guacamol_train_data_first_100.csv"

// writeTinyModel writes a small random SeqFlow over the shipped vocabulary into dir: untrained, but a flow all
// the same (exact round trip, fine-tunable), so that every check runs in seconds.

// streams returns two buffers, for the results and the messages.
func streams() (*bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &out, &errb
}

// Flowstats on a tiny random model prints every table, with the anchors the best by the task column.
func TestFlowstats(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out, errb := streams()
	err := Flowstats(context.Background(), out, errb, FlowstatsSettings{Model: dir, Data: guacamol100, N: 40, Anchors: guacamol100,
		Task: "adip", Top: 3, T: 60, NLLT: []int{40, 60}, Samples: 50, Backend: "go", Seed: 1,
		Locality: flowstats.LocalityConfig{Lengths: []float64{0.8, 0.05}, PerAnchor: 4, Prob: 0.1, Keep: []float64{0.5}}})
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errb)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| data | 40 |", "| prior samples, T = 60 | 50 |",
		"| 40 |", "| 60 |",
		"the best 3 molecules by adip of " + guacamol100,
		"| trust region L = 0.8 | ", " / 12 |", "| trust region L = 0.05 | ", "| regrown, 50 % of the tokens kept | ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The density table: three rank correlations, the length's with the scores as the file gives it.
	m := regexp.MustCompile(`Density against adip on the (\d+) scored molecules shorter than 60 tokens \(Spearman\):\n\n.*\n.*\n\| (\S+) \| (\S+) \| (\S+) \|`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("output lacks the density table")
	}
	ck, err := model.LoadModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	mols, _, _, err := molfile.ReadMolecules(guacamol100, "adip", 1<<30, voc, ck.Params.Config.MaxT, molfile.NewSkips("", nil))
	if err != nil {
		t.Fatal(err)
	}
	var length, score []float64
	for _, mol := range mols {
		if mol.N < 60 {
			length, score = append(length, float64(mol.N)), append(score, mol.Score)
		}
	}
	if m[1] != strconv.Itoa(len(score)) || m[3] != fmt.Sprintf("%.3f", gp.Spearman(length, score)) {
		t.Errorf("density table over %s molecules, length against score %s; want %d and %.3f", m[1], m[3], len(score), gp.Spearman(length, score))
	}
	for _, v := range []string{m[2], m[4]} {
		if r, err := strconv.ParseFloat(v, 64); err != nil || r < -1 || r > 1 {
			t.Errorf("density table: rank correlation %q", v)
		}
	}
	// A tiny random model still inverts exactly: every molecule that fits comes back.
	if m := regexp.MustCompile(`Decoding at T = 60: (\d+) of (\d+) molecules`).FindStringSubmatch(out.String()); m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("output lacks a full reconstruction line: %q", m)
	}
	out, errb = streams()
	if err := Flowstats(context.Background(), out, errb, FlowstatsSettings{Model: dir, Data: guacamol100, N: 10, T: 300, NLLT: []int{60}}); err == nil ||
		!strings.Contains(err.Error(), "outside [2, 288]") {
		t.Errorf("T beyond the model's max_seq_len: %v, want an error naming the range", err)
	}
}

// Fitcheck writes one row per training-set size, and needs the task's column.
func TestFitcheck(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	out, errb := streams()
	if err := Fitcheck(context.Background(), out, errb, FitcheckSettings{Data: guacamol100, Task: "adip", Model: dir, Train: []int{10, 30}, Test: 20, Seed: 1}); err != nil {
		t.Fatalf("%v\n%s", err, errb)
	}
	for _, want := range []string{"column adip: ", "20 held out", "| train | tokens | morgan | latent | latent-svgp |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if rows := regexp.MustCompile(`(?m)^\| (10|30) \| -?\d\.\d{3} \| -?\d\.\d{3} \| -?\d\.\d{3} \| -?\d\.\d{3} \|`).FindAllString(out.String(), -1); len(rows) != 2 {
		t.Errorf("want the rows of sizes 10 and 30, got %q:\n%s", rows, out)
	}
	out, errb = streams()
	if err := Fitcheck(context.Background(), out, errb, FitcheckSettings{Data: guacamol100, Task: "nope", Model: dir, Train: []int{10}, Test: 20}); err == nil ||
		!strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("a missing column: %v, want an error naming it", err)
	}
}

// Recon reconstructs every molecule a random flow encodes, also after a fine-tune, and counts the lines that
// cannot be encoded, reporting each with its file and line.
func TestRecon(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	in := filepath.Join(dir, "mols.smi")
	if err := os.WriteFile(in, []byte("CCO ethanol\n\n[C][C][N]\nc1ccccc1\tbenzene\n[Xx][C]\nC1CC\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := filepath.Join(dir, "ft.smi")
	if err := os.WriteFile(ft, []byte("CCO\nCCN ZINC1\nc1ccccc1O\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb := streams()
	c, err := Recon(context.Background(), out, errb, ReconSettings{Model: dir, File: in, Format: "auto", Backend: "go", Batch: 2,
		FineTune: ft, Epochs: 2, Seed: 1, FreezeEmbed: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, errb)
	}
	if c != (ReconCounts{OK: 3, Total: 3, Bad: 2}) || c.All() {
		t.Errorf("counts %+v, want 3 of 3 and 2 bad lines", c)
	}
	if !strings.Contains(out.String(), "reconstructed 3 of 3 molecules (1.0000); 2 lines could not be encoded") {
		t.Errorf("stdout:\n%s", out)
	}
	for _, want := range []string{in + ":5: ", `unknown token "[Xx]"`, in + ":6: ", "recon: epoch 2 (2 steps): closest embeddings",
		"fine-tuned 2 epochs on 3 molecules"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}

	empty := filepath.Join(dir, "empty.smi")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb = streams()
	if _, err := Recon(context.Background(), out, errb, ReconSettings{Model: dir, File: empty, Format: "auto", Backend: "go", Batch: 2}); err == nil ||
		err.Error() != "recon: "+empty+": no molecules" {
		t.Errorf("a file without molecules: %v", err)
	}
}
