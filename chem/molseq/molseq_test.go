package molseq

import (
	"encoding/csv"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/vocab"
)

func shipped(t *testing.T) *vocab.Vocab {
	t.Helper()
	v, err := vocab.Named("guacamol+zinc")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ids(t *testing.T, v *vocab.Vocab, sf string, n int) []int {
	t.Helper()
	sym, err := selfies.Split(sf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Encode(nil, sym, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// guacamol100 returns the rows of the 100 GuacaMol initial molecules (header first: index, SELFIES, SMILES, ...).
func guacamol100(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("../../data/guacamol/guacamol_train_data_first_100.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCanonicalGuacaMol checks NF-BO's canonicalisation on the 100 GuacaMol initial molecules: the CSV's SELFIES
// (selfies.encoder of its SMILES) canonicalise to what FromSMILES gives for the SMILES, canonical sequences are
// fixed points, and the key decodes from the canonical sequence.
func TestCanonicalGuacaMol(t *testing.T) {
	rows := guacamol100(t)
	v := shipped(t)
	const T = 200
	c, err := New(v, T)
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i, r := range rows[1:] {
		sf, smi := r[1], r[2]
		raw := ids(t, v, sf, T)
		canon := make([]int, T)
		key, ok := c.Canonical(canon, raw)
		if !ok {
			t.Errorf("row %d: %s not valid", i+1, sf)
			continue
		}
		if !slices.Equal(canon, raw) {
			changed++
		}
		fromSMILES := make([]int, T)
		key2, err := c.FromSMILES(fromSMILES, smi)
		if err != nil || key2 != key || !slices.Equal(fromSMILES, canon) {
			t.Errorf("row %d: FromSMILES(%s) = %q, %v; Canonical of its SELFIES gives %q", i+1, smi, key2, err, key)
		}
		again := make([]int, T)
		if key3, ok := c.Canonical(again, canon); !ok || key3 != key || !slices.Equal(again, canon) {
			t.Errorf("row %d: canonical sequence is not a fixed point: %q vs %q", i+1, key3, key)
		}
		want, err := selfies.Decode(v.DecodeString(canon))
		if err != nil || want != key {
			t.Errorf("row %d: key %q, canonical SELFIES decodes to %q (%v)", i+1, key, want, err)
		}
	}
	t.Logf("%d of %d initial sequences changed by canonicalisation", changed, len(rows)-1)
}

// TestCross: graph crossover children of the GuacaMol initial molecules are canonical sequences of valid
// molecules (their keys come back from Canonical), distinct from both parents in most cases; a ring alone has no
// bond to cut.
func TestCross(t *testing.T) {
	rows := guacamol100(t)
	const T = 128
	c, err := New(shipped(t), T)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(rows)-1)
	for _, r := range rows[1:] {
		key, err := c.FromSMILES(make([]int, T), r[2])
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	dst, canon := make([]int, T), make([]int, T)
	made, fresh := 0, 0
	for range 500 {
		a, b := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
		if !c.Cross(dst, a, b, rng.IntN(2) == 0, rng) {
			continue
		}
		made++
		key, ok := c.Canonical(canon, dst)
		if !ok || !slices.Equal(canon, dst) {
			t.Fatalf("child of %q and %q: not a canonical sequence of a valid molecule (%q, %v)", a, b, key, ok)
		}
		if key != a && key != b {
			fresh++
		}
	}
	if made < 450 || fresh < made*9/10 {
		t.Errorf("500 crossovers: %d children, %d new molecules", made, fresh)
	}
	if c.Cross(dst, "C1=CC=CC=C1", keys[0], false, rng) {
		t.Error("benzene crossed: it has no bond outside its ring")
	}
}

// TestMutate: graph mutants of the GuacaMol initial molecules are canonical sequences of valid molecules other
// than the parent, written over the parent's own slice; a sequence that is not a molecule has none.
func TestMutate(t *testing.T) {
	rows := guacamol100(t)
	const T = 128
	c, err := New(shipped(t), T)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	seq, canon := make([]int, T), make([]int, T)
	made := 0
	for _, r := range rows[1:] {
		key, err := c.FromSMILES(seq, r[2])
		if err != nil {
			t.Fatal(err)
		}
		if !c.Mutate(seq, seq, false, rng) {
			continue
		}
		made++
		got, ok := c.Canonical(canon, seq)
		if !ok || !slices.Equal(canon, seq) {
			t.Fatalf("mutant of %q: not a canonical sequence of a valid molecule (%q, %v)", key, got, ok)
		}
		if got == key {
			t.Errorf("mutant of %q: the same molecule", key)
		}
	}
	if made < (len(rows)-1)*9/10 {
		t.Errorf("%d of %d molecules mutated", made, len(rows)-1)
	}
	bad := make([]int, T)
	for i := range bad {
		bad[i] = -1
	}
	if c.Mutate(seq, bad, false, rng) {
		t.Error("a sequence of tokens outside the vocabulary mutated")
	}
}

func TestCanonicalRules(t *testing.T) {
	v := shipped(t)
	c, err := New(v, 6)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]int, 6)
	// The decoder's constraints turn O=C after C-O into a single bond: [C][O][=C] canonicalises to [C][O][C].
	key, ok := c.Canonical(dst, ids(t, v, "[C][O][=C]", 6))
	if !ok || key != "COC" || !slices.Equal(dst, ids(t, v, "[C][O][C]", 6)) {
		t.Errorf("[C][O][=C]: %q %v %v, want COC and [C][O][C]", key, ok, v.Decode(dst))
	}
	// Nothing before <stop>: the empty molecule is invalid.
	if _, ok := c.Canonical(dst, []int{vocab.Stop, vocab.Stop, vocab.Stop, vocab.Stop, vocab.Stop, vocab.Stop}); ok {
		t.Error("empty sequence accepted")
	}
	// Five symbols fit in T = 6; six do not.
	if _, ok := c.Canonical(dst, ids(t, v, "[C][C][C][C][C]", 6)); !ok {
		t.Error("5 symbols rejected at T = 6")
	}
	if _, err := c.FromSMILES(dst, "CCCCCC"); err == nil {
		t.Error("6 symbols accepted at T = 6")
	}
	// An id outside the vocabulary is invalid, not a panic.
	if _, ok := c.Canonical(dst, []int{v.Len(), 1, 1, 1, 1, 1}); ok {
		t.Error("id V accepted")
	}
	// A symbol that the re-encoding produces but the vocabulary lacks makes the sequence invalid: [O][O][=C]
	// decodes to OOC (the second O has one bond left), which encodes to [O][O][C].
	small, err := vocab.New([]string{vocab.StartToken, vocab.StopToken, "[O]", "[=C]"})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := New(small, 6)
	if key, ok := cs.Canonical(dst, []int{2, 2, 3, 1, 1, 1}); ok {
		t.Errorf("[O][O][=C] valid (%q) over a vocabulary without [C]", key)
	}
	if _, err := cs.FromSMILES(dst, "OO"); err != nil {
		t.Errorf("FromSMILES(OO): %v", err)
	}
}
