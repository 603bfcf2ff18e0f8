package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/model/modeltest"
)

// TestOptimizeCanonicalSMILES runs the GA through "nfbo optimize" with RDKit on qed (initial molecules paid, so
// in the log) and on adip (initial scores from the file, so not in the log) and checks that every molecule in
// the "best molecules" listing is an RDKit canonical SMILES (RDKit canonicalises it to itself), not the SELFIES
// decoder's Kekulé form.
func TestOptimizeCanonicalSMILES(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	pool, err := objective.NewRDKit(objective.RDKitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, task := range []string{"qed", "adip"} {
		out := filepath.Join(dir, task)
		stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-method", "ga", "-task", task, "-init", guacamol100, "-init-count", "20",
			"-budget", "40", "-model", dir, "-out", out, "-seed", "3")
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", task, err, stdout, stderr)
		}
		_, list, ok := strings.Cut(stdout, "best molecules (score, SMILES):\n")
		if !ok {
			t.Fatalf("%s: no listing:\n%s", task, stdout)
		}
		var shown []string
		for _, line := range strings.Split(list, "\n") {
			f := strings.Fields(line)
			if !strings.HasPrefix(line, "  ") || len(f) != 2 {
				break
			}
			shown = append(shown, f[1])
		}
		if len(shown) != 10 {
			t.Fatalf("%s: %d molecules listed, want 10:\n%s", task, len(shown), stdout)
		}
		cs, err := pool.Canonicalize(context.Background(), shown, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cs {
			if c.SMILES != shown[i] {
				t.Errorf("%s: listed %s, whose RDKit canonical SMILES is %s", task, shown[i], c.SMILES)
			}
		}
	}
}
