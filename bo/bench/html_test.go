package bench

import (
	"bytes"
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
	if _, err := l.AppendNamed([]string{"C0", "[CH3]1"}, []string{"C0", "C1"}, []string{"", "aspirin-7 <b>"}, time.Unix(0, 0)); err != nil {
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
