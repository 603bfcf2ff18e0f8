package selfies

import (
	"compress/gzip"
	"encoding/csv"
	"io"
	"os"
	"strings"
	"testing"
)

// readCSVFrom parses CSV with a header row from r.
func readCSVFrom(t testing.TB, name string, r io.Reader) []map[string]string {
	t.Helper()
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: empty", name)
	}
	head := recs[0]
	rows := make([]map[string]string, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		m := make(map[string]string, len(head))
		for j, h := range head {
			if j < len(rec) {
				m[h] = rec[j]
			}
		}
		rows = append(rows, m)
	}
	return rows
}

// readMaybeGz reads a CSV file that may be gzip-compressed (".gz").
func readMaybeGz(t testing.TB, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open test data: %v", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	return readCSVFrom(t, path, r)
}

// TestGeneratedTables checks string-for-string equality with selfies 2.0.0
// output on the 10k GuacaMol and 10k ZINC tables in data/generated: the
// selfies column is encoder(smiles), decoded_smiles is decoder(selfies).
func TestGeneratedTables(t *testing.T) {
	for _, name := range []string{
		"guacamol_10k_selfies_v2.0.0_scores.csv.gz",
		"zinc250k_first10k_selfies_v2.0.0.csv.gz",
	} {
		t.Run(name, func(t *testing.T) {
			rows := readMaybeGz(t, dataDir+"/generated/"+name)
			enc := NewEncoder(DefaultConstraints())
			dec := NewDecoder(DefaultConstraints())
			encBad, decBad := 0, 0
			for i, r := range rows {
				got, err := enc.Encode(r["smiles"])
				if err != nil || got != r["selfies"] {
					encBad++
					if encBad <= 10 {
						t.Errorf("row %d encode(%q):\n got %q, %v\nwant %q", i, r["smiles"], got, err, r["selfies"])
					}
				}
				got, err = dec.Decode(r["selfies"])
				if err != nil || got != r["decoded_smiles"] {
					decBad++
					if decBad <= 10 {
						t.Errorf("row %d decode(%q):\n got %q, %v\nwant %q", i, r["selfies"], got, err, r["decoded_smiles"])
					}
				}
			}
			t.Logf("%s: %d rows, %d encode mismatches, %d decode mismatches", name, len(rows), encBad, decBad)
			if len(rows) != 10000 {
				t.Errorf("got %d rows, want 10000", len(rows))
			}
		})
	}
}
