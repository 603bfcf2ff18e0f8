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
