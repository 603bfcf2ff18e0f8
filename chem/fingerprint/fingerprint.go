// Package fingerprint computes circular count fingerprints of molecules from their SMILES: every atom's
// environment up to a radius, as in the Morgan algorithm behind ECFP, hashed and counted into a fixed number of
// buckets. They are the inputs on which a Tanimoto-kernel GP models a molecular objective (bo.Featurizer), the
// strongest general-purpose surrogate for molecules in the BO literature.
//
// The atom invariants are those of RDKit's Morgan fingerprint in kind (element, heavy-atom degree, hydrogen
// count, formal charge, ring membership), not bit for bit: a surrogate needs molecules that share substructures
// to share counts, not RDKit's bit positions. Bonds are classed so that the Kekulé structure does not matter: a
// ring bond between two atoms that each have a double ring bond is "conjugated ring", whichever of the structures
// the SMILES writes (aromatic SMILES are kekulised first), so benzene's two Kekulé forms and c1ccccc1 count alike.
package fingerprint

import (
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/nfbo/nfbo/chem/smiles"
)

// Default settings: radius 2 (ECFP4's environments, as GuacaMol's and PMO's similarity objectives use) over
// 2048 buckets.
const (
	DefaultRadius = 2
	DefaultWidth  = 2048
)

// Bond classes of an environment.
const (
	bondSingle = iota + 1
	bondDouble
	bondTriple
	bondConjugatedRing
)

// Morgan computes count fingerprints. Its zero value is not ready: use NewMorgan. It keeps scratch space, so it
// is not safe for concurrent use.
type Morgan struct {
	radius, width int

	g     smiles.Graph
	nbr   [][]edge // per atom: its neighbours and the bond class to each
	id    []uint64 // per atom: the current environment id
	next  []uint64
	ring  []bool // per bond (edges' index): in a ring
	conj  []bool // per atom: has a double ring bond
	pairs []uint64
	dfs   dfsScratch
	edges [][2]int // undirected bonds, each once
	order []smiles.BondOrder
}

// edge is one neighbour of an atom.
type edge struct {
	to, bond int // neighbour atom, index into Morgan.edges
	class    uint64
}

// NewMorgan returns a fingerprinter of the given radius (≥ 0) and width (buckets, ≥ 1).
func NewMorgan(radius, width int) *Morgan {
	if radius < 0 || width < 1 {
		panic(fmt.Sprintf("fingerprint: NewMorgan(%d, %d): radius must be ≥ 0 and width ≥ 1", radius, width))
	}
	return &Morgan{radius: radius, width: width}
}

// Width returns the number of buckets.
func (m *Morgan) Width() int { return m.width }

// Counts writes the count fingerprint of the molecule smi into dst (length Width): how many atom environments,
// of every radius from 0 up, hash to each bucket.
func (m *Morgan) Counts(dst []float64, smi string) error {
	if len(dst) != m.width {
		panic(fmt.Sprintf("fingerprint: Counts: len(dst) = %d, want %d", len(dst), m.width))
	}
	clear(dst)
	m.g.Reset()
	if err := m.g.Parse(smi); err != nil {
		return fmt.Errorf("fingerprint: %q: %w", smi, err)
	}
	// Aromatic SMILES are read in a Kekulé form, so that they count as the SELFIES decoder's Kekulé SMILES do.
	if !m.g.IsKekulized() {
		if err := m.g.Kekulize(); err != nil {
			return fmt.Errorf("fingerprint: %q: %w", smi, err)
		}
	}
	m.build()
	n := m.g.Len()
	m.id = slices.Grow(m.id[:0], n)[:n]
	m.next = slices.Grow(m.next[:0], n)[:n]
	for i := range n {
		m.id[i] = m.atomInvariant(i)
		dst[m.id[i]%uint64(m.width)]++
	}
	for r := 1; r <= m.radius; r++ {
		for i := range n {
			m.pairs = m.pairs[:0]
			for _, e := range m.nbr[i] {
				m.pairs = append(m.pairs, mix(e.class, m.id[e.to]))
			}
			slices.Sort(m.pairs)
			h := mix(uint64(r), m.id[i])
			for _, p := range m.pairs {
				h = mix(h, p)
			}
			m.next[i] = h
			dst[h%uint64(m.width)]++
		}
		m.id, m.next = m.next, m.id
	}
	return nil
}

// Features writes the count fingerprints of the molecules smis into dst (len(smis)×Width), one row each. It
// implements bo.Featurizer, and reads no token sequences.
func (m *Morgan) Features(dst []float64, smis []string, _ []int) error {
	if len(dst) != len(smis)*m.width {
		panic(fmt.Sprintf("fingerprint: Features: len(dst) = %d, want %d×%d", len(dst), len(smis), m.width))
	}
	for i, s := range smis {
		if err := m.Counts(dst[i*m.width:(i+1)*m.width], s); err != nil {
			return err
		}
	}
	return nil
}

// build collects the parsed graph's bonds once each, marks those in rings and classes them.
func (m *Morgan) build() {
	n := m.g.Len()
	m.edges, m.order = m.edges[:0], m.order[:0]
	for i := range n {
		for _, id := range m.g.Out(i) {
			if id < 0 {
				continue // a ring bond never closed: Parse has refused the SMILES already
			}
			b := m.g.BondAt(id)
			if b.Src < b.Dst { // a ring bond is stored in both directions
				m.edges = append(m.edges, [2]int{b.Src, b.Dst})
				m.order = append(m.order, b.Order)
			}
		}
	}
	if cap(m.nbr) < n {
		m.nbr = make([][]edge, n)
	}
	m.nbr = m.nbr[:n]
	for i := range m.nbr {
		m.nbr[i] = m.nbr[i][:0]
	}
	for k, e := range m.edges {
		m.nbr[e[0]] = append(m.nbr[e[0]], edge{to: e[1], bond: k})
		m.nbr[e[1]] = append(m.nbr[e[1]], edge{to: e[0], bond: k})
	}
	m.ring = m.dfs.ringBonds(m.ring, m.nbr, len(m.edges))
	// An atom is conjugated in a ring when one of its ring bonds is double.
	conj := slices.Grow(m.conj[:0], n)[:n]
	clear(conj)
	for k, e := range m.edges {
		if m.ring[k] && m.order[k] == smiles.Double {
			conj[e[0]], conj[e[1]] = true, true
		}
	}
	m.conj = conj
	for i := range m.nbr {
		for j := range m.nbr[i] {
			e := &m.nbr[i][j]
			k := e.bond
			switch {
			case m.ring[k] && conj[i] && conj[e.to]:
				e.class = bondConjugatedRing
			case m.order[k] == smiles.Double:
				e.class = bondDouble
			case m.order[k] == smiles.Triple:
				e.class = bondTriple
			default:
				e.class = bondSingle
			}
		}
	}
}

// atomInvariant hashes atom i's element, heavy-atom degree, hydrogen count, formal charge and ring membership.
func (m *Morgan) atomInvariant(i int) uint64 {
	a := &m.g.Atoms[i]
	inRing := uint64(0)
	for _, e := range m.nbr[i] {
		if m.ring[e.bond] {
			inRing = 1
			break
		}
	}
	h := a.HCount
	if h == smiles.ImplicitH {
		h = smiles.ImplicitHydrogens(a.Element, (m.g.BondCount(i)+1)/2)
	}
	v := mix(elementHash(a.Element), uint64(len(m.nbr[i])))
	v = mix(v, uint64(h))
	v = mix(v, uint64(int64(a.Charge)))
	return mix(v, inRing)
}

func elementHash(el string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(el))
	return h.Sum64()
}

// mix combines two values into a well-spread 64-bit hash (splitmix64's finaliser over a ⊕ rotated b).
func mix(a, b uint64) uint64 {
	x := a ^ (b*0x9e3779b97f4a7c15 + 0x7f4a7c159e3779b9 + a<<6 + a>>2)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// dfsScratch finds the bonds that lie on a cycle: those that are not bridges (Tarjan's low-link).
type dfsScratch struct {
	disc, low []int
	stack     []dfsFrame
}

type dfsFrame struct{ atom, parentBond, next int }

// ringBonds returns, per bond, whether it lies on a cycle of the graph nbr with nb bonds, reusing dst.
func (s *dfsScratch) ringBonds(dst []bool, nbr [][]edge, nb int) []bool {
	n := len(nbr)
	dst = slices.Grow(dst[:0], nb)[:nb]
	for k := range dst {
		dst[k] = true
	}
	s.disc = slices.Grow(s.disc[:0], n)[:n]
	s.low = slices.Grow(s.low[:0], n)[:n]
	for i := range s.disc {
		s.disc[i] = -1
	}
	t := 0
	for root := range n {
		if s.disc[root] >= 0 {
			continue
		}
		s.disc[root], s.low[root] = t, t
		t++
		s.stack = append(s.stack[:0], dfsFrame{atom: root, parentBond: -1})
		for len(s.stack) > 0 {
			f := &s.stack[len(s.stack)-1]
			if f.next < len(nbr[f.atom]) {
				e := nbr[f.atom][f.next]
				f.next++
				if e.bond == f.parentBond {
					continue
				}
				if s.disc[e.to] < 0 {
					s.disc[e.to], s.low[e.to] = t, t
					t++
					s.stack = append(s.stack, dfsFrame{atom: e.to, parentBond: e.bond})
				} else {
					s.low[f.atom] = min(s.low[f.atom], s.disc[e.to])
				}
				continue
			}
			// f is finished: pass its low-link to its parent, whose bond to it is a bridge when nothing below
			// reaches above the parent.
			done := *f
			s.stack = s.stack[:len(s.stack)-1]
			if len(s.stack) > 0 {
				p := s.stack[len(s.stack)-1].atom
				s.low[p] = min(s.low[p], s.low[done.atom])
				if s.low[done.atom] > s.disc[p] {
					dst[done.parentBond] = false
				}
			}
		}
	}
	return dst
}
