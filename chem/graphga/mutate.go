package graphga

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/nfbo/nfbo/chem/smiles"
)

// ErrNoMutation is Mutate's error when none of its tries gave a valid molecule.
var ErrNoMutation = errors.New("graphga: no mutation of the molecule gave a valid one")

// Mutator changes one molecule by one of the graph GA's seven edits, drawn with its probabilities: insert an atom
// into a bond (0.15), change a bond's order (0.14), delete a ring bond (0.14), close a ring of 3-6 atoms
// (0.14), delete an atom and join its neighbours (0.14), change an atom's element (0.14), append an atom (0.15).
// An edit is tried at every place it applies, in random order, until one gives a valid molecule: every atom
// within its allowed valences (hydrogens fill the rest), no ring of more than six atoms, no double bond between
// atoms of three- and four-membered rings, no ring atom with two double bonds to ring atoms (the graph GA's
// ring_OK); ten edits are drawn before Mutate gives up. Only uncharged atoms of B, C, N, O, P, S and the
// halogens whose hydrogens are their default ones are edited: a charged atom, a radical or another element keeps
// its bonds.
//
// A Mutator keeps its scratch between calls and is not safe for concurrent use. The zero value is ready.
type Mutator struct {
	// Size, if set, keeps a mutant only when its size passes the rule (the graph GA's mutation); nil keeps every
	// mutant, of any size.
	Size *SizeRule
	// Fuse lets the ring-closing edit also close a ring fused to one the molecule has: a chain of atoms in no
	// ring, hanging from a ring atom, bonded to that atom's ring neighbour (an ortho substituent cyclised: a
	// chromane from a phenol ether, a tetralin from a propylbenzene). The graph GA closes rings only between
	// atoms in no ring, so a fused ring system it does not start with only a crossover can bring. Without Fuse
	// the edits, and their draws from the random stream, are the graph GA's.
	Fuse bool

	g    smiles.Graph
	base mol
	kid  mol
	edit []bool // per base atom: may gain or lose bonds or change element
	h    []int  // per base atom: its hydrogens (0 for an atom that is not edited)
	ring []bool // per base edge: in a ring
	// per base atom: in a ring
	ringAtom []bool
	moves    []move
	idx      []int // base atom to child atom, −1 for one deleted
	nOld     int   // the child's atoms from the base; a new one follows
	w        writer
	// scratch of ringsOK
	dist, queue, small []int
	path               []int
	on                 []bool
}

// op is an edit's kind.
type op uint8

const (
	opInsert     op = iota // remove bond e, bond atom a to a new atom x (single) and x to b (order)
	opBondOrder            // set bond e's order
	opDeleteBond           // remove bond e
	opCloseRing            // bond a to b (single)
	opDeleteAtom           // remove atom a and bond chain[0:n] in a row (single bonds)
	opElement              // change atom a's element to elem
	opAppend               // bond a new atom of elem to a (order)
)

// move is one edit at one place.
type move struct {
	op    op
	e     int // a base edge
	a, b  int // base atoms
	chain [4]int
	n     int // atoms in chain
	elem  string
	order smiles.BondOrder
	first smiles.BondOrder // opInsert: the order of a's bond to the new atom
}

// Mutate returns a mutant of the molecule s, or ErrNoMutation when ten edits gave no valid molecule, or the
// SMILES error of a molecule it cannot read.
func (u *Mutator) Mutate(s string, rng *rand.Rand) (string, error) {
	if err := parseInto(&u.base, &u.g, s); err != nil {
		return "", fmt.Errorf("graphga: mutate %q: %w", s, err)
	}
	u.prepare()
	for range 10 {
		u.moves = u.moves[:0]
		switch pick(rng, 0.15, 0.14, 0.14, 0.14, 0.14, 0.14, 0.15) {
		case 0:
			u.insertMoves(rng)
		case 1:
			u.bondMoves(rng)
		case 2:
			for k := range u.base.edges {
				if u.ring[k] {
					u.moves = append(u.moves, move{op: opDeleteBond, e: k})
				}
			}
		case 3:
			size := 2 + pick(rng, 0.05, 0.05, 0.45, 0.45) + 1
			u.ringMoves(size)
			if u.Fuse {
				u.fusedRingMoves(size)
			}
		case 4:
			u.deleteMoves(1 + pick(rng, 0.25, 0.25, 0.25, 0.1875))
		case 5:
			u.elementMoves(rng)
		case 6:
			u.appendMoves(rng)
		}
		for len(u.moves) > 0 {
			i := rng.IntN(len(u.moves))
			mv := u.moves[i]
			u.moves[i] = u.moves[len(u.moves)-1]
			u.moves = u.moves[:len(u.moves)-1]
			if u.apply(mv) && u.valid() && u.ringsOK() && (u.Size == nil || u.Size.ok(&u.kid, rng)) {
				return u.w.write(&u.kid), nil
			}
		}
	}
	return "", ErrNoMutation
}

// prepare finds the base molecule's editable atoms, their hydrogens and its ring bonds and atoms.
func (u *Mutator) prepare() {
	b := &u.base
	n := len(b.atoms)
	u.edit = resizeBool(u.edit, n)
	u.h = resizeFill(u.h, n, 0)
	u.ringAtom = resizeBool(u.ringAtom, n)
	for v := range b.atoms {
		a := &b.atoms[v]
		if a.Charge != 0 || a.Isotope != "" {
			continue
		}
		h := implicitH(a.Element, b.bondSum(v))
		if h < 0 || (a.HCount != smiles.ImplicitH && a.HCount != h) {
			continue
		}
		u.edit[v], u.h[v] = true, h
	}
	u.ring = append(u.ring[:0], bridges(b)...)
	for k, e := range b.edges {
		u.ring[k] = !u.ring[k]
		if u.ring[k] {
			u.ringAtom[e.a], u.ringAtom[e.b] = true, true
		}
	}
}

// insertMoves lists the insertions of a new C, N or O atom into a bond: a−X−b, or a=X−b where a has a hydrogen.
func (u *Mutator) insertMoves(rng *rand.Rand) {
	elem := [3]string{"C", "N", "O"}[pick(rng, 0.5, 0.25, 0.25)]
	double := rng.IntN(2) == 1
	for k, e := range u.base.edges {
		if !double {
			u.moves = append(u.moves, move{op: opInsert, e: k, a: e.a, b: e.b, elem: elem, first: smiles.Single, order: smiles.Single})
			continue
		}
		for _, ab := range [2][2]int{{e.a, e.b}, {e.b, e.a}} {
			if u.h[ab[0]] > 0 {
				u.moves = append(u.moves, move{op: opInsert, e: k, a: ab[0], b: ab[1], elem: elem, first: smiles.Double, order: smiles.Single})
			}
		}
	}
}

// bondMoves lists one of four bond-order changes: a double or triple bond made single (0.45), a single bond
// between atoms with hydrogens made double (0.45), a triple bond made double (0.05), a bond of an atom in no ring
// with two hydrogens made triple (0.05).
func (u *Mutator) bondMoves(rng *rand.Rand) {
	b := &u.base
	switch pick(rng, 0.45, 0.45, 0.05, 0.05) {
	case 0:
		for k, e := range b.edges {
			if e.order != smiles.Single {
				u.moves = append(u.moves, move{op: opBondOrder, e: k, order: smiles.Single})
			}
		}
	case 1:
		for k, e := range b.edges {
			if e.order == smiles.Single && u.h[e.a] > 0 && u.h[e.b] > 0 {
				u.moves = append(u.moves, move{op: opBondOrder, e: k, order: smiles.Double})
			}
		}
	case 2:
		for k, e := range b.edges {
			if e.order == smiles.Triple {
				u.moves = append(u.moves, move{op: opBondOrder, e: k, order: smiles.Double})
			}
		}
	case 3:
		for k, e := range b.edges {
			if (!u.ringAtom[e.a] && u.h[e.a] >= 2) || (!u.ringAtom[e.b] && u.h[e.b] >= 2) {
				u.moves = append(u.moves, move{op: opBondOrder, e: k, order: smiles.Triple})
			}
		}
	}
}

// ringMoves lists the rings of size atoms that a bond can close: paths of atoms in no ring whose ends have
// hydrogens.
func (u *Mutator) ringMoves(size int) {
	b := &u.base
	u.on = resizeBool(u.on, len(b.atoms))
	u.path = u.path[:0]
	for v := range b.atoms {
		if !u.ringAtom[v] && u.h[v] > 0 {
			u.closeRings(v, size, false)
		}
	}
}

// fusedRingMoves lists the rings of size atoms that a bond can close onto a ring bond b–a: b a ring atom with a
// hydrogen, a its neighbour in a ring, and a path of size−2 atoms in no ring from a whose last atom has a
// hydrogen and is bonded to b. The path from a is unique (atoms in no ring hang from a in a tree), so each ring
// is listed once.
func (u *Mutator) fusedRingMoves(size int) {
	b := &u.base
	u.on = resizeBool(u.on, len(b.atoms))
	for v := range b.atoms {
		if !u.ringAtom[v] || u.h[v] == 0 {
			continue
		}
		u.path = append(u.path[:0], v)
		u.on[v] = true
		for _, k := range b.adj[v] {
			if u.ring[k] {
				u.closeRings(b.edges[k].a+b.edges[k].b-v, size, true)
			}
		}
		u.on[v] = false
		u.path = u.path[:0]
	}
}

// closeRings extends u.path by v and then by atoms in no ring until it holds size atoms, and lists the bond from
// its last atom, where that has a hydrogen, to its first: once per ring for ringMoves (the first atom the lower
// of the two), for every path when fused (fusedRingMoves: the paths are distinct rings).
func (u *Mutator) closeRings(v, size int, fused bool) {
	b := &u.base
	u.path = append(u.path, v)
	u.on[v] = true
	if len(u.path) == size {
		switch first := u.path[0]; {
		case u.h[v] == 0:
		case fused:
			u.moves = append(u.moves, move{op: opCloseRing, a: v, b: first})
		case first < v:
			u.moves = append(u.moves, move{op: opCloseRing, a: first, b: v})
		}
	} else {
		for _, k := range b.adj[v] {
			if w := b.edges[k].a + b.edges[k].b - v; !u.on[w] && !u.ringAtom[w] {
				u.closeRings(w, size, fused)
			}
		}
	}
	u.path = u.path[:len(u.path)-1]
	u.on[v] = false
}

// deleteMoves lists the deletions of an atom with degree neighbours, its neighbours then joined in a row by
// single bonds (the inner ones need hydrogens for the bond they gain).
func (u *Mutator) deleteMoves(degree int) {
	b := &u.base
	for v := range b.atoms {
		nb := b.adj[v]
		if len(nb) != degree {
			continue
		}
		var ns [4]int
		for i, k := range nb {
			ns[i] = b.edges[k].a + b.edges[k].b - v
		}
		switch degree {
		case 1:
			u.moves = append(u.moves, move{op: opDeleteAtom, a: v})
		case 2:
			u.moves = append(u.moves, move{op: opDeleteAtom, a: v, chain: ns, n: 2})
		case 3:
			for mid := range 3 {
				if u.h[ns[mid]] > 0 {
					u.moves = append(u.moves, move{op: opDeleteAtom, a: v, chain: [4]int{ns[(mid+1)%3], ns[mid], ns[(mid+2)%3]}, n: 3})
				}
			}
		case 4:
			for i := range 4 {
				for j := range 4 {
					if j == i || u.h[ns[i]] == 0 || u.h[ns[j]] == 0 {
						continue
					}
					var ends [2]int
					e := 0
					for k := range 4 {
						if k != i && k != j {
							ends[e] = ns[k]
							e++
						}
					}
					if ends[0] < ends[1] { // the row and its reverse are one molecule
						u.moves = append(u.moves, move{op: opDeleteAtom, a: v, chain: [4]int{ends[0], ns[i], ns[j], ends[1]}, n: 4})
					}
				}
			}
		}
	}
}

// elementMoves lists the changes of an atom of one of C, N, O, F, S, Cl and Br to another of them.
func (u *Mutator) elementMoves(rng *rand.Rand) {
	elems := [7]string{"C", "N", "O", "F", "S", "Cl", "Br"}
	from := elems[pick(rng, 0.15, 0.15, 0.14, 0.14, 0.14, 0.14, 0.14)]
	to := from
	for to == from {
		to = elems[pick(rng, 0.15, 0.15, 0.14, 0.14, 0.14, 0.14, 0.14)]
	}
	for v, a := range u.base.atoms {
		if u.edit[v] && a.Element == from {
			u.moves = append(u.moves, move{op: opElement, a: v, elem: to})
		}
	}
}

// appendMoves lists the additions of a new atom: by a single bond (0.6; C, N, O, F, S, Cl or Br) to an atom with
// a hydrogen, a double bond (0.35; C, N or O) to one with two, a triple bond (0.05; C or N) to one with three.
func (u *Mutator) appendMoves(rng *rand.Rand) {
	var elem string
	var order smiles.BondOrder
	var need int
	switch pick(rng, 0.6, 0.35, 0.05) {
	case 0:
		elem, order, need = [7]string{"C", "N", "O", "F", "S", "Cl", "Br"}[rng.IntN(7)], smiles.Single, 1
	case 1:
		elem, order, need = [3]string{"C", "N", "O"}[rng.IntN(3)], smiles.Double, 2
	case 2:
		elem, order, need = [2]string{"C", "N"}[rng.IntN(2)], smiles.Triple, 3
	}
	for v := range u.base.atoms {
		if u.h[v] >= need && (need < 3 || u.h[v] == 3) {
			u.moves = append(u.moves, move{op: opAppend, a: v, elem: elem, order: order})
		}
	}
}

// apply builds the child of mv into u.kid and reports whether it is a simple graph (no bond twice, no bond of an
// atom to itself).
func (u *Mutator) apply(mv move) bool {
	b, kid := &u.base, &u.kid
	kid.reset()
	drop := -1
	if mv.op == opDeleteAtom {
		drop = mv.a
	}
	u.idx = resizeFill(u.idx, len(b.atoms), -1)
	for v, a := range b.atoms {
		if v == drop {
			continue
		}
		a.Chirality = ""
		if u.edit[v] {
			a.HCount = smiles.ImplicitH // hydrogens follow the new bonds
		}
		if mv.op == opElement && v == mv.a {
			a.Element = mv.elem
		}
		u.idx[v] = len(kid.atoms)
		kid.atoms = append(kid.atoms, a)
	}
	u.nOld = len(kid.atoms)
	for k, e := range b.edges {
		switch {
		case (mv.op == opInsert || mv.op == opDeleteBond) && k == mv.e:
			continue
		case e.a == drop || e.b == drop:
			continue
		case mv.op == opBondOrder && k == mv.e:
			e.order = mv.order
		}
		kid.edges = append(kid.edges, edge{a: u.idx[e.a], b: u.idx[e.b], order: e.order})
	}
	switch mv.op {
	case opInsert:
		x := len(kid.atoms)
		kid.atoms = append(kid.atoms, smiles.Atom{Element: mv.elem, HCount: smiles.ImplicitH})
		kid.edges = append(kid.edges, edge{a: u.idx[mv.a], b: x, order: mv.first}, edge{a: x, b: u.idx[mv.b], order: mv.order})
	case opCloseRing:
		kid.edges = append(kid.edges, edge{a: u.idx[mv.a], b: u.idx[mv.b], order: smiles.Single})
	case opDeleteAtom:
		for i := 1; i < mv.n; i++ {
			kid.edges = append(kid.edges, edge{a: u.idx[mv.chain[i-1]], b: u.idx[mv.chain[i]], order: smiles.Single})
		}
	case opAppend:
		x := len(kid.atoms)
		kid.atoms = append(kid.atoms, smiles.Atom{Element: mv.elem, HCount: smiles.ImplicitH})
		kid.edges = append(kid.edges, edge{a: u.idx[mv.a], b: x, order: mv.order})
	}
	if len(kid.atoms) == 0 {
		return false
	}
	kid.link()
	for v := range kid.atoms {
		for i, k := range kid.adj[v] {
			e := kid.edges[k]
			if e.a == e.b {
				return false
			}
			for _, k2 := range kid.adj[v][:i] {
				if e2 := kid.edges[k2]; e2.a+e2.b == e.a+e.b {
					return false // the same neighbour twice
				}
			}
		}
	}
	return true
}

// valid reports whether every atom of the child is within its valences: an edited or new atom within its
// element's, an atom that is not edited with the bonds it had.
func (u *Mutator) valid() bool {
	b, kid := &u.base, &u.kid
	for v := range b.atoms {
		i := u.idx[v]
		if i < 0 {
			continue
		}
		if u.edit[v] {
			if implicitH(kid.atoms[i].Element, kid.bondSum(i)) < 0 {
				return false
			}
		} else if kid.bondSum(i) != b.bondSum(v) {
			return false
		}
	}
	for i := u.nOld; i < len(kid.atoms); i++ { // the new atom
		if implicitH(kid.atoms[i].Element, kid.bondSum(i)) < 0 {
			return false
		}
	}
	return true
}

// ringsOK reports whether the child's rings are ones the graph GA keeps: none of more than six atoms (the
// smallest ring through each ring bond), no double bond between two atoms of three- or four-membered rings, no
// ring atom with two double bonds to ring atoms.
func (u *Mutator) ringsOK() bool {
	kid := &u.kid
	n := len(kid.atoms)
	inRing := bridges(kid)
	u.small = resizeFill(u.small, n, 0) // smallest ring per atom, 0 for none
	for k, e := range kid.edges {
		if inRing[k] {
			continue // a bridge
		}
		size := u.cycle(k) // the smallest ring through bond k
		if size > 6 {
			return false
		}
		for _, v := range [2]int{e.a, e.b} {
			if u.small[v] == 0 || size < u.small[v] {
				u.small[v] = size
			}
		}
	}
	for v := range n {
		if u.small[v] == 0 {
			continue
		}
		doubles := 0
		for _, k := range kid.adj[v] {
			e := kid.edges[k]
			if e.order != smiles.Double {
				continue
			}
			w := e.a + e.b - v
			if u.small[w] == 0 {
				continue
			}
			if doubles++; doubles == 2 {
				return false
			}
			if u.small[v] <= 4 && u.small[w] <= 4 {
				return false
			}
		}
	}
	return true
}

// cycle returns the number of atoms of the smallest ring through the child's bond k (a ring bond): one more than
// the shortest path between its ends without it.
func (u *Mutator) cycle(k int) int {
	kid := &u.kid
	e := kid.edges[k]
	u.dist = resizeFill(u.dist, len(kid.atoms), -1)
	u.queue = append(u.queue[:0], e.a)
	u.dist[e.a] = 0
	for i := 0; i < len(u.queue); i++ {
		v := u.queue[i]
		for _, k2 := range kid.adj[v] {
			if k2 == k {
				continue
			}
			w := kid.edges[k2].a + kid.edges[k2].b - v
			if u.dist[w] >= 0 {
				continue
			}
			u.dist[w] = u.dist[v] + 1
			if w == e.b {
				return u.dist[w] + 1
			}
			u.queue = append(u.queue, w)
		}
	}
	return 0 // not a ring bond; bridges says it is
}

// implicitH returns the hydrogens of an uncharged atom of element with bonds of order sum: up to the smallest of
// its valences that is at least sum (RDKit's defaults); −1 when sum exceeds them all or the element is not one the
// operators edit.
func implicitH(element string, sum int) int {
	var vals [3]int
	n := 1
	switch element {
	case "B":
		vals[0] = 3
	case "C":
		vals[0] = 4
	case "N":
		vals[0] = 3
	case "O":
		vals[0] = 2
	case "F", "Cl", "Br", "I":
		vals[0] = 1
	case "P":
		vals, n = [3]int{3, 5, 7}, 3
	case "S":
		vals, n = [3]int{2, 4, 6}, 3
	default:
		return -1
	}
	for _, v := range vals[:n] {
		if v >= sum {
			return v - sum
		}
	}
	return -1
}

// pick draws an index with probability ∝ its weight.
func pick(rng *rand.Rand, weights ...float64) int {
	var total float64
	for _, w := range weights {
		total += w
	}
	u := rng.Float64() * total
	for i, w := range weights {
		if u -= w; u < 0 {
			return i
		}
	}
	return len(weights) - 1
}

// resizeBool returns s with length n, every element false.
func resizeBool(s []bool, n int) []bool {
	if cap(s) < n {
		s = make([]bool, n)
	}
	s = s[:n]
	clear(s)
	return s
}
