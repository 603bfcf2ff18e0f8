package smiles

import (
	"encoding/hex"
	"slices"
)

// An Identifier names molecules by their graphs rather than by how they are written: two SMILES strings of the
// same molecule get the same identity whatever the order of their atoms, whichever Kekulé structure or aromatic
// form they write, and whether their hydrogens are implicit, in brackets or atoms of their own. Stereo marks count
// as RDKit counts them: enantiomers and E/Z isomers get different identities; a mark RDKit drops (on an atom that
// cannot be a stereocentre or has two like neighbours, around a double bond marked on one side only or in a ring
// of fewer than eight atoms) is dropped.
//
// The identity is a 128-bit hash of colour refinement (Weisfeiler–Lehman, as Morgan's algorithm) on the
// kekulised graph. An atom starts from its element, isotope, charge, hydrogens, heavy-atom degree and sum of bond
// orders; a bond outside rings is labelled with its order, a ring bond is not, so that the Kekulé structures of
// one ring system, which give every atom the same bond sum, agree. A stereocentre's mark becomes the parity of
// its neighbours' colours, a stereo double bond's marks cis or trans of its highest-coloured neighbours, and
// refinement runs again (placeStereo). Where that cannot place a mark (marks on a ring closure or around a double
// bond in a ring of eight or more atoms, two ring atoms with two like neighbours each in one ring system, where
// cis and trans differ), the identity is the SMILES string itself: such a molecule is then only found written the
// same way, never taken for another one.
//
// Colour refinement cannot tell apart every pair of graphs (regular cages, and conjugated ring systems outside
// aromaticity whose Kekulé structures RDKit keeps apart); such molecules may share an identity. Measured against
// RDKit's canonical SMILES in chem/molseq's tests: over 70,000 keys of 24,834 molecules, no two molecules share
// an identity and none has two.
//
// The zero value is ready to use. An Identifier keeps scratch between calls, so it is not safe for concurrent use.
type Identifier struct {
	g       Graph
	edges   []idEdge
	adj     [][]int32 // per atom, indices into edges
	parent  []int     // per atom, the atom its chain bond comes from, or -1
	hAtom   []bool    // per atom, a hydrogen written as an atom ([H]) bonded to another one
	col     []uint64
	nxt     []uint64
	buf     []uint64
	centres []int // stereocentres and stereo double bonds (indices into edges) not yet placed
	bonds   []int
	done    []placed // the marks a round placed
	disc    []int    // bridge search
	low     []int
	nb      []int
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
	id.col = resizeU64(id.col, g.Len())
	for v := range id.col {
		id.col[v] = id.atomHash(v)
	}
	id.refine()
	if !id.placeStereo() {
		return s, nil
	}
	sorted := id.buf[:0]
	for v, c := range id.col {
		if !id.hAtom[v] {
			sorted = append(sorted, c)
		}
	}
	slices.Sort(sorted)
	id.buf = sorted
	heavyBonds := 0
	for _, e := range id.edges {
		if !id.hAtom[e.a] && !id.hAtom[e.b] {
			heavyBonds++
		}
	}
	h1, h2 := uint64(0x243f6a8885a308d3), uint64(0x13198a2e03707344)
	h1, h2 = mix(h1, uint64(len(sorted))), mix(h2, uint64(heavyBonds))
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
	id.parent = resizeInts(id.parent, n)
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
	id.hAtom = resizeBool(id.hAtom, n)
	for v := range n {
		a := &g.Atoms[v]
		id.hAtom[v] = false
		if a.Element == "H" && a.Isotope == "" && a.Charge == 0 && a.HCount <= 0 && len(id.adj[v]) == 1 {
			e := id.edges[id.adj[v][0]]
			id.hAtom[v] = g.Atoms[e.a+e.b-v].Element != "H"
		}
	}
}

// hydrogens returns the hydrogens of atom v written as atoms of their own ([H], hAtom).
func (id *Identifier) hydrogens(v int) int {
	n := 0
	for _, k := range id.adj[v] {
		if e := id.edges[k]; id.hAtom[e.a+e.b-v] {
			n++
		}
	}
	return n
}

// markRings sets idEdge.ring on every bond that is not a bridge (Tarjan's lowpoints, one depth-first walk per
// fragment).
func (id *Identifier) markRings() {
	n := id.g.Len()
	id.disc, id.low = resizeInts(id.disc, n), resizeInts(id.low, n)
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

// atomHash is an atom's starting colour; 0 for a hydrogen written as an atom (hAtom), which is not refined.
func (id *Identifier) atomHash(v int) uint64 {
	if id.hAtom[v] {
		return 0
	}
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
		hs = ImplicitHydrogens(a.Element, sum)
	}
	nh := id.hydrogens(v) // as RDKit, hydrogens written as atoms count as the atom's hydrogens
	h = mix(h, uint64(int64(a.Charge)))
	h = mix(h, uint64(hs+nh))
	h = mix(h, uint64(len(id.adj[v])-nh))
	return mix(h, uint64(sum-nh))
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
			if id.hAtom[v] {
				id.nxt[v] = 0
				continue
			}
			nb := id.buf[:0]
			for _, k := range id.adj[v] {
				e := id.edges[k]
				if u := e.a + e.b - v; !id.hAtom[u] {
					nb = append(nb, mix(bondLabel(e), id.col[u]))
				}
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

// placeStereo folds the graph's stereo marks into the colours, and reports false when a mark cannot be placed.
// Marks RDKit ignores are ignored: on an atom that cannot be a stereocentre (fewer than four neighbours and
// hydrogens, or three without a hydrogen other than S, Se, P or As; two hydrogens), and / or \ around a double
// bond without a mark on both sides, in a ring of fewer than eight atoms, or beside an atom of more than two other
// neighbours. The others are placed in rounds: a centre whose neighbours, or a double bond whose sides'
// neighbours, have distinct colours is placed, its handedness mixed into its colour and the colours refined
// again, which may tell apart the neighbours of another (a pseudo-asymmetric centre between two placed ones). A
// mark still unplaced when no round places more is ignored, as RDKit drops it from an atom with two like
// neighbours, unless RDKit keeps it as cis or trans across a ring (ringStereo).
func (id *Identifier) placeStereo() bool {
	g := &id.g
	centres, bonds := id.centres[:0], id.bonds[:0]
	defer func() { id.centres, id.bonds = centres[:0], bonds[:0] }()
	for v := range g.Len() {
		if g.Atoms[v].Chirality == "" {
			continue
		}
		switch id.centreKind(v) {
		case markUnplaceable:
			return false
		case markCounts:
			centres = append(centres, v)
		}
	}
	for k, e := range id.edges {
		if e.order != Double || e.ring && id.ringSize(k) < minRingForDoubleBondStereo {
			continue
		}
		ka, kb := id.sideKind(e.a, e.b), id.sideKind(e.b, e.a)
		switch {
		case ka == markUnplaceable || kb == markUnplaceable:
			return false
		case ka == markIgnored || kb == markIgnored:
		case e.ring:
			return false // RDKit keeps cis and trans in rings of eight or more atoms: not placed here
		default:
			bonds = append(bonds, k)
		}
	}
	for len(centres)+len(bonds) > 0 {
		// A round's marks are all read from the colours as the round found them, then mixed in.
		done := id.done[:0]
		left := centres[:0]
		for _, v := range centres {
			if bit, ok := id.centre(v); ok {
				done = append(done, placed{v, -1, 0x1d + bit})
			} else {
				left = append(left, v)
			}
		}
		centres = left
		left = bonds[:0]
		for _, k := range bonds {
			e := id.edges[k]
			if bit, ok := id.doubleBond(e); ok {
				done = append(done, placed{e.a, e.b, 0x3b + bit})
			} else {
				left = append(left, k)
			}
		}
		bonds = left
		id.done = done
		if len(done) == 0 {
			break
		}
		for _, p := range done {
			id.col[p.a] = mix(id.col[p.a], p.h)
			if p.b >= 0 {
				id.col[p.b] = mix(id.col[p.b], p.h)
			}
		}
		id.refine()
	}
	for _, v := range centres {
		if id.ringStereo(v, centres) {
			return false
		}
	}
	for _, k := range bonds {
		if e := id.edges[k]; id.inRing(e.a) || id.inRing(e.b) {
			return false
		}
	}
	return true
}

// placed is a stereo mark placed in a round: the hash h of its handedness, for atom a and, for a double bond,
// atom b (else -1).
type placed struct {
	a, b int
	h    uint64
}

// What a stereo mark does to a molecule, as RDKit reads it.
const (
	markIgnored     = iota // RDKit drops it: not a stereo element
	markCounts             // a stereo element
	markUnplaceable        // one this package cannot place: the identity falls back to the SMILES
)

// centreKind returns what the tetrahedral mark on atom v does.
func (id *Identifier) centreKind(v int) int {
	a := &id.g.Atoms[v]
	nh := id.hydrogens(v)
	deg, hs := len(id.adj[v])-nh, max(a.HCount, 0)+nh
	switch {
	case deg+hs > 4:
		return markUnplaceable
	case hs > 1 || deg+hs < 3:
		return markIgnored
	case deg+hs == 4:
		return markCounts
	case hs == 1:
		return markIgnored // three neighbours, one of them a hydrogen: sp2 or a radical
	}
	switch a.Element {
	case "S", "Se", "P", "As":
		return markCounts // a lone pair is the fourth neighbour
	case "N":
		if id.inRing(v) {
			return markUnplaceable // a bridgehead nitrogen may keep its mark
		}
	}
	return markIgnored
}

// ringStereo reports whether RDKit keeps the mark of the unplaced centre v, one of the unplaced centres left, as
// ring stereochemistry (cis or trans across a ring): when v and another of left are both candidates
// (ringCandidate) in one ring system. Otherwise RDKit drops the mark, as from C[C@H]1CCC(C)CC1.
func (id *Identifier) ringStereo(v int, left []int) bool {
	if !id.inRing(v) || !id.ringCandidate(v) {
		return false
	}
	for _, u := range left {
		if u != v && id.ringCandidate(u) && id.ringSystem(v, u) {
			return true
		}
	}
	return false
}

// ringCandidate reports whether the ring atom v's heavy neighbours could make it a centre of ring
// stereochemistry, by RDKit's rules with colours for CIP ranks: two neighbours outside rings of different
// colours; one outside rings and at least two in rings; or none outside rings and three in rings of two colours
// or four of three.
func (id *Identifier) ringCandidate(v int) bool {
	var ring, chain [4]uint64
	nr, nc := 0, 0
	for _, k := range id.adj[v] {
		e := id.edges[k]
		u := e.a + e.b - v
		switch {
		case id.hAtom[u]:
		case e.ring && nr < len(ring):
			ring[nr], nr = id.col[u], nr+1
		case !e.ring && nc < len(chain):
			chain[nc], nc = id.col[u], nc+1
		}
	}
	switch nc {
	case 2:
		return chain[0] != chain[1]
	case 1:
		return nr >= 2
	case 0:
		r := ring[:nr]
		slices.Sort(r)
		distinct := len(slices.Compact(r))
		return nr == 4 && distinct == 3 || nr == 3 && distinct == 2
	}
	return false
}

// ringSystem reports whether atoms v and u are joined by a path of ring bonds.
func (id *Identifier) ringSystem(v, u int) bool {
	seen := resizeInts(id.disc, id.g.Len())
	id.disc = seen
	for i := range seen {
		seen[i] = 0
	}
	queue := append(id.nb[:0], v)
	seen[v] = 1
	for len(queue) > 0 {
		w := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if w == u {
			id.nb = queue
			return true
		}
		for _, k := range id.adj[w] {
			if e := id.edges[k]; e.ring {
				if x := e.a + e.b - w; seen[x] == 0 {
					seen[x] = 1
					queue = append(queue, x)
				}
			}
		}
	}
	id.nb = queue
	return false
}

// minRingForDoubleBondStereo is the smallest ring in which RDKit reads cis and trans of a double bond: in a
// smaller one the bond's marks are ignored.
const minRingForDoubleBondStereo = 8

// ringSize returns the number of atoms in the smallest ring through the ring bond edges[k]: one more than the
// shortest path between its atoms that does not take it.
func (id *Identifier) ringSize(k int) int {
	e := id.edges[k]
	dist := resizeInts(id.disc, id.g.Len())
	id.disc = dist
	for i := range dist {
		dist[i] = -1
	}
	queue := append(id.nb[:0], e.a)
	dist[e.a] = 0
	for head := 0; head < len(queue); head++ {
		w := queue[head]
		for _, j := range id.adj[w] {
			if int(j) == k {
				continue
			}
			f := id.edges[j]
			x := f.a + f.b - w
			if dist[x] >= 0 {
				continue
			}
			dist[x] = dist[w] + 1
			if x == e.b {
				id.nb = queue
				return dist[x] + 1
			}
			queue = append(queue, x)
		}
	}
	id.nb = queue
	return 0 // not a ring bond
}

// inRing reports whether atom v has a ring bond.
func (id *Identifier) inRing(v int) bool {
	for _, k := range id.adj[v] {
		if id.edges[k].ring {
			return true
		}
	}
	return false
}

// centre returns the stereocentre v's handedness with its neighbours ordered by colour: its @ or @@ flipped by
// the parity of the permutation that sorts its neighbours, in SMILES order, by colour. An implicit hydrogen
// takes the place after the atom the centre is reached from (first if none), a lone pair the last place, and
// either sorts first. ok is false when two neighbours have one colour.
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
	if len(nb) == 3 {
		nb = append(nb, implicit) // a lone pair: last, as RDKit reads a sulfoxide's [S@]
	}
	id.nb = nb
	var c [4]uint64
	for i, u := range nb {
		if u != implicit && !id.hAtom[u] {
			c[i] = id.col[u] | 1 // never 0, a hydrogen's
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

// mark returns the position of a's neighbour u (across the bond u–a, not the double bond) that the bond's mark
// gives: up, down or 0 for none; ok is false for a mark on a ring closure, which this package does not read.
func (id *Identifier) mark(a, u int) (pos int, ok bool) {
	g := &id.g
	bd := g.DirBond(min(a, u), max(a, u))
	if bd != nil && !bd.Ring {
		switch {
		case bd.Stereo == 0:
			return 0, true
		case (bd.Src == a) == (bd.Stereo == '/'):
			return up, true
		default:
			return down, true
		}
	}
	if ab, ua := g.DirBond(a, u), g.DirBond(u, a); (ab != nil && ab.Stereo != 0) || (ua != nil && ua.Stereo != 0) {
		return 0, false
	}
	return 0, true
}

// sideKind returns what the marks around atom a of the double bond a=b do: ignored without a mark or with more
// than two other neighbours (S(=O)(=O): the marks are another bond's); unplaceable for a mark on a ring closure or
// two neighbours marked alike.
func (id *Identifier) sideKind(a, b int) int {
	n, marks, first := 0, 0, 0
	for _, k := range id.adj[a] {
		e := id.edges[k]
		u := e.a + e.b - a
		if u == b {
			continue
		}
		n++
		p, ok := id.mark(a, u)
		switch {
		case !ok:
			return markUnplaceable
		case p == 0:
		case marks > 0 && p == first:
			return markUnplaceable
		default:
			marks, first = marks+1, p
		}
	}
	if marks == 0 || n > 2 {
		return markIgnored
	}
	return markCounts
}

// doubleBond returns whether the double bond e, marked on both sides, is cis (bit 1) or trans (0) by its atoms'
// highest-coloured neighbours; ok is false when a side's two neighbours have one colour.
func (id *Identifier) doubleBond(e idEdge) (bit uint64, ok bool) {
	pa, oka := id.side(e.a, e.b)
	pb, okb := id.side(e.b, e.a)
	if !oka || !okb {
		return 0, false
	}
	if pa == pb {
		return 1, true
	}
	return 0, true
}

// side returns the position of the highest-coloured neighbour of a other than b, across the double bond, as the
// marks on a's other bonds give it (sideKind markCounts); ok is false when a's two other neighbours have one
// colour.
func (id *Identifier) side(a, b int) (pos int, ok bool) {
	best, bestPos, other, otherPos := -1, 0, -1, 0
	for _, k := range id.adj[a] {
		e := id.edges[k]
		u := e.a + e.b - a
		if u == b {
			continue
		}
		p, _ := id.mark(a, u)
		if best < 0 {
			best, bestPos = u, p
		} else {
			other, otherPos = u, p
		}
	}
	if other >= 0 {
		switch {
		case id.col[best] == id.col[other]:
			return 0, false
		case id.col[other] > id.col[best]:
			bestPos, otherPos = otherPos, bestPos
		}
		if bestPos == 0 {
			bestPos = -otherPos
		}
	}
	return bestPos, true
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

func resizeBool(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
