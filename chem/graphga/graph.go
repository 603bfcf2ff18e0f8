package graphga

import (
	"strconv"

	"github.com/nfbo/nfbo/chem/smiles"
)

// edge is an undirected bond of a kekulised molecule.
type edge struct {
	a, b  int
	order smiles.BondOrder
}

// mol is a kekulised molecule that the operators edit: its atoms, its undirected bonds and, once link has run,
// each atom's bonds.
type mol struct {
	atoms []smiles.Atom
	edges []edge
	adj   [][]int // per atom, indices into edges
}

// reset empties m and keeps its storage.
func (m *mol) reset() { m.atoms, m.edges = m.atoms[:0], m.edges[:0] }

// link builds adj from edges.
func (m *mol) link() {
	m.adj = resize(m.adj, len(m.atoms))
	for k, e := range m.edges {
		m.adj[e.a] = append(m.adj[e.a], k)
		m.adj[e.b] = append(m.adj[e.b], k)
	}
}

// bondSum returns the sum of atom v's bond orders in whole units (adj must be current).
func (m *mol) bondSum(v int) int {
	s := 0
	for _, k := range m.adj[v] {
		s += int(m.edges[k].order)
	}
	return s / int(smiles.Single)
}

// read fills m from g, a parsed and kekulised graph, and links it.
func (m *mol) read(g *smiles.Graph) {
	m.reset()
	m.atoms = append(m.atoms, g.Atoms...)
	for src := range g.Len() {
		for _, id := range g.Out(src) {
			if id < 0 {
				continue // a ring bond's slot never closed: the parser refuses those, but be safe
			}
			bd := g.BondAt(id)
			if bd.Ring && bd.Src > bd.Dst {
				continue // a ring bond is stored from both ends; keep one
			}
			m.edges = append(m.edges, edge{a: bd.Src, b: bd.Dst, order: bd.Order})
		}
	}
	m.link()
}

// parseInto parses s with g, kekulises it and reads it into m.
func parseInto(m *mol, g *smiles.Graph, s string) error {
	g.Reset()
	if err := g.Parse(s); err != nil {
		return err
	}
	if err := g.Kekulize(); err != nil {
		return err
	}
	m.read(g)
	return nil
}

// writer writes a connected mol as SMILES; it keeps its scratch between calls.
type writer struct {
	first  []int // order of first visit per atom
	order  []int
	kids   [][]int
	closes [][]int // per atom, the ring-closure edges it takes part in
	tree   []bool
	nums   []int  // ring number per edge
	used   []bool // ring numbers open
	out    []byte
}

// write returns m's SMILES (m linked, connected): a depth-first walk from atom 0, each branch but the last in
// parentheses, ring closures numbered from 1 with numbers reused once closed.
func (w *writer) write(m *mol) string {
	n := len(m.atoms)
	// Pass 1: the walk's tree and its ring closures (edges to an atom already reached).
	w.first = resizeFill(w.first, n, -1)
	w.kids = resize(w.kids, n)
	w.closes = resize(w.closes, n)
	if cap(w.tree) < len(m.edges) {
		w.tree = make([]bool, len(m.edges))
	}
	w.tree = w.tree[:len(m.edges)]
	clear(w.tree)
	w.order = w.order[:0]
	var visit func(v, via int)
	visit = func(v, via int) {
		w.first[v] = len(w.order)
		w.order = append(w.order, v)
		for _, k := range m.adj[v] {
			if k == via {
				continue
			}
			e := m.edges[k]
			u := e.a + e.b - v
			switch {
			case w.first[u] < 0:
				w.tree[k] = true
				w.kids[v] = append(w.kids[v], k)
				visit(u, k)
			case !w.tree[k] && w.first[u] < w.first[v]:
				// a closure from a descendant back to u: listed at both ends, opened at u
				w.closes[u] = append(w.closes[u], k)
				w.closes[v] = append(w.closes[v], k)
			}
		}
	}
	visit(0, -1)
	// Pass 2: write in the same order.
	w.nums = resizeFill(w.nums, len(m.edges), 0)
	w.used = w.used[:0]
	w.out = w.out[:0]
	var emit func(v int)
	emit = func(v int) {
		w.out = smiles.AppendAtom(w.out, &m.atoms[v], true)
		for _, k := range w.closes[v] {
			if w.nums[k] == 0 { // opening: the lowest number not in use, and the bond's symbol
				num := 1
				for num < len(w.used) && w.used[num] {
					num++
				}
				for len(w.used) <= num {
					w.used = append(w.used, false)
				}
				w.used[num] = true
				w.nums[k] = num
				w.out = appendBond(w.out, m.edges[k].order)
			} else {
				w.used[w.nums[k]] = false
			}
			if w.nums[k] >= 10 {
				w.out = append(w.out, '%')
			}
			w.out = strconv.AppendInt(w.out, int64(w.nums[k]), 10)
		}
		kids := w.kids[v]
		for i, k := range kids {
			e := m.edges[k]
			u := e.a + e.b - v
			if i < len(kids)-1 {
				w.out = append(w.out, '(')
			}
			w.out = appendBond(w.out, e.order)
			emit(u)
			if i < len(kids)-1 {
				w.out = append(w.out, ')')
			}
		}
	}
	emit(0)
	return string(w.out)
}

// appendBond appends the SMILES symbol of a kekulised bond order.
func appendBond(dst []byte, o smiles.BondOrder) []byte {
	switch o {
	case smiles.Double:
		return append(dst, '=')
	case smiles.Triple:
		return append(dst, '#')
	}
	return dst
}

// bridges reports, per edge, whether removing it disconnects its component (Tarjan's low-link): the bonds in
// no ring.
func bridges(m *mol) []bool {
	n := len(m.adj)
	disc, low := make([]int, n), make([]int, n)
	for i := range disc {
		disc[i] = -1
	}
	out := make([]bool, len(m.edges))
	t := 0
	var dfs func(v, via int)
	dfs = func(v, via int) {
		disc[v], low[v] = t, t
		t++
		for _, k := range m.adj[v] {
			if k == via {
				continue
			}
			u := m.edges[k].a + m.edges[k].b - v
			if disc[u] < 0 {
				dfs(u, k)
				low[v] = min(low[v], low[u])
				if low[u] > disc[v] {
					out[k] = true
				}
			} else {
				low[v] = min(low[v], disc[u])
			}
		}
	}
	for v := range n {
		if disc[v] < 0 {
			dfs(v, -1)
		}
	}
	return out
}

// resize returns s with length n and every element empty, keeping the storage.
func resize(s [][]int, n int) [][]int {
	if cap(s) < n {
		s = append(s[:cap(s)], make([][]int, n-cap(s))...)
	}
	s = s[:n]
	for i := range s {
		s[i] = s[i][:0]
	}
	return s
}

// resizeFill returns s with length n, every element v.
func resizeFill(s []int, n, v int) []int {
	if cap(s) < n {
		s = make([]int, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = v
	}
	return s
}
