package selfies

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/smiles"
)

// FuzzDecodeVocab decodes any sequence of symbols from the vocabularies in
// data/vocab (two input bytes pick one symbol). Decoding must succeed, and
// the SMILES must parse with our own parser and be written back unchanged.
// Re-encoding and decoding it (NF-BO's canonicalisation) must give the same
// molecule; the string may differ once, because the decoder numbers ring
// bonds in the order the ring symbols came, which a re-encoded string puts
// at the closing atoms (the corpus keeps such a case), but a second round
// must change nothing.
func FuzzDecodeVocab(f *testing.F) {
	vocab := loadVocab(f)
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 2, 0, 3})
	f.Add([]byte("ring and branch symbols everywhere"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b strings.Builder
		for i := 0; i+1 < len(data); i += 2 {
			b.WriteString(vocab[(int(data[i])<<8|int(data[i+1]))%len(vocab)])
		}
		in := b.String()
		out, err := Decode(in)
		if err != nil {
			t.Fatalf("Decode(%q): %v", in, err)
		}
		if out == "" {
			return // nothing but branch, ring or epsilon symbols
		}
		g, err := smiles.Parse(out)
		if err != nil {
			t.Fatalf("Decode(%q) = %q, which our parser rejects: %v", in, out, err)
		}
		if err := g.Kekulize(); err != nil {
			t.Fatalf("Decode(%q) = %q: kekulize: %v", in, out, err)
		}
		if w := g.String(); w != out {
			t.Fatalf("Decode(%q) = %q, parsed and written back as %q", in, out, w)
		}
		out2 := reencode(t, out)
		if why := sameMolecule(t, out, out2); why != "" {
			t.Fatalf("Decode(%q) = %q; re-encoded and decoded it is %q, another molecule: %s", in, out, out2, why)
		}
		if out3 := reencode(t, out2); out3 != out2 {
			t.Fatalf("Decode(%q) = %q; canonicalised %q, then %q: not a fixpoint", in, out, out2, out3)
		}
	})
}

// reencode returns Decode(Encode(s)).
func reencode(t *testing.T, s string) string {
	t.Helper()
	enc, err := Encode(s)
	if err != nil {
		t.Fatalf("Encode(%q): %v", s, err)
	}
	out, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode(Encode(%q)) = Decode(%q): %v", s, enc, err)
	}
	return out
}

// sameMolecule compares two SMILES that should describe the same atoms in
// the same order: equal atoms (chirality aside, whose symbol depends on the
// written neighbour order) and equal bond sets with orders. It returns why
// they differ, or "".
func sameMolecule(t *testing.T, a, b string) string {
	t.Helper()
	ga, err := smiles.Parse(a)
	if err != nil {
		t.Fatalf("Parse(%q): %v", a, err)
	}
	gb, err := smiles.Parse(b)
	if err != nil {
		t.Fatalf("Parse(%q): %v", b, err)
	}
	if ga.Len() != gb.Len() {
		return "atom counts differ"
	}
	type bond struct {
		a, b  int
		order smiles.BondOrder
	}
	bonds := func(g *smiles.Graph) map[bond]bool {
		m := make(map[bond]bool)
		for i := range g.Atoms {
			for _, id := range g.Out(i) {
				bd := g.BondAt(id)
				m[bond{min(bd.Src, bd.Dst), max(bd.Src, bd.Dst), bd.Order}] = true
			}
		}
		return m
	}
	for i := range ga.Atoms {
		x, y := ga.Atoms[i], gb.Atoms[i]
		x.Chirality, y.Chirality = "", ""
		if x != y {
			return fmt.Sprintf("atom %d differs", i)
		}
	}
	ba, bb := bonds(ga), bonds(gb)
	if len(ba) != len(bb) {
		return "bond counts differ"
	}
	for k := range ba {
		if !bb[k] {
			return fmt.Sprintf("bond %d-%d (order %d/2) missing", k.a, k.b, k.order)
		}
	}
	return ""
}

// FuzzEncode feeds arbitrary strings to Encode, which must return a value
// or an error and never panic; a successful result must decode without
// panicking too.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"C", "c1ccccc1", "C[C@@H](F)Cl", "[13CH2]=C", "F/C=C/F", "C%12CC%12",
		"[Fe++].[O-2]", "c1cc[nH]c1", "C1CC(C1)", "CC(C)(C)c1ccc2occ(CC(=O)Nc3ccccc3F)c2c1",
		"[C@]1(F)(Cl)CC1", "C\\1CCC/1", "c1cc1", "C:Cl", "C11", "[C+10]", "((", ".",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Encode(s)
		if err != nil {
			if _, ok := err.(*EncodeError); !ok {
				t.Fatalf("Encode(%q) error %T, want *EncodeError", s, err)
			}
			return
		}
		if _, err := Decode(out); err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("Decode(%q) error %T, want *DecodeError", out, err)
			}
		}
	})
}
