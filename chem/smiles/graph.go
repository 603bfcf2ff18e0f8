package smiles

import "slices"

// ImplicitH is the Atom.HCount of an atom written without brackets, whose
// hydrogens are implicit (selfies stores None there).
const ImplicitH = -1

// Atom is one atom of a Graph with its SMILES specifications.
type Atom struct {
	// Element is the capitalised element symbol, e.g. "C", "Cl", "Se".
	Element string
	// Aromatic is true for an aromatic atom (lower-case in SMILES) until the
	// graph is kekulised.
	Aromatic bool
	// Isotope is the mass number in decimal without leading zeros, or "" when
	// none is given. A string keeps arbitrarily long inputs exact, as Python's
	// int does.
	Isotope string
	// Chirality is "", "@" or "@@".
	Chirality string
	// HCount is the explicit hydrogen count of a bracket atom (0 when the
	// bracket gives none), or ImplicitH for an unbracketed atom.
	HCount int
	// Charge is the formal charge.
	Charge int
}

// plain reports whether the atom has no specification beyond its element,
// so that the writer emits it without brackets.
func (a *Atom) plain() bool {
	return a.Isotope == "" && a.Chirality == "" && a.HCount == ImplicitH && a.Charge == 0
}

// InvertChirality swaps @ and @@; it leaves an atom without chirality alone.
func (a *Atom) InvertChirality() {
	switch a.Chirality {
	case "@":
		a.Chirality = "@@"
	case "@@":
		a.Chirality = "@"
	}
}

// BondOrder is a bond order in half units, so that the aromatic order 1.5 is
// exact: Single is 2, Aromatic 3, Double 4 and Triple 6.
type BondOrder int

// Bond orders in half units.
const (
	Single   BondOrder = 2
	Aromatic BondOrder = 3
	Double   BondOrder = 4
	Triple   BondOrder = 6
)

// Bond is one directed bond. A chain or branch bond is stored once, from the
// atom written first (Src < Dst). A ring bond is stored twice, once from each
// end, and each direction keeps its own stereo mark.
type Bond struct {
	Src, Dst int
	Order    BondOrder
	// Stereo is '/' or '\\' for a directional single bond, else 0.
	Stereo byte
	// Ring is true for a ring-closure bond.
	Ring bool
	// twin is the index of the reverse direction of a ring bond, or -1.
	twin int32
}

// adjChunk is the initial capacity of an atom's out-bond list: most atoms
// have at most four bonds.
const adjChunk = 4

// placeholder marks an out-bond slot reserved for a ring bond that is not
// closed yet.
const placeholder = -1

// Graph is a molecular graph whose out-bond lists keep the order in which
// bonds are written in SMILES (and derived in SELFIES). The zero value is an
// empty graph; Reset empties a graph and keeps its storage.
type Graph struct {
	// Atoms holds the atoms in the order they were added; an atom's index is
	// its position here.
	Atoms []Atom
	// Roots holds the indices of the atoms that start a fragment.
	Roots []int

	bonds    []Bond
	adj      [][]int32 // out-bond indices per atom; placeholder for a reserved slot
	counts   []int     // sum of bond orders per atom, in half units
	ringFlag []bool    // atom has a ring bond
	inDS     []bool    // atom is in the delocalisation subgraph
	ds       [][]int   // delocalisation subgraph adjacency (aromatic bonds)
	nDS      int       // number of atoms in the delocalisation subgraph

	// scratch for parsing, kekulisation and writing
	tokens   []token
	rings    []ringOpen
	stack    []int
	arena    []int32 // spare storage for new out-bond lists
	dsArena  []int   // spare storage for new delocalisation lists
	branches []int
	kek      kekScratch
	wrings   [][2]int
}

// Reset empties g and keeps its storage for reuse.
func (g *Graph) Reset() {
	g.Atoms = g.Atoms[:0]
	g.Roots = g.Roots[:0]
	g.bonds = g.bonds[:0]
	for i := range g.adj {
		g.adj[i] = g.adj[i][:0]
		g.ds[i] = g.ds[i][:0]
	}
	g.adj = g.adj[:0]
	g.ds = g.ds[:0]
	g.counts = g.counts[:0]
	g.ringFlag = g.ringFlag[:0]
	g.inDS = g.inDS[:0]
	g.nDS = 0
}

// Grow makes room for n more atoms and about as many bonds, so that
// building a fresh graph does not reallocate as it grows.
func (g *Graph) Grow(n int) {
	m := len(g.Atoms) + n
	g.Atoms = slices.Grow(g.Atoms, n)
	g.adj = slices.Grow(g.adj, n)
	g.ds = slices.Grow(g.ds, n)
	g.counts = slices.Grow(g.counts, n)
	g.ringFlag = slices.Grow(g.ringFlag, n)
	g.inDS = slices.Grow(g.inDS, n)
	g.bonds = slices.Grow(g.bonds, m+m/4-len(g.bonds))
	if len(g.arena) < n*adjChunk {
		g.arena = make([]int32, n*adjChunk)
	}
}

// Len returns the number of atoms.
func (g *Graph) Len() int { return len(g.Atoms) }

// AddAtom appends a and returns its index; root marks it as the start of a
// new fragment. An aromatic atom joins the delocalisation subgraph.
func (g *Graph) AddAtom(a Atom, root bool) int {
	idx := len(g.Atoms)
	if root {
		g.Roots = append(g.Roots, idx)
	}
	g.Atoms = append(g.Atoms, a)
	// Reuse the inner slices left by Reset; carve new out-bond lists from a
	// shared chunk so that a fresh graph does not allocate per atom (a list
	// that outgrows its chunk reallocates alone).
	if all := g.adj[:cap(g.adj)]; idx < len(all) && all[idx] != nil {
		g.adj = all[:idx+1]
		g.adj[idx] = g.adj[idx][:0]
	} else {
		if len(g.arena) < adjChunk {
			g.arena = make([]int32, 64*adjChunk)
		}
		g.adj = append(g.adj, g.arena[:0:adjChunk])
		g.arena = g.arena[adjChunk:]
	}
	if all := g.ds[:cap(g.ds)]; idx < len(all) {
		g.ds = all[:idx+1]
		g.ds[idx] = g.ds[idx][:0]
	} else {
		g.ds = append(g.ds, nil)
	}
	g.counts = append(g.counts, 0)
	g.ringFlag = append(g.ringFlag, false)
	g.inDS = append(g.inDS, false)
	if a.Aromatic {
		g.joinDS(idx)
	}
	return idx
}

func (g *Graph) joinDS(i int) {
	if !g.inDS[i] {
		g.inDS[i] = true
		g.nDS++
	}
}

// AddBond adds the chain or branch bond src→dst (src < dst) at the end of
// src's out-bonds.
func (g *Graph) AddBond(src, dst int, order BondOrder, stereo byte) {
	if src >= dst {
		panic("smiles: AddBond needs src < dst")
	}
	id := int32(len(g.bonds))
	g.bonds = append(g.bonds, Bond{Src: src, Dst: dst, Order: order, Stereo: stereo, twin: -1})
	g.adj[src] = append(g.adj[src], id)
	g.counts[src] += int(order)
	g.counts[dst] += int(order)
	if order == Aromatic {
		g.addDSEdge(src, dst)
	}
}

func (g *Graph) addDSEdge(a, b int) {
	g.joinDS(a)
	g.joinDS(b)
	g.ds[a] = g.appendDS(g.ds[a], b)
	g.ds[b] = g.appendDS(g.ds[b], a)
}

// appendDS appends to a delocalisation list, giving a new list a small
// capacity from a shared chunk.
func (g *Graph) appendDS(l []int, v int) []int {
	if l == nil {
		if len(g.dsArena) < 3 {
			g.dsArena = make([]int, 3*64)
		}
		l = g.dsArena[:0:3]
		g.dsArena = g.dsArena[3:]
	}
	return append(l, v)
}

// AddPlaceholder reserves a slot at the end of src's out-bonds for a ring
// bond that will be closed later, and returns the slot's position.
func (g *Graph) AddPlaceholder(src int) int {
	g.adj[src] = append(g.adj[src], placeholder)
	return len(g.adj[src]) - 1
}

// AddRingBond adds the ring bond a–b in both directions. Each direction goes
// to position aPos (bPos) of its atom's out-bonds: a reserved slot there is
// filled, an occupied one is shifted right, and -1 or the list length
// appends.
func (g *Graph) AddRingBond(a, b int, order BondOrder, aStereo, bStereo byte, aPos, bPos int) {
	ida := int32(len(g.bonds))
	g.bonds = append(g.bonds,
		Bond{Src: a, Dst: b, Order: order, Stereo: aStereo, Ring: true, twin: ida + 1},
		Bond{Src: b, Dst: a, Order: order, Stereo: bStereo, Ring: true, twin: ida})
	g.insertOut(a, ida, aPos)
	g.insertOut(b, ida+1, bPos)
	g.counts[a] += int(order)
	g.counts[b] += int(order)
	g.ringFlag[a] = true
	g.ringFlag[b] = true
	if order == Aromatic {
		g.addDSEdge(a, b)
	}
}

func (g *Graph) insertOut(src int, id int32, pos int) {
	out := g.adj[src]
	switch {
	case pos == -1 || pos == len(out):
		out = append(out, id)
	case out[pos] == placeholder:
		out[pos] = id
	default:
		out = append(out, 0)
		copy(out[pos+1:], out[pos:])
		out[pos] = id
	}
	g.adj[src] = out
}

// Out returns the indices of src's out-bonds in writing order; pass them to
// BondAt. The slice aliases the graph and must not be modified.
func (g *Graph) Out(src int) []int32 { return g.adj[src] }

// BondAt returns the bond with index id, as listed by Out.
func (g *Graph) BondAt(id int32) *Bond { return &g.bonds[id] }

// HasRingBond reports whether atom i has a ring bond.
func (g *Graph) HasRingBond(i int) bool { return g.ringFlag[i] }

// dirBond returns the index of the directed bond src→dst, or -1.
func (g *Graph) dirBond(src, dst int) int32 {
	for _, id := range g.adj[src] {
		if id != placeholder && g.bonds[id].Dst == dst {
			return id
		}
	}
	return -1
}

// DirBond returns the directed bond src→dst, or nil. A chain bond exists only
// in the direction Src < Dst; a ring bond exists in both.
func (g *Graph) DirBond(src, dst int) *Bond {
	if id := g.dirBond(src, dst); id >= 0 {
		return &g.bonds[id]
	}
	return nil
}

// HasBond reports whether atoms a and b are bonded.
func (g *Graph) HasBond(a, b int) bool {
	if a > b {
		a, b = b, a
	}
	return g.dirBond(a, b) >= 0
}

// BondCount returns the sum of the bond orders of atom i in half units
// (twice the bond count).
func (g *Graph) BondCount(i int) int { return g.counts[i] }

// UpdateBondOrder sets the order of the bond between a and b, which must
// exist, in both directions for a ring bond.
func (g *Graph) UpdateBondOrder(a, b int, order BondOrder) {
	if a > b {
		a, b = b, a
	}
	id := g.dirBond(a, b)
	if id < 0 {
		panic("smiles: UpdateBondOrder on atoms that are not bonded")
	}
	bd := &g.bonds[id]
	old := bd.Order
	if old == order {
		return
	}
	bd.Order = order
	if bd.twin >= 0 {
		g.bonds[bd.twin].Order = order
	}
	g.counts[a] += int(order - old)
	g.counts[b] += int(order - old)
}

// IsKekulized reports whether the graph has no aromatic atoms or bonds left.
func (g *Graph) IsKekulized() bool { return g.nDS == 0 }
