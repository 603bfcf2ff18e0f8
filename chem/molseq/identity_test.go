package molseq

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/internal/chemtest"
)

// TestIdentityRDKit measures Codec.Identity against RDKit's canonical SMILES, the molecule identity of the
// objectives' caches (chem/objective.Budget), on the 10,000 GuacaMol molecules shipped in data/guacamol and the
// first 5,000 of ZINC250k (data/zinc250k), each also written by RDKit in two random atom orders, in a random
// order as a Kekulé structure and in a random order with every hydrogen in brackets; on graph-GA children of
// them (written in the GA's own atom order); and on sequences with one symbol changed (marks where they mean
// nothing, radicals). Every writing goes through the SELFIES round trip to its key, as the optimiser's candidates
// do. Two keys must share an identity only when RDKit gives them one canonical SMILES (no molecule taken for
// another); keys of one RDKit molecule with different identities (marks the identity leaves unplaced) must be
// rare (none of the 24,834 molecules when written; marks on ring closures beside a double bond that counts could
// make some).
func TestIdentityRDKit(t *testing.T) {
	raw, err := os.ReadFile(chemtest.Data("guacamol", "guacamol_10k.smiles"))
	if err != nil {
		t.Fatal(err)
	}
	var mols []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			mols = append(mols, l)
		}
	}
	mols = append(mols, chemtest.Zinc(t, 5000)...) // GuacaMol's molecules have no stereo marks; ZINC's have
	stride := chemtest.Stride(t, 4)                // make test: every 4th of them, and a quarter of the children and edits below
	mols = chemtest.Every(mols, stride)
	const orders = `
import sys
from rdkit import Chem, RDLogger
RDLogger.DisableLog("rdApp.*")
for i, line in enumerate(sys.stdin):
    m = Chem.MolFromSmiles(line.strip())
    if m is None:
        print(""); continue
    out = list(Chem.MolToRandomSmilesVect(m, 2, randomSeed=1 + i))
    out += Chem.MolToRandomSmilesVect(m, 1, randomSeed=100001 + i, allHsExplicit=True)
    Chem.Kekulize(m, clearAromaticFlags=True)
    out += Chem.MolToRandomSmilesVect(m, 1, randomSeed=200001 + i, kekuleSmiles=True)
    print("\t".join(out))
`
	written := chemtest.RDKit(t, mols, "-c", orders)
	c, err := New(shipped(t), 128)
	if err != nil {
		t.Fatal(err)
	}
	seq := make([]int, c.T())
	var keys []string
	for i, m := range mols {
		for _, s := range append([]string{m}, strings.Fields(written[i])...) {
			if key, err := c.FromSMILES(seq, s); err == nil {
				keys = append(keys, key)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 / stride {
		a, b := mols[rng.IntN(len(mols))], mols[rng.IntN(len(mols))]
		if c.Cross(seq, a, b, true, rng) {
			key, _ := c.Canonical(make([]int, c.T()), seq)
			keys = append(keys, key)
			if c.Mutate(seq, seq, false, rng) {
				key, _ := c.Canonical(make([]int, c.T()), seq)
				keys = append(keys, key)
			}
		}
	}
	// One symbol of a sequence changed, as the token mutation and the flow's decoding do: stereo marks where they
	// mean nothing ([C@H1] with two neighbours), radicals.
	edited := make([]int, c.T())
	for range 5000 / stride {
		if _, err := c.FromSMILES(seq, mols[rng.IntN(len(mols))]); err != nil {
			continue
		}
		end := slices.Index(seq, vocab.Stop)
		seq[rng.IntN(end)] = 2 + rng.IntN(c.Vocab().Len()-2)
		if key, ok := c.Canonical(edited, seq); ok {
			keys = append(keys, key)
		}
	}
	const canonical = `
import sys
from rdkit import Chem, RDLogger
RDLogger.DisableLog("rdApp.*")
for line in sys.stdin:
    m = Chem.MolFromSmiles(line.strip())
    print("" if m is None else Chem.MolToSmiles(m))
`
	canon := chemtest.RDKit(t, keys, "-c", canonical)
	idsOf := map[string]map[string]bool{}    // RDKit canonical SMILES -> identities
	canonsOf := map[string]map[string]bool{} // identity -> RDKit canonical SMILES
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	hashed := 0
	for i, key := range keys {
		if canon[i] == "" {
			continue // RDKit does not read it: the objective's cache never sees it
		}
		id := c.Identity(key)
		if id != key {
			hashed++
		}
		add(idsOf, canon[i], id)
		add(canonsOf, id, canon[i])
	}
	merged, split := 0, 0
	for id, cs := range canonsOf {
		if len(cs) > 1 {
			merged++
			if merged <= 10 {
				t.Errorf("identity %s names %d molecules RDKit tells apart: %v", id, len(cs), cs)
			}
		}
	}
	for cs, ids := range idsOf {
		if len(ids) > 1 {
			split++
			if split <= 5 {
				t.Logf("%s has %d identities: %v", cs, len(ids), ids)
			}
		}
	}
	t.Logf("%d keys (%d hashed, the rest their own identity), %d RDKit molecules, %d identities; %d identities for several molecules, %d molecules under several identities",
		len(keys), hashed, len(idsOf), len(canonsOf), merged, split)
	if split > len(idsOf)/1000 {
		t.Errorf("%d of %d RDKit molecules have several identities, want at most 0.1%%", split, len(idsOf))
	}
}

// TestSkeletonRDKit measures Codec.Skeleton against RDKit's canonical SMILES of the molecule's heavy atoms with
// every charge, hydrogen, isotope, stereo mark and bond order taken out, on the first 5,000 of ZINC250k (stereo
// marks and charges in many), each also written by RDKit in a random atom order, as a Kekulé structure, without
// its stereo marks and with one atom charged and protonated: every writing of a molecule must get its skeleton;
// with one atom's element changed it must get another; and two molecules must share a skeleton exactly when
// RDKit's skeletons agree.
func TestSkeletonRDKit(t *testing.T) {
	mols := chemtest.Every(chemtest.Zinc(t, 5000), chemtest.Stride(t, 4))
	const skeletons = `
import sys
from rdkit import Chem, RDLogger
RDLogger.DisableLog("rdApp.*")
def skeleton(m):
    m = Chem.RWMol(Chem.RemoveHs(m, sanitize=False))
    for a in m.GetAtoms():
        a.SetFormalCharge(0); a.SetNoImplicit(True); a.SetNumExplicitHs(0); a.SetIsotope(0)
        a.SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED); a.SetIsAromatic(False); a.SetNumRadicalElectrons(0)
    for b in m.GetBonds():
        b.SetBondType(Chem.BondType.SINGLE); b.SetIsAromatic(False); b.SetStereo(Chem.BondStereo.STEREONONE)
    return Chem.MolToSmiles(m)
for i, line in enumerate(sys.stdin):
    m = Chem.MolFromSmiles(line.strip())
    if m is None:
        print(""); continue
    other = Chem.RWMol(m)  # another element at one atom: another skeleton
    a = other.GetAtomWithIdx(i % other.GetNumAtoms())
    a.SetAtomicNum(14 if a.GetAtomicNum() == 6 else 6); a.SetNoImplicit(True)
    charged = Chem.RWMol(m)  # a charge and a hydrogen more at one atom: the same skeleton
    a = charged.GetAtomWithIdx((i + 1) % charged.GetNumAtoms())
    a.SetFormalCharge(a.GetFormalCharge() + 1); a.SetNumExplicitHs(a.GetTotalNumHs() + 1); a.SetNoImplicit(True)
    out = [skeleton(m), Chem.MolToSmiles(other), skeleton(other)]
    out += list(Chem.MolToRandomSmilesVect(m, 1, randomSeed=1 + i))
    out.append(Chem.MolToSmiles(m, isomericSmiles=False))
    out.append(Chem.MolToSmiles(charged))
    Chem.Kekulize(m, clearAromaticFlags=True)
    out += Chem.MolToRandomSmilesVect(m, 1, randomSeed=100001 + i, kekuleSmiles=True)
    print("\t".join(out))
`
	rows := chemtest.RDKit(t, mols, "-c", skeletons)
	c, err := New(shipped(t), 128)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{}   // our skeleton -> RDKit's
	theirs := map[string]string{} // RDKit's skeleton -> ours
	for i, m := range mols {
		f := strings.Split(rows[i], "\t")
		if len(f) < 4 {
			t.Fatalf("RDKit cannot read ZINC250k's %q", m)
		}
		ref, sk := f[0], c.Skeleton(m)
		if other := c.Skeleton(f[1]); (other == sk) != (f[2] == ref) {
			t.Errorf("%q and, with one atom's element changed, %q: skeletons %s and %s, RDKit's %q and %q", m, f[1], sk, other, ref, f[2])
		}
		for _, s := range f[3:] {
			if got := c.Skeleton(s); got != sk {
				t.Errorf("%q, written %q: skeleton %s, written as in ZINC250k %s", m, s, got, sk)
			}
		}
		if r, ok := ours[sk]; ok && r != ref {
			t.Errorf("%q: skeleton %s shared with a molecule RDKit gives another (%q, %q)", m, sk, ref, r)
		}
		if o, ok := theirs[ref]; ok && o != sk {
			t.Errorf("%q: RDKit's skeleton %q has two of ours (%s, %s)", m, ref, sk, o)
		}
		ours[sk], theirs[ref] = ref, sk
	}
	if len(ours) < len(mols)*9/10 {
		t.Errorf("%d skeletons of %d molecules: too few to test", len(ours), len(mols))
	}
}
