package graphga

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// heavyAtoms returns the heavy atoms of the SMILES s.
func heavyAtoms(t *testing.T, s string) int {
	t.Helper()
	var p parent
	if err := p.parse(s); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	n := 0
	for _, a := range p.atoms {
		if a.Element != "H" {
			n++
		}
	}
	return n
}

// TestCrossSize: two parents of 34 heavy atoms have children of up to about 60 heavy atoms; with the graph GA's
// size rule every child has more than 5 heavy atoms and fewer than the rule's targets reach (mean + 6 sd), and a
// pair whose every child is too small gives ErrSize.
func TestCrossSize(t *testing.T) {
	a := "CCCCCCCCCCCCCCCCC(=O)NCCCCCCCCCCCCCCC" // 34 heavy atoms, cut anywhere along the chain
	b := "OCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
	rng := rand.New(rand.NewPCG(1, 2))
	free, ruled := &Crosser{}, &Crosser{Size: ZINCSize()}
	var over int
	for range 300 {
		kid, err := free.Cross(a, b, rng)
		if err != nil {
			t.Fatal(err)
		}
		if heavyAtoms(t, kid) >= 50 {
			over++
		}
		kid, err = ruled.Cross(a, b, rng)
		if errors.Is(err, ErrSize) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := heavyAtoms(t, kid); n <= 5 || float64(n) >= 39.15+6*3.5 {
			t.Errorf("child %s: %d heavy atoms, outside the rule", kid, n)
		}
	}
	if over == 0 {
		t.Error("without the rule no child of 300 reached 50 heavy atoms: the test proves nothing")
	}
	// Every child of two propanes has at most 4 heavy atoms, too few for the rule.
	if _, err := ruled.Cross("CCC", "CCC", rng); !errors.Is(err, ErrSize) {
		t.Errorf("two propanes: %v, want ErrSize", err)
	}
}

// TestMutateSize: with the size rule a molecule far above the rule's sizes has no mutant, and one within them
// still has.
func TestMutateSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	u := &Mutator{Size: ZINCSize()}
	if kid, err := u.Mutate(strings.Repeat("C", 80), rng); !errors.Is(err, ErrNoMutation) {
		t.Errorf("80 heavy atoms: mutant %q, err %v; want ErrNoMutation", kid, err)
	}
	for range 20 {
		kid, err := u.Mutate("CC(=O)Nc1ccc(O)cc1", rng)
		if err != nil {
			t.Fatalf("paracetamol: %v", err)
		}
		if n := heavyAtoms(t, kid); n <= 5 || n > 14 {
			t.Errorf("mutant %s of paracetamol: %d heavy atoms", kid, n)
		}
	}
}
