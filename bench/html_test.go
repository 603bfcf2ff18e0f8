package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

// TestBestMoleculesNamed: the best molecules carry the names the ask/tell ledger keeps (the user's SDF titles),
// under the SMILES asked for or the canonical one, and the run page shows them.
func TestBestMoleculesNamed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, rundir.Info{Setting: "0+3", Task: "qed", Method: "nfbo", Seed: 1, Budget: 3}, []float64{0.2, 0.9, 0.5})
	l, err := rundir.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	// writeRun's molecules are C0, C1, C2; C1 is asked under another SMILES, canonical C1.
	if _, err := l.AppendAsked([]rundir.Asked{{SMILES: "C0", Canonical: "C0"}, {SMILES: "[CH3]1", Canonical: "C1", Name: "aspirin-7 <b>"}}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	mols := BestMolecules(r, 3)
	if len(mols) != 3 || mols[0].SMILES != "C1" || mols[0].Name != "aspirin-7 <b>" || mols[1].Name != "" || mols[2].Name != "" {
		t.Fatalf("best molecules %+v, want C1 named aspirin-7 first and no other name", mols)
	}
	var page bytes.Buffer
	if err := WriteRunHTML(&page, RunPage{Run: r, Molecules: mols}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<span class="name">aspirin-7 &lt;b&gt;</span>`) {
		t.Errorf("the run page does not show the name, escaped")
	}
}

// TestReportMarksRuleBreakers: WriteReport's run pages mark the drawn molecules that the check says break a
// default rule, with the rule, and count them; the others are unmarked.
func TestReportMarksRuleBreakers(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "suite", "run")
	writeRun(t, dir, rundir.Info{Setting: "0+3", Task: "qed", Method: "nfbo", Seed: 1, Budget: 3}, []float64{0.2, 0.9, 0.5})
	suite, err := LoadPaths([]string{filepath.Join(root, "suite")})
	if err != nil {
		t.Fatal(err)
	}
	check := func(_ context.Context, smiles []string) ([]string, error) {
		why := make([]string, len(smiles))
		for i, s := range smiles {
			if s == "C1" {
				why[i] = "alert NIH:alpha_halo_amine"
			}
		}
		return why, nil
	}
	out := filepath.Join(root, "out")
	if _, err := WriteReport(context.Background(), suite, "suite", out, ReportOptions{HTML: true, Best: 3, Check: check}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "runs", RunPageName(suite.Runs[0])))
	if err != nil {
		t.Fatal(err)
	}
	p := string(page)
	if strings.Count(p, `class="mol breaks"`) != 1 || !strings.Contains(p, "breaks the default rules: alert NIH:alpha_halo_amine") ||
		!strings.Contains(p, "1 of the molecules below break a rule of nfbo's default chemistry rules") {
		t.Errorf("the run page does not mark the one molecule that breaks a rule:\n%s", p)
	}
}
