package molfile

import (
	"bytes"
	"math"
	"testing"
)

// WriteCSV's tables read back as written: the same SMILES, names and scores to the last bit, in order.
func TestWriteCSVReadsBack(t *testing.T) {
	rows := []Row{
		{SMILES: "CC(=O)Oc1ccccc1C(=O)O", Score: math.Nextafter(0.3, 1), Name: "call 12"},
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

// WriteSDF's files read back as written: names, scores to the last bit and the molfile blocks below their
// titles.
func TestWriteSDFReadsBack(t *testing.T) {
	block := "\n     RDKit          2D\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\n" +
		"    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n" +
		"    1.5000    0.0000    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0\n" +
		"  1  2  1  0\nM  END\n"
	rows := []Row{
		{SMILES: "CO", MolBlock: block, Score: math.Nextafter(0.3, 1), Name: "call 7"},
		{SMILES: "CO", MolBlock: block, Score: -3, Name: "two\nlines"},
	}
	var b bytes.Buffer
	if err := WriteSDF(&b, "qed", rows); err != nil {
		t.Fatal(err)
	}
	got, hasScores, err := Parse("best.sdf", b.Bytes(), "qed", math.MaxInt)
	if err != nil || !hasScores || len(got) != 2 {
		t.Fatalf("Parse: %d rows, scores %v, %v\n%s", len(got), hasScores, err, b.String())
	}
	for i, name := range []string{"call 7", "two lines"} {
		r := got[i]
		if r.Name != name || math.Float64bits(r.Score) != math.Float64bits(rows[i].Score) ||
			r.MolBlock != name+block {
			t.Errorf("record %d: read %q %q %v", i+1, r.Name, r.MolBlock, r.Score)
		}
	}
	if err := WriteSDF(&b, "qed", []Row{{SMILES: "CCO"}}); err == nil {
		t.Error("a row without a molfile block was written")
	}
}
