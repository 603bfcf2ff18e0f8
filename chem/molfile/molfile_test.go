package molfile

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/smiles"
)

// FuzzParse feeds arbitrary init files (CSV, or one SMILES per line) to Parse: it must never
// panic, and every molecule it accepts has a printable-ASCII SMILES, a finite score and a line inside the file,
// in increasing order. The seed corpus is testdata/fuzz/FuzzParse and the f.Add calls.
func FuzzParse(f *testing.F) {
	f.Add([]byte("smiles,adip\nCCO,0.5\nCCN,0.25\n"), "adip", 10)
	f.Add([]byte("CCO\n# a comment\nc1ccccc1 benzène\n\n"), "qed", 10)
	f.Add([]byte("\ufeffSMILES\nCCO\r\nCCN\r\n"), "qed", 1)
	f.Add([]byte("smile,adip\n\"C,C\",NaN\n"), "adip", 5)
	f.Add([]byte("name,smiles,adip\nx,CC\u00a0O,1\n"), "adip", 5)
	f.Add([]byte("CC\xe9N\n"), "qed", 3)
	f.Add([]byte("ID\tSmiles\tadip\nm1\tCCO\t0.5\n"), "adip", 5)
	f.Fuzz(func(t *testing.T, data []byte, task string, count int) {
		count = 1 + (count&0xffff)%50
		rows, hasScores, err := Parse("fuzz.csv", data, task, count)
		if err != nil {
			if len(rows) != 0 {
				t.Fatalf("error %v with %d rows", err, len(rows))
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		if len(rows) == 0 || len(rows) > count {
			t.Fatalf("%d rows for count %d", len(rows), count)
		}
		prev := 0
		for _, r := range rows {
			if err := smiles.CheckText(r.SMILES); err != nil {
				t.Errorf("line %d: accepted %q: %v", r.Line, r.SMILES, err)
			}
			if r.Line <= prev || r.Line > lines {
				t.Errorf("line %d after line %d in a file of %d lines", r.Line, prev, lines)
			}
			if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || (!hasScores && r.Score != 0) {
				t.Errorf("line %d: score %v (file has scores: %v)", r.Line, r.Score, hasScores)
			}
			prev = r.Line
		}
	})
}

// Molecule files may be gzipped, as the suites' ZINC (pmo20) and GuacaMol 10k (guacamol7-10k) files are.
func TestReadGzip(t *testing.T) {
	rows, hasScores, err := Read("../../data/zinc250k/zinc.txt.gz", "qed", 3)
	if err != nil {
		t.Fatal(err)
	}
	if hasScores || len(rows) != 3 || rows[0].SMILES != "CC(C)(C)c1ccc2occ(CC(=O)Nc3ccccc3F)c2c1" || rows[2].Line != 3 {
		t.Fatalf("zinc.txt.gz: hasScores %v, rows %+v", hasScores, rows)
	}
	rows, hasScores, err = Read("../../data/generated/guacamol_10k_selfies_v2.0.0_scores.csv.gz", "adip", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !hasScores || len(rows) != 5 {
		t.Fatalf("guacamol 10k csv.gz: hasScores %v, %d rows", hasScores, len(rows))
	}
}

// A tab-separated table with a header naming the SMILES column (a spreadsheet's or DataWarrior's export) keeps
// its scores and names; a SMILES file with a name after a tab is still a SMILES file.
func TestParseTabs(t *testing.T) {
	rows, hasScores, err := Parse("t.tsv", []byte("ID\tSmiles\tadip\nm1\tCCO\t0.5\nm2\tc1ccccc1\t0.25\n"), "adip", 10)
	if err != nil || !hasScores || len(rows) != 2 || rows[1].SMILES != "c1ccccc1" || rows[1].Score != 0.25 || rows[1].Name != "m2" ||
		rows[1].Line != 3 {
		t.Errorf("tab-separated table: %+v, scores %v, %v", rows, hasScores, err)
	}
	rows, hasScores, err = Parse("t.smi", []byte("CCO\tethanol\nCCN\tethylamine\n"), "adip", 10)
	if err != nil || hasScores || len(rows) != 2 || rows[0].SMILES != "CCO" || rows[0].Name != "ethanol" {
		t.Errorf("SMILES with names after tabs: %+v, scores %v, %v", rows, hasScores, err)
	}
	if _, _, err = Parse("t.csv", []byte("Name;SMILES;adip\nx;CCO;0,5\n"), "adip", 10); err == nil ||
		!strings.HasPrefix(err.Error(), "t.csv:1: fields separated by semicolons") {
		t.Errorf("a table separated by semicolons: %v", err)
	}
	if _, _, err = Parse("t.tsv", []byte("smiles\tadip\nCCO\t\n"), "adip", 10); err == nil ||
		err.Error() != "t.tsv:2: column 2 (adip): no score: give every molecule a score, or drop the column to have the objective score them" {
		t.Errorf("an empty score in a tab-separated table: %v", err)
	}
}

// Tabular tells the files Parse reads whole (tables with a header, SDFs) from those of one SMILES a line, from
// their first lines.
func TestTabular(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{"CCO\nc1ccccc1\n", false},
		{"CCO\tethanol\nCCN\tethylamine\n", false},
		{"smiles\nCCO\n", false},
		{"CCO", false},
		{"CCO ethanol, absolute\nCCN\n", false},
		{"id,score\nm1,5\n", false},
		{"", false},
		{"smiles,score\nCCO,1\n", true},
		{"\ufeffid,SMILES\r\nm1,CCO\r\n", true},
		{"name\tsmiles\tpic50\nethanol\tCCO\t5\n", true},
		{"smiles;score\nCCO;1\n", true},
		{"aspirin\n     RDKit          2D\n\n 13 13  0  0  0  0  0  0  0  0999 V2000\n", true},
		{"\n  Mrv\n\n  0  0  0     0  0            999 V3000\n", true},
		{"x\n\n\nM  END\n", true},
	} {
		if got := Tabular([]byte(c.head)); got != c.want {
			t.Errorf("Tabular(%q) = %v, want %v", c.head, got, c.want)
		}
	}
}
