package smiles

import (
	"strings"
	"testing"
)

// TestIdentity: one molecule written in different atom orders, Kekulé structures, aromatic or not, hydrogens
// in brackets or not, gets one identity; different molecules, enantiomers and E/Z isomers included, get
// different ones.
func TestIdentity(t *testing.T) {
	same := [][]string{
		{"C1=CC=CC=C1", "C=1C=CC=CC=1", "c1ccccc1", "C1C=CC=CC=1"},
		{"CC1=CC=CC=C1", "C1=CC=C(C)C=C1", "c1ccc(cc1)C", "C(C1=CC=CC=C1)"},
		{"OC(=O)CCN", "NCCC(O)=O", "[NH2]CCC(=O)[OH]", "C(CN)C(=O)O"},
		{"Cc1ccc2[nH]ccc2c1", "c1cc2[nH]ccc2cc1C", "CC1=CC2=C(C=C1)NC=C2"},
		{"C[C@H](N)O", "N[C@@H](C)O", "O[C@@H](N)C", "[C@H](C)(O)N", "C[C@@H](O)N"},
		{"F/C=C/F", "F\\C=C\\F", "C(\\F)=C/F"},
		{"F/C=C\\F", "F\\C=C/F", "C(/F)=C/F"},
		{"C[N+](C)(C)C", "C[N+](C)(C)C"},
		{"OC1CC1", "C1CC1O", "C1(O)CC1"},
		{"CC(C)O", "C[C@H](C)O", "C[C@@H](C)O"}, // marks RDKit drops: two like neighbours,
		{"CC(F)(F)[CH1]", "CC(F)(F)[C@H1]"},     // too few neighbours,
		{"CN(CC)CCC", "C[N@](CC)CCC"},           // an amine's nitrogen
		{"CCCN", "CCCN[H]", "[H]N([H])CCC"},     // hydrogens written as atoms
		{"C[C@@H](N)O", "[H][C@](C)(N)O"},
		{"C[C@@H](O)[C@@H](O)[C@@H](O)C", "C[C@H](O)[C@H](O)[C@H](O)C"}, // mirror images of one molecule
		{"CC[S@](=O)c1ccccc1", "O=[S@@](CC)c1ccccc1", "c1([S@@](=O)CC)ccccc1", "[S@@](CC)(c1ccccc1)=O"},
		{"CC(C)C/C([O-])=N/S(=O)(=O)C", "CS(=O)(=O)/N=C(\\[O-])CC(C)C"},
		// A ring atom with two like ring neighbours and no other such mark in its ring system: RDKit drops it.
		{"CC1CCC(C)CC1", "C[C@H]1CCC(C)CC1", "C[C@@H]1CCC(C)CC1"},
		{"CC1(C)CCC(C)CC1", "CC1(C)CC[C@H](C)CC1"},
		{"CC1CCC2(CC1)CCC2", "C[C@H]1CCC2(CC1)CCC2"},
		{"CC1(F)CCC(O)CC1", "OC1CC[C@](C)(F)CC1"},
		{"CC1CC2(CC[C@@H](C)C2)C1", "C[C@H]1CC2(CC[C@@H](C)C2)C1"}, // the other mark is a stereocentre's
		// Marks around a double bond in a ring of fewer than eight atoms: RDKit ignores them.
		{"COc1ccc(F)cc1C(=O)Nc1nccs1", "COC1=CC=C(F)C=C1C(=O)NC2=NC=CS/2"},
		{"C1=CCCCC1", "C1=C\\CCCC/1"},
	}
	var id Identifier
	ids := make([]string, len(same))
	for i, group := range same {
		for j, s := range group {
			got, err := id.Identity(s)
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			if !strings.HasPrefix(got, identityPrefix) {
				t.Errorf("%q: identity %q, want a hash", s, got)
			}
			if j == 0 {
				ids[i] = got
			} else if got != ids[i] {
				t.Errorf("%q: identity %s, want %s (that of %q)", s, got, ids[i], group[0])
			}
		}
	}
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[i] == ids[j] {
				t.Errorf("%q and %q share identity %s", same[i][0], same[j][0], ids[i])
			}
		}
	}
	differ := [][2]string{
		{"C=CCC", "CC=CC"},                                            // but-1-ene, but-2-ene
		{"C1=CC=CCC1", "C1=CCC=CC1"},                                  // cyclohexa-1,3- and 1,4-diene
		{"C[C@H](N)O", "C[C@@H](N)O"},                                 // enantiomers
		{"F/C=C/F", "F/C=C\\F"},                                       // E and Z
		{"FC=CF", "F/C=C/F"},                                          // unspecified and E
		{"CC(C)C", "CCCC"},                                            // isobutane, butane
		{"CC[S@](=O)c1ccccc1", "CC[S@@](=O)c1ccccc1"},                 // a sulfoxide's enantiomers
		{"C[C@H](O)[C@@H](O)[C@H](O)C", "C[C@H](O)[C@H](O)[C@H](O)C"}, // a pseudo-asymmetric centre's two forms
		{"C[C@H](O)C(O)[C@H](O)C", "C[C@H](O)[C@H](O)[C@H](O)C"},      // ... and without its mark
		{"C1CCC2CCCCC2C1", "C1CCC2CCCC2CC1"},                          // decalin, bicyclo[5.3.0]decane
		{"[13CH4]", "C"},                                              // isotope
		{"C[N+](=O)[O-]", "CN(=O)=O"},                                 // charges
		{"[CH3]C", "[CH2]C"},                                          // a radical
		{"C1CC1C1CC1", "C1CCC2(CC1)CC2"},                              // bicyclopropyl, a spiro compound
		{"c1ccc2ccccc2c1", "C1=CC=C2C=CC=CC2=C1"},                     // naphthalene in both forms: the same (checked below)
	}
	for _, p := range differ[:len(differ)-1] {
		a, err1 := id.Identity(p[0])
		b, err2 := id.Identity(p[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("%q, %q: %v, %v", p[0], p[1], err1, err2)
		}
		if a == b {
			t.Errorf("%q and %q share identity %s", p[0], p[1], a)
		}
	}
	last := differ[len(differ)-1]
	a, _ := id.Identity(last[0])
	b, _ := id.Identity(last[1])
	if a != b {
		t.Errorf("%q: %s, %q: %s, want one identity", last[0], a, last[1], b)
	}
}

// TestIdentityUnplaced: a stereo mark the identity cannot place gives the SMILES itself, and a SMILES that does
// not parse an error.
func TestIdentityUnplaced(t *testing.T) {
	var id Identifier
	for _, s := range []string{
		"C[C@H]1CC[C@@H](C)CC1",  // cis-1,4-dimethylcyclohexane: ring neighbours alike, cis and trans
		"O[C@H]1CC[C@](C)(F)CC1", // two such marks in one ring, one of them between unlike chain neighbours
		"C/1=C/CCCCCC1",          // trans-cyclooctene: cis and trans in a ring of eight
		"F/C=C/1CCCC1C",          // a mark on a ring closure
	} {
		got, err := id.Identity(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got != s {
			t.Errorf("%q: identity %q, want the SMILES itself", s, got)
		}
	}
	if _, err := id.Identity("C1CC"); err == nil {
		t.Error(`"C1CC": no error`)
	}
}

// BenchmarkIdentity: the identity of a drug-like molecule (celecoxib, kekulised, as the codec's keys are).
func BenchmarkIdentity(b *testing.B) {
	const s = "CC1=CC=C(C=C1)C1=CC(=NN1C1=CC=C(C=C1)S(N)(=O)=O)C(F)(F)F"
	var id Identifier
	for b.Loop() {
		if _, err := id.Identity(s); err != nil {
			b.Fatal(err)
		}
	}
}
