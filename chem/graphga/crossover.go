package graphga

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/nfbo/nfbo/chem/smiles"
)

// ErrNoCut is Cross's error when a parent has no single bond outside rings between two heavy atoms (and no ring
// crossover was made).
var ErrNoCut = errors.New("crossover: no single bond outside a ring to cut")

// parent is a parsed molecule with the bonds that may be cut.
type parent struct {
	g smiles.Graph
	mol
	cuts  []int  // edges that lie in no ring, single, between heavy atoms
	rings []int  // edges that lie in a ring, single, between heavy atoms
	seen  []bool // scratch of ringCuts
	stack []int
	pairs []ringCut
}

// ringCut is a pair of ring bonds whose removal splits a molecule in two: a1 and a2 (the first bond's and the
// second's ends) on one side, b1 and b2 on the other.
type ringCut struct {
	e1, e2         edge
	a1, a2, b1, b2 int
}

// Crosser makes children of two molecules: in its non-ring form each parent is cut at a random single bond that
// lies in no ring, and a fragment of the first is bonded, by a single bond, to a fragment of the second where they
// were cut. In its ring form (Rings) each parent is cut at two single bonds of a ring that together split it in
// two, and a part of the first is bonded to a part of the second at both cuts, so that the child's new ring is
// made of pieces of the parents' rings. Each cut atom loses one single bond and gains one, so every atom keeps its
// valence, its charge and its hydrogens: a child of two valid molecules is a valid molecule.
//
// A Crosser keeps its scratch between calls and is not safe for concurrent use. The zero value is ready.
type Crosser struct {
	// Rings makes half the crossovers ring crossovers, where both parents have a ring to cut; otherwise every
	// crossover is the non-ring one (and draws from the random stream exactly as before Rings existed).
	Rings bool
	// Size, if set, keeps a child only when its size passes the rule, trying up to ten crossovers of the two
	// parents (the graph GA's crossover); nil keeps every child, of any size.
	Size *SizeRule

	p   [2]parent
	kid mol // the child under construction
	// scratch
	mark  []int
	stack []int
	w     writer
}

// Cross returns a child of the molecules a and b: a's fragment on one side of a random cut bond of a, bonded to
// b's fragment on one side of a random cut bond of b, or with Rings, half the time, their ring crossover. It fails
// with ErrNoCut when either parent has no bond to cut, with ErrSize when ten children fail the Size rule, or with
// the SMILES error of a parent that cannot be read.
func (c *Crosser) Cross(a, b string, rng *rand.Rand) (string, error) {
	for i, s := range [2]string{a, b} {
		if err := c.p[i].parse(s); err != nil {
			return "", fmt.Errorf("crossover: parent %q: %w", s, err)
		}
	}
	if c.Size == nil {
		return c.cross(rng)
	}
	for range 10 {
		kid, err := c.cross(rng)
		if err != nil {
			return "", err
		}
		if c.Size.ok(&c.kid, rng) {
			return kid, nil
		}
	}
	return "", ErrSize
}

// cross makes one child of the parsed parents (Cross).
func (c *Crosser) cross(rng *rand.Rand) (string, error) {
	c.kid.reset()
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
	c.kid.edges = append(c.kid.edges, edge{a: join[0], b: join[1], order: smiles.Single})
	return c.write(), nil
}

// parse reads s into p, kekulised, and finds its cut bonds.
func (p *parent) parse(s string) error {
	if err := parseInto(&p.mol, &p.g, s); err != nil {
		return err
	}
	bridge := bridges(&p.mol)
	p.cuts, p.rings = p.cuts[:0], p.rings[:0]
	for k, e := range p.edges {
		if e.order == smiles.Single && p.atoms[e.a].Element != "H" && p.atoms[e.b].Element != "H" {
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
			c.kid.reset()
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
	c.kid.edges = append(c.kid.edges, edge{a: ends[0][0], b: ends[1][0], order: smiles.Single},
		edge{a: ends[0][1], b: ends[1][1], order: smiles.Single})
	return c.write(), true
}

// ringCuts finds the pairs of p's ring bonds that split it in two.
func (p *parent) ringCuts() []ringCut {
	p.pairs = p.pairs[:0]
	n := len(p.atoms)
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
	c.mark = resizeFill(c.mark, len(p.atoms), -1)
	c.stack = append(c.stack[:0], root)
	c.mark[root] = c.addAtom(p.atoms[root])
	for len(c.stack) > 0 {
		v := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		for _, k := range p.adj[v] {
			e := p.edges[k]
			if w := e.a + e.b - v; e != cut1 && e != cut2 && c.mark[w] < 0 {
				c.mark[w] = c.addAtom(p.atoms[w])
				c.stack = append(c.stack, w)
			}
		}
	}
	for _, e := range p.edges {
		if e != cut1 && e != cut2 && c.mark[e.a] >= 0 && c.mark[e.b] >= 0 {
			c.kid.edges = append(c.kid.edges, edge{a: c.mark[e.a], b: c.mark[e.b], order: e.order})
		}
	}
	return c.mark[root]
}

// addAtom adds a parent's atom to the child without its chirality, and returns its index.
func (c *Crosser) addAtom(a smiles.Atom) int {
	a.Chirality = ""
	c.kid.atoms = append(c.kid.atoms, a)
	return len(c.kid.atoms) - 1
}

// write returns the child's SMILES.
func (c *Crosser) write() string {
	c.kid.link()
	return c.w.write(&c.kid)
}
