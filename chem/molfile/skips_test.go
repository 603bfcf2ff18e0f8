package molfile

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nfbo/nfbo/chem/vocab"
)

// Skips names the first ListedSkips molecules, says once that it names no more, and sums them all by reason,
// the unknown tokens that kept most out first.
func TestSkips(t *testing.T) {
	var notes []string
	s := NewSkips("pretrain", func(l string) { notes = append(notes, l) })
	unknown := func(tok string) error { return &vocab.EncodeError{Token: tok, Err: vocab.ErrUnknownToken} }
	for i := range 12 {
		s.Add(fmt.Sprintf("line %d", i), unknown("[C@H1]"))
	}
	for i := range 9 {
		s.Add(fmt.Sprintf("line %d", 12+i), unknown(fmt.Sprintf("[X%d]", i)))
	}
	s.Add("line 21", unknown("[/C]"))
	s.Add("line 22", unknown("[/C]"))
	s.Add("line 23", fmt.Errorf("wrapped: %w", &vocab.EncodeError{Pos: 120, Err: fmt.Errorf("%w for T = 100", vocab.ErrTooLong)}))
	s.Add("line 24", errors.New("selfies: encode: bad ring"))
	s.Add("line 25", nil)
	s.Repeat("line 26")
	if len(notes) != ListedSkips+1 || notes[ListedSkips-1] != "line 19" ||
		notes[ListedSkips] != "pretrain: more molecules left out; the first 20 are named above, the rest counted below" {
		t.Errorf("notes %q", notes)
	}
	if s.Len() != 27 || s.Unknown() != 23 {
		t.Errorf("Len %d, Unknown %d; want 27, 23", s.Len(), s.Unknown())
	}
	want := "27 of 1000 molecules left out: 23 with a token outside the vocabulary guacamol ([C@H1] 12, [/C] 2, [X0] 1, " +
		"[X1] 1, [X2] 1, [X3] 1, [X4] 1, [X5] 1, 3 other tokens); 2 that are no valid SMILES or SELFIES; " +
		"1 longer than T = 100 allows; 1 repeats of an earlier molecule"
	if got := s.Summary(1000, "the vocabulary guacamol", 100); got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	if got := NewSkips("", nil).Summary(5, "v", 10); got != "" {
		t.Errorf("nothing left out: %q", got)
	}
}

// Canonicalize tells its Skips each molecule it leaves out, with the reason's kind.
func TestCanonicalizeSkips(t *testing.T) {
	voc, err := vocab.NFBOGuacaMol()
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{{Line: 2, SMILES: "C[C@H](N)C(=O)O"}, {Line: 3, SMILES: "CCO"}, {Line: 4, SMILES: "CCO"},
		{Line: 5, SMILES: "C1CC"}, {Line: 6, SMILES: "CCCCCCCCCCCCCCCCCCCC"}, {Line: 7, SMILES: "CCN"}}
	s := NewSkips("", nil)
	mols, _, err := Canonicalize(rows, "init.csv", voc, 12, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "4 of 6 molecules left out: 1 with a token outside the model's vocabulary ([C@H1] 1); " +
		"1 that are no valid SMILES or SELFIES; 1 longer than T = 12 allows; 1 repeats of an earlier molecule"
	if got := s.Summary(len(rows), "the model's vocabulary", 12); len(mols) != 2 || got != want {
		t.Errorf("%d molecules, summary\n%s\nwant\n%s", len(mols), got, want)
	}
}
