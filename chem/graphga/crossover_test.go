package graphga

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/internal/chemtest"
)

// graphSig returns, per atom, its atomSig and the sorted signatures of its neighbours with the bond orders: a
// labelling-independent description that a wrongly wired ring closure or a lost bond changes.
func graphSig(t *testing.T, s string) []string {
	t.Helper()
	var p parent
	if err := p.parse(s); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	g := &p.g
	label := func(v int) string {
		a := g.Atoms[v]
		return fmt.Sprintf("%s%+d/%d/%d", a.Element, a.Charge, a.HCount, g.BondCount(v))
	}
	var out []string
	for v := range g.Len() {
		var nb []string
		for _, k := range p.adj[v] {
			e := p.edges[k]
			nb = append(nb, fmt.Sprintf("%d:%s", e.order, label(e.a+e.b-v)))
		}
		slices.Sort(nb)
		out = append(out, label(v)+"["+strings.Join(nb, ",")+"]")
	}
	slices.Sort(out)
	return out
}

// TestWriteRoundTrip: the writer gives back the molecule it was handed (no cut), rings, fused and bridged ring
// systems, double-bond closures and more than nine rings open at once included.
func TestWriteRoundTrip(t *testing.T) {
	for _, s := range []string{
		"CCO",
		"C1CCCCC1",
		"c1ccc2ccccc2c1",
		"C1=CC=C2C(=C1)C=CC=C2",
		"C12C3C4C1C5C2C3C45", // cubane: closures that cross
		"C=1CCCCC=1",
		"O=C(NC1CC1)c1ccc(-c2nc3ccccc3[nH]2)cc1",
		"[NH3+]CC([O-])=O",
		"C[C@@H]1CC(Nc2cncc(-c3nncn3C)c2)C[C@@H](C)C1",
		"C1CC2CC3CC4CC5CC6CC7CC8CC9CC%10CC%11CCC%11C%10C9C8C7C6C5C4C3C2C1", // many rings at once
	} {
		var c Crosser
		if err := c.p[0].parse(s); err != nil && !errors.Is(err, ErrNoCut) {
			t.Fatalf("%q: %v", s, err)
		}
		p := &c.p[0]
		c.kid.reset()
		for _, a := range p.atoms {
			c.addAtom(a)
		}
		c.kid.edges = append(c.kid.edges, p.edges...)
		got := c.write()
		if !slices.Equal(graphSig(t, got), graphSig(t, s)) {
			t.Errorf("%q written as %q: another molecule", s, got)
		}
	}
}

// checkChild fails the test unless the child kid of a and b is made of the parents' atoms with their valences,
// charges and hydrogens (each atom's own label at most as often as in the parents), and the SELFIES encoder and
// decoder carry it unchanged: a valid molecule as written.
func checkChild(t *testing.T, kid, a, b string, enc *selfies.Encoder, dec *selfies.Decoder) {
	t.Helper()
	got := graphSig(t, kid)
	count := map[string]int{}
	for _, s := range append(graphSig(t, a), graphSig(t, b)...) {
		count[s[:strings.IndexByte(s, '[')]]++
	}
	for _, s := range got {
		l := s[:strings.IndexByte(s, '[')]
		if count[l]--; count[l] < 0 {
			t.Fatalf("child %q of %q and %q: atom %s is not a parent's atom with its valence", kid, a, b, l)
		}
	}
	checkSELFIES(t, kid, enc, dec)
}

// checkSELFIES fails the test unless the SELFIES encoder and decoder carry the molecule kid unchanged: a valid
// molecule as written.
func checkSELFIES(t *testing.T, kid string, enc *selfies.Encoder, dec *selfies.Decoder) {
	t.Helper()
	sf, err := enc.Encode(kid)
	if err != nil {
		t.Fatalf("%q: SELFIES: %v", kid, err)
	}
	back, err := dec.Decode(sf)
	if err != nil || !slices.Equal(graphSig(t, back), graphSig(t, kid)) {
		t.Fatalf("%q comes back from SELFIES as %q (%v): not a valid molecule as written", kid, back, err)
	}
}

// TestCrossKeepsValences: every child of two ZINC molecules reads back, its atoms are the parents' atoms with
// their valences, charges and hydrogens (each cut atom lost one single bond and gained one), and the SELFIES
// encoder and decoder carry it unchanged: a valid molecule.
func TestCrossKeepsValences(t *testing.T) {
	mols := chemtest.Zinc(t, 300)
	enc := selfies.NewEncoder(selfies.DefaultConstraints())
	dec := selfies.NewDecoder(selfies.DefaultConstraints())
	rng := rand.New(rand.NewPCG(1, 2))
	var c Crosser
	children := map[string]bool{}
	for i := range 1000 {
		a, b := mols[rng.IntN(len(mols))], mols[rng.IntN(len(mols))]
		kid, err := c.Cross(a, b, rng)
		if err != nil {
			t.Fatalf("child %d of %q and %q: %v", i, a, b, err)
		}
		children[kid] = true
		checkChild(t, kid, a, b, enc, dec)
	}
	if len(children) < 900 {
		t.Errorf("1,000 crossovers gave %d distinct children", len(children))
	}
}

// TestCrossRings: ring crossovers of ZINC pairs (two ring bonds cut in each parent, the parts joined at both
// cuts) are valid molecules, built from the parents' atoms with their valences and carried unchanged through the
// SELFIES codec; a parent that is only a ring (benzene) may take part; with Rings, Cross changes some children.
func TestCrossRings(t *testing.T) {
	mols := append(chemtest.Zinc(t, 300), "C1=CC=CC=C1")
	enc := selfies.NewEncoder(selfies.DefaultConstraints())
	dec := selfies.NewDecoder(selfies.DefaultConstraints())
	rng := rand.New(rand.NewPCG(3, 4))
	c := Crosser{Rings: true}
	made := 0
	for range 1000 {
		a, b := mols[rng.IntN(len(mols))], mols[rng.IntN(len(mols))]
		for i, s := range [2]string{a, b} {
			if err := c.p[i].parse(s); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
		}
		c.kid.reset()
		kid, ok := c.crossRings(rng)
		if !ok {
			continue
		}
		made++
		checkChild(t, kid, a, b, enc, dec)
	}
	if made < 700 {
		t.Errorf("1,000 pairs of ZINC molecules gave %d ring crossovers", made)
	}
	// With Rings, Cross makes ring children about half the time and non-ring ones otherwise.
	var plain Crosser
	differ := 0
	r1, r2 := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	zmols := mols[:300] // without benzene, which a non-ring crossover cannot cut
	for range 200 {
		a, b := zmols[r1.IntN(len(zmols))], zmols[r1.IntN(len(zmols))]
		r2.IntN(len(zmols))
		r2.IntN(len(zmols))
		x, err1 := c.Cross(a, b, r1)
		y, err2 := plain.Cross(a, b, r2)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if x != y {
			differ++
		}
	}
	if differ < 20 {
		t.Errorf("Rings changed %d of 200 crossovers", differ)
	}
}

// TestCrossNoCut: a molecule that is one ring has nothing to cut.
func TestCrossNoCut(t *testing.T) {
	var c Crosser
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := c.Cross("c1ccccc1", "CCO", rng); !errors.Is(err, ErrNoCut) {
		t.Errorf("benzene as a parent: %v, want ErrNoCut", err)
	}
	if _, err := c.Cross("CCO", "C(", rng); err == nil || errors.Is(err, ErrNoCut) {
		t.Errorf("an unreadable parent: %v, want its SMILES error", err)
	}
}
