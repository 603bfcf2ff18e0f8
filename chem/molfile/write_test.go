package molfile

import (
	"bytes"
	"math"
	"testing"
)

// WriteCSV's tables read back as written: the same SMILES, names and scores to the last bit, in order.
func TestWriteCSVReadsBack(t *testing.T) {
	rows := []Row{
		{SMILES: "CC(=O)Oc1ccccc1C(=O)O", Score: 0.1 + 0.2, Name: "call 12"},
		{SMILES: "c1ccccc1", Score: math.SmallestNonzeroFloat64, Name: "benzene, the ring"},
		{SMILES: "C[NH3+]", Score: -7.25},
		{SMILES: "CCO", Score: 1e300, Name: `a "quoted" name`},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, "pIC50", rows); err != nil {
		t.Fatal(err)
	}
	got, hasScores, err := Parse("best.csv", b.Bytes(), "pic50", math.MaxInt)
	if err != nil || !hasScores {
		t.Fatalf("Parse: %v (scores %v)\n%s", err, hasScores, b.String())
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows read back, %d written", len(got), len(rows))
	}
	for i, r := range got {
		w := rows[i]
		if r.SMILES != w.SMILES || r.Name != w.Name || math.Float64bits(r.Score) != math.Float64bits(w.Score) || r.Line != i+2 {
			t.Errorf("row %d: read %+v, wrote %+v", i, r, w)
		}
	}

	b.Reset()
	if err := WriteCSV(&b, "", []Row{{SMILES: "CCO"}}); err != nil || b.String() != "smiles\nCCO\n" {
		t.Errorf("without scores or names: %q, %v", b.String(), err)
	}
}
