package smiles

import (
	"encoding/hex"
	"slices"
)

// An Identifier names molecules by their graphs rather than by how they are written: two SMILES strings of the
// same molecule get the same identity whatever the order of their atoms, whichever Kekulé structure or aromatic
// form they write, and whether their hydrogens are implicit or in brackets. Stereo marks count: enantiomers and
// E/Z isomers get different identities.
//
// The identity is a 128-bit hash of colour refinement (Weisfeiler–Lehman, as Morgan's algorithm) on the
// kekulised graph. An atom starts from its element, isotope, charge, hydrogens, heavy-atom degree and sum of bond
// orders; a bond outside rings is labelled with its order, a ring bond is not, so that the Kekulé structures of
// one ring system, which give every atom the same bond sum, agree. A stereocentre's mark becomes the parity of
// its neighbours' colours, a stereo double bond's marks cis or trans of its highest-coloured neighbours, and
// refinement runs again. Where that is not enough to place a mark (two neighbours of a stereocentre alike, marks
// on a ring closure or around a double bond in a ring, a centre without four neighbours), the identity is the
// SMILES string itself: such a molecule is then only found written the same way, never taken for another one.
//
// Colour refinement cannot tell apart every pair of graphs (regular cages, and conjugated ring systems outside
// aromaticity whose Kekulé structures RDKit keeps apart); such molecules may share an identity. Measured against
// RDKit's canonical SMILES in chem/molseq's tests.
//
// The zero value is ready to use. An Identifier keeps scratch between calls, so it is not safe for concurrent use.
type Identifier struct {
	g      Graph
	edges  []idEdge
	adj    [][]int32 // per atom, indices into edges
	parent []int     // per atom, the atom its chain bond comes from, or -1
	col    []uint64
	nxt    []uint64
	buf    []uint64
	stereo []uint64 // per atom, its stereo mark's hash, 0 for none
	disc   []int    // bridge search
	low    []int
	nb     []int
}

// idEdge is an undirected bond: its atoms, order and whether it lies in a ring.
type idEdge struct {
	a, b  int
	order BondOrder
	ring  bool
}

// identityPrefix starts every hashed identity; no SMILES starts with it, so a hashed identity never equals a
// SMILES returned as its own identity.
const identityPrefix = "#"

// Identity returns the identity of the molecule that s writes: identityPrefix and 32 hex digits, or s itself
// when a stereo mark cannot be placed (see Identifier). The error is the parser's or the kekuliser's.
func (id *Identifier) Identity(s string) (string, error) {
	g := &id.g
	g.Reset()
	if err := g.Parse(s); err != nil {
		return "", err
	}
	if !g.IsKekulized() {
		if err := g.Kekulize(); err != nil {
			return "", err
		}
	}
	id.read()
	id.markRings()
	n := g.Len()
	id.col = resizeU64(id.col, n)
	for v := range n {
		id.col[v] = id.atomHash(v)
	}
	id.refine()
	placed, some := id.placeStereo()
	if !placed {
		return s, nil
	}
	if some {
		for v := range n {
			if id.stereo[v] != 0 {
				id.col[v] = mix(id.col[v], id.stereo[v])
			}
		}
		id.refine()
	}
	sorted := append(id.buf[:0], id.col...)
	slices.Sort(sorted)
	id.buf = sorted
	h1, h2 := uint64(0x243f6a8885a308d3), uint64(0x13198a2e03707344)
	h1, h2 = mix(h1, uint64(n)), mix(h2, uint64(len(id.edges)))
	for _, c := range sorted {
		h1, h2 = mix(h1, c), mix(h2, c^0xa4093822299f31d0)
	}
	var out [len(identityPrefix) + 32]byte
	copy(out[:], identityPrefix)
	var raw [16]byte
	for i := range 8 {
		raw[i], raw[8+i] = byte(h1>>(56-8*i)), byte(h2>>(56-8*i))
	}
	hex.Encode(out[len(identityPrefix):], raw[:])
	return string(out[:]), nil
}

// read collects the parsed graph's undirected bonds, each atom's bonds and each atom's chain parent.
func (id *Identifier) read() {
	g := &id.g
	n := g.Len()
	id.edges = id.edges[:0]
	id.parent = resizeInt(id.parent, n)
	for v := range n {
		id.parent[v] = -1
	}
	for src := range n {
		for _, b := range g.Out(src) {
			if b < 0 {
				continue
			}
			bd := g.BondAt(b)
			if !bd.Ring {
				id.parent[bd.Dst] = src
			}
			if bd.Ring && bd.Src > bd.Dst {
				continue // stored from both ends: keep one
			}
			id.edges = append(id.edges, idEdge{a: bd.Src, b: bd.Dst, order: bd.Order})
		}
	}
	if cap(id.adj) < n {
		id.adj = append(id.adj[:cap(id.adj)], make([][]int32, n-cap(id.adj))...)
	}
	id.adj = id.adj[:n]
	for v := range n {
		id.adj[v] = id.adj[v][:0]
	}
	for k, e := range id.edges {
		id.adj[e.a] = append(id.adj[e.a], int32(k))
		id.adj[e.b] = append(id.adj[e.b], int32(k))
	}
}

// markRings sets idEdge.ring on every bond that is not a bridge (Tarjan's lowpoints, one depth-first walk per
// fragment).
func (id *Identifier) markRings() {
	n := id.g.Len()
	id.disc, id.low = resizeInt(id.disc, n), resizeInt(id.low, n)
	for v := range n {
		id.disc[v] = -1
	}
	for k := range id.edges {
		id.edges[k].ring = true
	}
	t := 0
	var walk func(v, via int)
	walk = func(v, via int) {
		id.disc[v], id.low[v] = t, t
		t++
		for _, k := range id.adj[v] {
			if int(k) == via {
				continue
			}
			e := id.edges[k]
			u := e.a + e.b - v
			if id.disc[u] < 0 {
				walk(u, int(k))
				id.low[v] = min(id.low[v], id.low[u])
				if id.low[u] > id.disc[v] {
					id.edges[k].ring = false
				}
			} else {
				id.low[v] = min(id.low[v], id.disc[u])
			}
		}
	}
	for v := range n {
		if id.disc[v] < 0 {
			walk(v, -1)
		}
	}
}

// atomHash is an atom's starting colour.
func (id *Identifier) atomHash(v int) uint64 {
	a := &id.g.Atoms[v]
	h := uint64(0x452821e638d01377)
	for i := range len(a.Element) {
		h = mix(h, uint64(a.Element[i]))
	}
	h = mix(h, 0xff)
	for i := range len(a.Isotope) {
		h = mix(h, uint64(a.Isotope[i]))
	}
	sum := id.g.BondCount(v) / int(Single)
	hs := a.HCount
	if hs == ImplicitH {
		hs = implicitH(a.Element, sum)
	}
	h = mix(h, uint64(int64(a.Charge)))
	h = mix(h, uint64(hs))
	h = mix(h, uint64(len(id.adj[v])))
	return mix(h, uint64(sum))
}

// implicitH returns the hydrogens of an atom of the organic subset written without brackets, whose bonds sum to
// sum: the lowest of its normal valences that holds them, less the sum (OpenSMILES).
func implicitH(element string, sum int) int {
	var vals []int
	switch element {
	case "B":
		vals = []int{3}
	case "C":
		vals = []int{4}
	case "N", "P":
		vals = []int{3, 5}
	case "O":
		vals = []int{2}
	case "S":
		vals = []int{2, 4, 6}
	case "F", "Cl", "Br", "I":
		vals = []int{1}
	}
	for _, v := range vals {
		if v >= sum {
			return v - sum
		}
	}
	return 0
}

// bondLabel is what refinement sees of a bond: its order outside rings, nothing inside.
func bondLabel(e idEdge) uint64 {
	if e.ring {
		return 0
	}
	return uint64(e.order)
}

// refine runs colour refinement from id.col until the partition of the atoms stops splitting; id.col then holds
// the last round's colours.
func (id *Identifier) refine() {
	n := len(id.col)
	classes := id.classes(id.col)
	id.nxt = resizeU64(id.nxt, n)
	for range n {
		for v := range n {
			nb := id.buf[:0]
			for _, k := range id.adj[v] {
				e := id.edges[k]
				nb = append(nb, mix(bondLabel(e), id.col[e.a+e.b-v]))
			}
			slices.Sort(nb)
			h := mix(id.col[v], uint64(len(nb)))
			for _, x := range nb {
				h = mix(h, x)
			}
			id.nxt[v] = h
			id.buf = nb
		}
		c := id.classes(id.nxt)
		id.col, id.nxt = id.nxt, id.col
		if c == classes {
			return
		}
		classes = c
	}
}

// classes returns the number of distinct colours.
func (id *Identifier) classes(col []uint64) int {
	s := append(id.buf[:0], col...)
	slices.Sort(s)
	id.buf = s
	return len(slices.Compact(s))
}

// placeStereo sets id.stereo from the graph's stereo marks and the refined colours. placed is false when a mark
// cannot be placed; some reports whether some atom has a placed mark.
func (id *Identifier) placeStereo() (placed, some bool) {
	g := &id.g
	n := g.Len()
	id.stereo = resizeU64(id.stereo, n)
	clear(id.stereo)
	for v := range n {
		a := &g.Atoms[v]
		if a.Chirality == "" {
			continue
		}
		bit, ok := id.centre(v)
		if !ok {
			return false, false
		}
		id.stereo[v] = mix(0x1d, bit)
		some = true
	}
	for _, e := range id.edges {
		if e.order != Double {
			continue
		}
		bit, marked, ok := id.doubleBond(e)
		if !ok {
			return false, false
		}
		if marked {
			id.stereo[e.a] = mix(id.stereo[e.a]+0x3b, bit)
			id.stereo[e.b] = mix(id.stereo[e.b]+0x3b, bit)
			some = true
		}
	}
	return true, some
}

// centre returns the stereocentre v's handedness with its neighbours ordered by colour: its @ or @@ flipped by
// the parity of the permutation that sorts its neighbours, in SMILES order, by colour. An implicit hydrogen
// takes the place after the atom the centre is reached from (first if none), a lone pair the last place, and
// either sorts first. ok is false unless the
// centre has four neighbours of distinct colours.
func (id *Identifier) centre(v int) (bit uint64, ok bool) {
	g := &id.g
	a := &g.Atoms[v]
	const implicit = -1
	nb := id.nb[:0]
	if p := id.parent[v]; p >= 0 {
		nb = append(nb, p)
	}
	if a.HCount == 1 {
		nb = append(nb, implicit)
	}
	for _, b := range g.Out(v) {
		if b >= 0 {
			nb = append(nb, g.BondAt(b).Dst)
		}
	}
	if a.HCount <= 0 && len(nb) == 3 {
		nb = append(nb, implicit) // a lone pair: last, as RDKit reads a sulfoxide's [S@]
	}
	id.nb = nb
	if len(nb) != 4 {
		return 0, false
	}
	var c [4]uint64
	for i, u := range nb {
		if u != implicit {
			c[i] = id.col[u] | 1 // never 0, the implicit neighbour's
		}
	}
	odd := false
	for i := range 4 {
		for j := i + 1; j < 4; j++ {
			switch {
			case c[i] == c[j]:
				return 0, false
			case c[i] > c[j]:
				odd = !odd
			}
		}
	}
	if (a.Chirality == "@@") != odd {
		return 1, true
	}
	return 0, true
}

// Positions of a neighbour of a double bond's atom, as the bond marks / and \ place it.
const (
	up   = 1
	down = -1
)

// doubleBond returns whether the double bond e is cis (bit 1) or trans (0) by its atoms' highest-coloured
// neighbours. marked is false when e is not a stereo bond (a side without marks or without a neighbour); ok is
// false when its marks cannot be placed: marks on a ring closure, around a ring bond, contradicting each other, or
// on a side whose two neighbours are alike.
func (id *Identifier) doubleBond(e idEdge) (bit uint64, marked, ok bool) {
	pa, ma, oka := id.side(e.a, e.b)
	pb, mb, okb := id.side(e.b, e.a)
	if !oka || !okb {
		return 0, false, false
	}
	if !ma || !mb {
		return 0, false, true
	}
	if e.ring {
		return 0, false, false
	}
	if pa == pb {
		return 1, true, true
	}
	return 0, true, true
}

// side returns the position of the highest-coloured neighbour of a (other than b, across the double bond) as the
// marks on a's other bonds give it. marked is false without marks; ok as for doubleBond.
func (id *Identifier) side(a, b int) (pos int, marked, ok bool) {
	g := &id.g
	best, bestPos, other, otherPos := -1, 0, -1, 0
	for _, k := range id.adj[a] {
		e := id.edges[k]
		u := e.a + e.b - a
		if u == b {
			continue
		}
		p := 0
		if bd := g.DirBond(min(a, u), max(a, u)); bd != nil && !bd.Ring {
			switch {
			case bd.Stereo == 0:
			case (bd.Src == a) == (bd.Stereo == '/'):
				p = up
			default:
				p = down
			}
		} else if ab, ua := g.DirBond(a, u), g.DirBond(u, a); (ab != nil && ab.Stereo != 0) || (ua != nil && ua.Stereo != 0) {
			return 0, false, false
		}
		switch {
		case best < 0:
			best, bestPos = u, p
		case other < 0:
			other, otherPos = u, p
		default:
			return 0, false, true // three neighbours (S(=O)(=O)): not a stereo bond; marks there are another bond's
		}
	}
	if best < 0 || (bestPos == 0 && otherPos == 0) {
		return 0, false, true
	}
	if other >= 0 {
		switch {
		case bestPos != 0 && bestPos == otherPos:
			return 0, false, false
		case id.col[best] == id.col[other]:
			return 0, false, false
		case id.col[other] > id.col[best]:
			bestPos, otherPos = otherPos, bestPos
		}
		if bestPos == 0 {
			bestPos = -otherPos
		}
	}
	return bestPos, true, true
}

// mix folds x into the hash h (a splitmix64 finaliser over h and x).
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func resizeU64(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

func resizeInt(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}
