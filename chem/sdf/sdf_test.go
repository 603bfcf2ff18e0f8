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

// Write's records read back with their names, blocks and data items; the items come in the order of their names.
func TestWriteReadsBack(t *testing.T) {
	recs := []Record{
		{Name: "a", MolBlock: "old title\n  x\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n",
			Data: map[string]string{"score": "0.5", "call": "12"}},
		{Name: "b", MolBlock: "\n  x\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END"},
	}
	var b strings.Builder
	if err := Write(&b, recs); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "M  END\n>  <call>\n12\n\n>  <score>\n0.5\n\n$$$$\nb\n") {
		t.Errorf("written:\n%s", text)
	}
	got, err := Read("w.sdf", strings.NewReader(text))
	if err != nil || len(got) != 2 {
		t.Fatalf("read back %d records, %v", len(got), err)
	}
	if got[0].Name != "a" || !strings.HasPrefix(got[0].MolBlock, "a\n  x\n") || got[0].Data["score"] != "0.5" ||
		got[0].Data["call"] != "12" || got[1].Name != "b" || len(got[1].Data) != 0 {
		t.Errorf("read back %+v", got)
	}
}
