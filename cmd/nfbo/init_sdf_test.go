package main

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeInitSDFAndSalts starts runs from molecules as chemists keep them: an SDF (made by RDKit, with
// names and the task's scores as data items) holding two salts, and a SMILES file with names and a hydrochloride.
// Salts become their parent molecules with a line saying so, names appear in the messages, and the SDF's scores
// are used as the initial scores; the best molecules at the end carry their names.
func TestOptimizeInitSDFAndSalts(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	sdfRun := filepath.Join(dir, "sdf")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", "testdata/salts.sdf", "-budget", "6", "-anchors", "1", "-queries", "3", "-candidates", "100", "-model", dir,
		"-rules", "none", "-out", sdfRun)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{
		"testdata/salts.sdf:", "(sodium ibuprofen): kept the largest fragment of 2 (dropped [Na+]), neutralised: CC(C)Cc1ccc(C(C)C(=O)O)cc1",
		"(paroxetine HCl): kept the largest fragment of 2 (dropped Cl)", "4 initial molecules (scores from the file)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// All ten molecules are listed at the end, the SDF's four with their titles.
	for _, want := range []string{"(sodium ibuprofen)\n", "(paroxetine HCl)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the best molecules lack the name %q:\n%s", want, stdout)
		}
	}
	if smiles, _ := readLogSMILES(t, filepath.Join(sdfRun, rundir.EvalLogFile)); len(smiles) != 6 {
		t.Errorf("%d calls, want the 6 of the budget (the SDF's scores are free)", len(smiles))
	}

	smi := filepath.Join(dir, "named.smi")
	os.WriteFile(smi, []byte("CC(=O)Oc1ccccc1C(=O)O aspirin\nCl.CN1CCC(CC1)c1ccccc1 MPP hydrochloride\nC1CC broken\nCn1cnc2c1c(=O)n(C)c(=O)n2C caffeine\n"), 0o644)
	_, stderr, err = runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", smi, "-budget", "8", "-anchors", "1", "-queries", "3", "-candidates", "100", "-model", dir,
		"-rules", "none", "-out", filepath.Join(dir, "smi"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"named.smi:2 (MPP hydrochloride): kept the largest fragment of 2 (dropped Cl): CN1CCC(c2ccccc2)CC1",
		`named.smi:3 (broken): "C1CC": selfies: encode`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestAskCarriesNames: the initial molecules' names (SDF titles) reach the first ask's CSV, the ledger and status.
func TestAskCarriesNames(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	stdout, stderr, err := runCmd(t, newAskCmd(), "", "-run", run, "-task", "potency", "-init", "testdata/salts.sdf",
		"-budget", "10", "-anchors", "1", "-queries", "3", "-candidates", "100", "-model", dir, "-rules", "none")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "id,smiles,name\nm1,") || !strings.Contains(stdout, ",sodium ibuprofen\n") {
		t.Errorf("ask's CSV:\n%s", stdout)
	}
	out, _, err := runCmd(t, newStatusCmd(), "", "-run", run)
	if err != nil || !strings.Contains(out, "(paroxetine HCl)") {
		t.Errorf("status: %v\n%s", err, out)
	}
}

// TestAskSDFDefaultRules is a chemist's first round: an ask/tell run from their own SDF (salts and names, no
// scores for the task) under the default rules, which ask applies without being told. The first ask hands out
// the file's molecules, as they are; once they are told, the next batch holds only molecules that keep the
// default rules (checked again by RDKit): no radical, no charge beyond ±1 on N or O, MW 150-650, no PAINS.
func TestAskSDFDefaultRules(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	ask := func(args ...string) [][]string {
		t.Helper()
		stdout, stderr, err := runCmd(t, newAskCmd(), "", append([]string{"-run", run}, args...)...)
		if err != nil {
			t.Fatalf("ask: %v\n%s", err, stderr)
		}
		recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
		if err != nil || len(recs) < 2 || recs[0][0] != "id" || recs[0][1] != "smiles" {
			t.Fatalf("ask printed %q (%v)", stdout, err)
		}
		return recs[1:]
	}
	first := ask("-task", "potency", "-init", "testdata/salts.sdf", "-budget", "14", "-anchors", "1", "-queries", "10",
		"-candidates", "300", "-model", dir)
	if len(first) != 4 {
		t.Fatalf("first ask: %v, want the SDF's 4 molecules", first)
	}
	var told [][2]string
	for _, r := range first {
		told = append(told, [2]string{r[0], r[1]})
	}
	tell(t, run, tellFile(t, dir, "first.csv", told))
	second := ask()
	if len(second) == 0 {
		t.Fatal("the second ask proposed nothing")
	}
	smiles := make([]string, len(second))
	for i, r := range second {
		smiles[i] = r[1]
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	def, _ := rules.Load("default")
	why, err := pool.Check(context.Background(), def.JSON(), smiles)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range why {
		if w != "" {
			t.Errorf("proposed %s breaks the default rules: %s", smiles[i], w)
		}
	}
}
