package sdf

import (
	"strings"
	"testing"
)

const twoRecords = `aspirin
  RDKit          2D

 13 13  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 C   0  0
M  END
> <potency>
7.5

> <note>
first line
second line

$$$$
sodium acetate
     RDKit          2D

  5  4  0  0  0  0  0  0  0  0999 V2000
M  END
$$$$
`

func TestRead(t *testing.T) {
	recs, err := Read("x.sdf", strings.NewReader(twoRecords))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	a := recs[0]
	if a.Line != 1 || a.Name != "aspirin" || !strings.HasSuffix(a.MolBlock, "M  END\n") || !strings.HasPrefix(a.MolBlock, "aspirin\n") ||
		a.Data["potency"] != "7.5" || a.Data["note"] != "first line\nsecond line" {
		t.Errorf("first record: %+v", a)
	}
	if b := recs[1]; b.Line != 15 || b.Name != "sodium acetate" || len(b.Data) != 0 {
		t.Errorf("second record: %+v", b)
	}
	if !Looks([]byte(twoRecords)) || Looks([]byte("CCO\nc1ccccc1\n")) {
		t.Error("Looks")
	}
	// The last $$$$ may be missing.
	if recs, err := Read("y.sdf", strings.NewReader(strings.TrimSuffix(twoRecords, "$$$$\n"))); err != nil || len(recs) != 2 {
		t.Errorf("without the last $$$$: %d records, %v", len(recs), err)
	}
	_, err = Read("bad.sdf", strings.NewReader("name\n\n\n 1 0 0\n$$$$\n"))
	if err == nil || !strings.Contains(err.Error(), `bad.sdf:5: the record from line 1 has no "M  END"`) {
		t.Errorf("a record without M  END: %v", err)
	}
}
