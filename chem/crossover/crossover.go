// Package crossover makes a child molecule from two parents by joining their fragments, the crossover of the
// graph-based genetic algorithm (Jensen, "A graph-based genetic algorithm and generative model/Monte Carlo tree
// search for the exploration of chemical space", Chem. Sci. 2019). In its non-ring form each parent is cut at a
// random single bond that lies in no ring, and a fragment of the first is bonded, by a single bond, to a fragment
// of the second where they were cut. In its ring form (Crosser.Rings) each parent is cut at two single bonds of a
// ring that together split it in two, and a part of the first is bonded to a part of the second at both cuts, so
// that the child's new ring is made of pieces of the parents' rings. Each cut atom loses one single bond and gains
// one, so every atom keeps its valence, its charge and its hydrogens: a child of two valid molecules is a valid
// molecule.
//
// Where a SELFIES genetic algorithm's one-point crossover reads the second parent's tail in the first parent's
// context (its branch and ring symbols change meaning), this one moves whole substituents, ring systems and
// chains: the moves that let a search assemble a target's pieces (the rediscovery and similarity tasks).
//
// The parents are SMILES of the subset package chem/smiles reads (the SELFIES decoder's output and canonical
// RDKit SMILES alike); the child is written kekulised, without stereo marks (a cut renumbers the neighbours
// that @/@@ and / \ refer to), for the SELFIES encoder.
package crossover

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/nfbo/nfbo/chem/smiles"
)

// ErrNoCut is Cross's error when a parent has no single bond outside rings between two heavy atoms (and no ring
// crossover was made).
var ErrNoCut = errors.New("crossover: no single bond outside a ring to cut")

// edge is an undirected bond of a parsed parent.
type edge struct {
	a, b  int
	order smiles.BondOrder
}

// parent is a parsed molecule with its undirected bonds and the bonds that may be cut.
type parent struct {
	g     smiles.Graph
	edges []edge
	adj   [][]int // per atom, indices into edges
	cuts  []int   // edges that lie in no ring, single, between heavy atoms
	rings []int   // edges that lie in a ring, single, between heavy atoms
	seen  []bool  // scratch of ringCuts
	stack []int
	pairs []ringCut
}

// ringCut is a pair of ring bonds whose removal splits a molecule in two: a1 and a2 (the first bond's and the
// second's ends) on one side, b1 and b2 on the other.
type ringCut struct {
	e1, e2         edge
	a1, a2, b1, b2 int
}

// Crosser makes children; it keeps its scratch between calls and is not safe for concurrent use. The zero value
// is ready.
type Crosser struct {
	// Rings makes half the crossovers ring crossovers, where both parents have a ring to cut; otherwise every
	// crossover is the non-ring one (and draws from the random stream exactly as before Rings existed).
	Rings bool

	p [2]parent
	// the child under construction
	atoms []smiles.Atom
	edges []edge
	adj   [][]int
	// scratch
	mark   []int
	stack  []int
	order  []int
	kids   [][]int
	closes [][]int // per atom, the ring-closure edges it takes part in
	nums   []int   // ring number per child edge
	used   []bool  // ring numbers open

	out []byte
}

// Cross returns a child of the molecules a and b: a's fragment on one side of a random cut bond of a, bonded to
// b's fragment on one side of a random cut bond of b, or with Rings, half the time, their ring crossover. It fails
// with ErrNoCut when either parent has no bond to cut, or with the SMILES error of a parent that cannot be read.
func (c *Crosser) Cross(a, b string, rng *rand.Rand) (string, error) {
	for i, s := range [2]string{a, b} {
		if err := c.p[i].parse(s); err != nil {
			return "", fmt.Errorf("crossover: parent %q: %w", s, err)
		}
	}
	c.atoms, c.edges = c.atoms[:0], c.edges[:0]
	if c.Rings && rng.IntN(2) == 0 {
		if kid, ok := c.crossRings(rng); ok {
			return kid, nil
		}
	}
	if len(c.p[0].cuts) == 0 || len(c.p[1].cuts) == 0 {
		return "", ErrNoCut
	}
	var join [2]int // the child's atoms on either side of the new bond
	for i := range c.p {
		p := &c.p[i]
		e := p.edges[p.cuts[rng.IntN(len(p.cuts))]]
		root := e.a
		if rng.IntN(2) == 1 {
			root = e.b
		}
		join[i] = c.copyFragment(p, root, e, e)
	}
	c.edges = append(c.edges, edge{a: join[0], b: join[1], order: smiles.Single})
	return c.write(), nil
}

// parse reads s into p, kekulised, and finds its cut bonds.
func (p *parent) parse(s string) error {
	p.g.Reset()
	if err := p.g.Parse(s); err != nil {
		return err
	}
	if err := p.g.Kekulize(); err != nil {
		return err
	}
	n := p.g.Len()
	p.edges = p.edges[:0]
	p.adj = resize(p.adj, n)
	for src := range n {
		for _, id := range p.g.Out(src) {
			if id < 0 {
				continue // a ring bond's slot never closed: the parser refuses those, but be safe
			}
			bd := p.g.BondAt(id)
			if bd.Ring && bd.Src > bd.Dst {
				continue // a ring bond is stored from both ends; keep one
			}
			k := len(p.edges)
			p.edges = append(p.edges, edge{a: bd.Src, b: bd.Dst, order: bd.Order})
			p.adj[bd.Src] = append(p.adj[bd.Src], k)
			p.adj[bd.Dst] = append(p.adj[bd.Dst], k)
		}
	}
	bridge := bridges(len(p.edges), p.adj, p.edges)
	p.cuts, p.rings = p.cuts[:0], p.rings[:0]
	for k, e := range p.edges {
		if e.order == smiles.Single && p.g.Atoms[e.a].Element != "H" && p.g.Atoms[e.b].Element != "H" {
			if bridge[k] {
				p.cuts = append(p.cuts, k)
			} else {
				p.rings = append(p.rings, k)
			}
		}
	}
	return nil
}

// crossRings makes a ring crossover of the parsed parents into the child, and reports whether both had a ring
// cut.
func (c *Crosser) crossRings(rng *rand.Rand) (string, bool) {
	var ends [2][2]int // per parent, the child's atoms at its two cuts
	for i := range c.p {
		p := &c.p[i]
		if len(p.ringCuts()) == 0 {
			c.atoms, c.edges = c.atoms[:0], c.edges[:0]
			return "", false
		}
		rc := p.pairs[rng.IntN(len(p.pairs))]
		r1, r2 := rc.a1, rc.a2
		if rng.IntN(2) == 1 {
			r1, r2 = rc.b1, rc.b2
		}
		ends[i][0] = c.copyFragment(p, r1, rc.e1, rc.e2)
		ends[i][1] = c.mark[r2]
	}
	if rng.IntN(2) == 1 {
		ends[1][0], ends[1][1] = ends[1][1], ends[1][0]
	}
	c.edges = append(c.edges, edge{a: ends[0][0], b: ends[1][0], order: smiles.Single},
		edge{a: ends[0][1], b: ends[1][1], order: smiles.Single})
	return c.write(), true
}

// ringCuts finds the pairs of p's ring bonds that split it in two.
func (p *parent) ringCuts() []ringCut {
	p.pairs = p.pairs[:0]
	n := p.g.Len()
	for x, i := range p.rings {
		for _, j := range p.rings[x+1:] {
			e1, e2 := p.edges[i], p.edges[j]
			if e1.a == e2.a || e1.a == e2.b || e1.b == e2.a || e1.b == e2.b {
				continue // the two cuts would leave an atom alone between them
			}
			// The side of e1.a without both bonds: a split when it holds one end of each.
			if cap(p.seen) < n {
				p.seen = make([]bool, n)
			}
			p.seen = p.seen[:n]
			clear(p.seen)
			p.stack = append(p.stack[:0], e1.a)
			p.seen[e1.a] = true
			for len(p.stack) > 0 {
				v := p.stack[len(p.stack)-1]
				p.stack = p.stack[:len(p.stack)-1]
				for _, k := range p.adj[v] {
					if k == i || k == j {
						continue
					}
					if w := p.edges[k].a + p.edges[k].b - v; !p.seen[w] {
						p.seen[w] = true
						p.stack = append(p.stack, w)
					}
				}
			}
			if p.seen[e1.b] || p.seen[e2.a] == p.seen[e2.b] {
				continue
			}
			a2, b2 := e2.a, e2.b
			if !p.seen[a2] {
				a2, b2 = b2, a2
			}
			p.pairs = append(p.pairs, ringCut{e1: e1, e2: e2, a1: e1.a, a2: a2, b1: e1.b, b2: b2})
		}
	}
	return p.pairs
}

// copyFragment copies into the child the atoms of p reachable from root without crossing the bonds cut1 and
// cut2 (the same bond twice for one cut), with their bonds, and returns the child index of root; c.mark then maps
// p's atoms to the child's (−1 for those left out).
func (c *Crosser) copyFragment(p *parent, root int, cut1, cut2 edge) int {
	c.mark = resizeFill(c.mark, p.g.Len(), -1)
	c.stack = append(c.stack[:0], root)
	c.mark[root] = c.addAtom(p.g.Atoms[root])
	for len(c.stack) > 0 {
		v := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		for _, k := range p.adj[v] {
			e := p.edges[k]
			if w := e.a + e.b - v; e != cut1 && e != cut2 && c.mark[w] < 0 {
				c.mark[w] = c.addAtom(p.g.Atoms[w])
				c.stack = append(c.stack, w)
			}
		}
	}
	for _, e := range p.edges {
		if e != cut1 && e != cut2 && c.mark[e.a] >= 0 && c.mark[e.b] >= 0 {
			c.edges = append(c.edges, edge{a: c.mark[e.a], b: c.mark[e.b], order: e.order})
		}
	}
	return c.mark[root]
}

// addAtom adds a parent's atom to the child without its chirality, and returns its index.
func (c *Crosser) addAtom(a smiles.Atom) int {
	a.Chirality = ""
	c.atoms = append(c.atoms, a)
	return len(c.atoms) - 1
}

// write returns the child's SMILES: a depth-first walk from atom 0, each branch but the last in parentheses, ring
// closures numbered from 1 with numbers reused once closed.
func (c *Crosser) write() string {
	n := len(c.atoms)
	c.adj = resize(c.adj, n)
	for k, e := range c.edges {
		c.adj[e.a] = append(c.adj[e.a], k)
		c.adj[e.b] = append(c.adj[e.b], k)
	}
	// Pass 1: the walk's tree and its ring closures (edges to an atom already reached).
	c.mark = resizeFill(c.mark, n, -1) // order of first visit
	c.kids = resize(c.kids, n)
	c.closes = resize(c.closes, n)
	tree := make([]bool, len(c.edges))
	c.order = c.order[:0]
	var visit func(v, via int)
	visit = func(v, via int) {
		c.mark[v] = len(c.order)
		c.order = append(c.order, v)
		for _, k := range c.adj[v] {
			if k == via {
				continue
			}
			e := c.edges[k]
			w := e.a + e.b - v
			switch {
			case c.mark[w] < 0:
				tree[k] = true
				c.kids[v] = append(c.kids[v], k)
				visit(w, k)
			case !tree[k] && c.mark[w] < c.mark[v]:
				// a closure from a descendant back to w: listed at both ends, opened at w
				c.closes[w] = append(c.closes[w], k)
				c.closes[v] = append(c.closes[v], k)
			}
		}
	}
	visit(0, -1)
	// Pass 2: write in the same order.
	c.nums = resizeFill(c.nums, len(c.edges), 0)
	c.used = c.used[:0]
	c.out = c.out[:0]
	var emit func(v int)
	emit = func(v int) {
		c.out = smiles.AppendAtom(c.out, &c.atoms[v], true)
		for _, k := range c.closes[v] {
			if c.nums[k] == 0 { // opening: the lowest number not in use, and the bond's symbol
				num := 1
				for num < len(c.used) && c.used[num] {
					num++
				}
				for len(c.used) <= num {
					c.used = append(c.used, false)
				}
				c.used[num] = true
				c.nums[k] = num
				c.out = appendBond(c.out, c.edges[k].order)
			} else {
				c.used[c.nums[k]] = false
			}
			if c.nums[k] >= 10 {
				c.out = append(c.out, '%')
			}
			c.out = strconv.AppendInt(c.out, int64(c.nums[k]), 10)
		}
		kids := c.kids[v]
		for i, k := range kids {
			e := c.edges[k]
			w := e.a + e.b - v
			if i < len(kids)-1 {
				c.out = append(c.out, '(')
			}
			c.out = appendBond(c.out, e.order)
			emit(w)
			if i < len(kids)-1 {
				c.out = append(c.out, ')')
			}
		}
	}
	emit(0)
	return string(c.out)
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
func bridges(m int, adj [][]int, edges []edge) []bool {
	n := len(adj)
	disc, low := make([]int, n), make([]int, n)
	for i := range disc {
		disc[i] = -1
	}
	out := make([]bool, m)
	t := 0
	var dfs func(v, via int)
	dfs = func(v, via int) {
		disc[v], low[v] = t, t
		t++
		for _, k := range adj[v] {
			if k == via {
				continue
			}
			w := edges[k].a + edges[k].b - v
			if disc[w] < 0 {
				dfs(w, k)
				low[v] = min(low[v], low[w])
				if low[w] > disc[v] {
					out[k] = true
				}
			} else {
				low[v] = min(low[v], disc[w])
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
