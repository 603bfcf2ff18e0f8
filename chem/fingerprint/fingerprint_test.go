package fingerprint

import (
	"slices"
	"testing"
)

func counts(t *testing.T, m *Morgan, smi string) []float64 {
	t.Helper()
	dst := make([]float64, m.Width())
	if err := m.Counts(dst, smi); err != nil {
		t.Fatalf("Counts(%q): %v", smi, err)
	}
	return dst
}

// TestSameMolecule checks that writings of one molecule count alike: atom order, Kekulé structure, aromatic
// SMILES, implicit against explicit hydrogens.
func TestSameMolecule(t *testing.T) {
	m := NewMorgan(DefaultRadius, DefaultWidth)
	for _, set := range [][]string{
		{"CCO", "OCC", "C(O)C", "[CH3][CH2][OH]"},
		{"C1=CC=CC=C1", "C=1C=CC=CC=1", "c1ccccc1", "C1C=CC=CC=1"},
		{"C1=CC=C2C=CC=CC2=C1", "C1=CC2=CC=CC=C2C=C1", "c1ccc2ccccc2c1"},                    // naphthalene's Kekulé forms
		{"C1=CC=NC=C1", "N1=CC=CC=C1", "c1ccncc1"},                                          // pyridine
		{"C1=CNC=C1", "c1cc[nH]c1"},                                                         // pyrrole
		{"CC(=O)OC1=CC=CC=C1C(=O)O", "OC(=O)C1=C(OC(C)=O)C=CC=C1", "CC(=O)Oc1ccccc1C(O)=O"}, // aspirin
		{"C[NH3+]", "[NH3+]C"},
	} {
		want := counts(t, m, set[0])
		for _, s := range set[1:] {
			if got := counts(t, m, s); !slices.Equal(got, want) {
				t.Errorf("%q and %q count differently", set[0], s)
			}
		}
	}
}

// TestDifferentMolecules checks that what the invariants hold tells molecules apart.
func TestDifferentMolecules(t *testing.T) {
	m := NewMorgan(DefaultRadius, DefaultWidth)
	for _, p := range [][2]string{
		{"CCO", "CCN"},               // element
		{"CCCCCC", "C1CCCCC1"},       // ring membership (and H count)
		{"CN", "C[NH3+]"},            // charge
		{"C", "[CH3]"},               // hydrogens: a radical
		{"CC(C)C", "CCCC"},           // degree
		{"C=CC=C", "C1=CC=C1"},       // a chain against a ring
		{"CC=CC", "CC#CC"},           // bond order
		{"C1CC1C", "C1CCC1"},         // where the ring is
		{"c1ccccc1O", "C1=CCC=CC1O"}, // conjugated against not
	} {
		if slices.Equal(counts(t, m, p[0]), counts(t, m, p[1])) {
			t.Errorf("%q and %q count alike", p[0], p[1])
		}
	}
}

// TestCountsTotal checks that every atom's environment is counted once per radius, 0 to Radius.
func TestCountsTotal(t *testing.T) {
	for _, c := range []struct {
		smi   string
		atoms int
	}{{"C", 1}, {"CCO", 3}, {"c1ccccc1", 6}, {"CC(=O)Oc1ccccc1C(O)=O", 13}, {"[Na+].[Cl-]", 2}} {
		for r := range 4 {
			m := NewMorgan(r, 64)
			var sum float64
			for _, v := range counts(t, m, c.smi) {
				sum += v
			}
			if want := float64(c.atoms * (r + 1)); sum != want {
				t.Errorf("%q radius %d: %v environments, want %v", c.smi, r, sum, want)
			}
		}
	}
}

// TestRingBonds checks the bridge search on fused, spiro and bridged rings and on chains between rings.
func TestRingBonds(t *testing.T) {
	m := NewMorgan(0, 8)
	for _, c := range []struct {
		smi  string
		ring int // bonds on a cycle
	}{
		{"CCCC", 0}, {"C1CC1", 3}, {"C1CC1C", 3}, {"C1CC1CC1CC1", 6}, {"C1CC12CC2", 6},
		{"C1CC2CCC1C2", 8}, {"c1ccc2ccccc2c1", 11}, {"C1CCC1.C1CC1", 7},
	} {
		if err := m.Counts(make([]float64, 8), c.smi); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range m.ring {
			if r {
				n++
			}
		}
		if n != c.ring {
			t.Errorf("%q: %d ring bonds, want %d", c.smi, n, c.ring)
		}
	}
}

func TestBadSMILES(t *testing.T) {
	m := NewMorgan(DefaultRadius, DefaultWidth)
	if err := m.Counts(make([]float64, DefaultWidth), "C1CC"); err == nil {
		t.Error("an unclosed ring: no error")
	}
}

func BenchmarkFeatures(b *testing.B) {
	m := NewMorgan(DefaultRadius, DefaultWidth)
	smis := []string{"CC(=O)OC1=CC=CC=C1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "CC1=CC=C(C=C1)C2=CC(=NN2C3=CC=C(C=C3)S(=O)(=O)N)C(F)(F)F"}
	dst := make([]float64, len(smis)*m.Width())
	b.ReportAllocs()
	for range b.N {
		if err := m.Features(dst, smis, nil); err != nil {
			b.Fatal(err)
		}
	}
}
