package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeInitSDFAndSalts starts runs from molecules as chemists keep them: an SDF (made by RDKit, with
// names and the task's scores as data items) holding two salts, and a SMILES file with names and a hydrochloride.
// Salts become their parent molecules with a line saying so, names appear in the messages, and the SDF's scores
// are used as the initial scores; the best molecules at the end carry their names.
func TestOptimizeInitSDFAndSalts(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	writeTinyModel(t, dir)
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
	writeTinyModel(t, dir)
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
