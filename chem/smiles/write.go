package smiles

import (
	"errors"
	"strconv"
)

// AppendAtom appends the SMILES symbol of a kekulised atom to dst, as
// selfies' atom_to_smiles does: a plain organic atom is written bare, any
// other atom with its specifications (H count always with a digit, "H0" for
// an organic atom with a bracket but no H, charge as +n/-n). brackets=false
// leaves out the square brackets (SELFIES adds its own).
func AppendAtom(dst []byte, a *Atom, brackets bool) []byte {
	if a.plain() {
		return append(dst, a.Element...)
	}
	if brackets {
		dst = append(dst, '[')
	}
	dst = append(dst, a.Isotope...)
	dst = append(dst, a.Element...)
	dst = append(dst, a.Chirality...)
	if a.HCount != 0 {
		// HCount is never ImplicitH here: an unbracketed atom is plain.
		dst = append(dst, 'H')
		dst = strconv.AppendInt(dst, int64(a.HCount), 10)
	} else if a.Isotope == "" && a.Chirality == "" && a.Charge == 0 && organic(a.Element) {
		dst = append(dst, "H0"...)
	}
	if a.Charge != 0 {
		if a.Charge > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(a.Charge), 10)
	}
	if brackets {
		dst = append(dst, ']')
	}
	return dst
}

// AppendBond appends the SMILES character of a kekulised bond: nothing or
// the stereo mark for a single bond, '=' or '#' otherwise.
func AppendBond(dst []byte, b *Bond) []byte {
	switch b.Order {
	case Single:
		if b.Stereo != 0 {
			dst = append(dst, b.Stereo)
		}
	case Double:
		dst = append(dst, '=')
	case Triple:
		dst = append(dst, '#')
	}
	return dst
}

// errNotKekulized is returned when the writer meets an aromatic graph.
var errNotKekulized = errors.New("smiles: graph is not kekulized")

// AppendSMILES appends the SMILES of the kekulised graph g to dst, keeping
// the traversal order of the graph (selfies' mol_to_smiles): fragments in
// root order joined by '.', a depth-first walk in which every out-bond but
// the last opens a parenthesised branch, and ring numbers given in order of
// first use and never reused.
func (g *Graph) AppendSMILES(dst []byte) ([]byte, error) {
	if !g.IsKekulized() {
		return dst, errNotKekulized
	}
	g.wrings = g.wrings[:0]
	for f, root := range g.Roots {
		if f > 0 {
			dst = append(dst, '.')
		}
		dst = g.appendFragment(dst, root)
	}
	return dst, nil
}

// String returns the SMILES of a kekulised graph, or "" if g is aromatic.
func (g *Graph) String() string {
	b, err := g.AppendSMILES(nil)
	if err != nil {
		return ""
	}
	return string(b)
}

func (g *Graph) appendFragment(dst []byte, cur int) []byte {
	// The last out-bond continues the chain; loop on it instead of
	// recursing so that long chains do not grow the stack.
	for {
		dst = AppendAtom(dst, &g.Atoms[cur], true)
		out := g.adj[cur]
		next := -1
		for i, id := range out {
			b := &g.bonds[id]
			if b.Ring {
				dst = AppendBond(dst, b)
				lo, hi := min(b.Src, b.Dst), max(b.Src, b.Dst)
				rnum := 0
				for k, r := range g.wrings {
					if r == [2]int{lo, hi} {
						rnum = k + 1
						break
					}
				}
				if rnum == 0 {
					g.wrings = append(g.wrings, [2]int{lo, hi})
					rnum = len(g.wrings)
				}
				if rnum >= 10 {
					dst = append(dst, '%')
				}
				dst = strconv.AppendInt(dst, int64(rnum), 10)
				continue
			}
			if i < len(out)-1 {
				dst = append(dst, '(')
				dst = AppendBond(dst, b)
				dst = g.appendFragment(dst, b.Dst)
				dst = append(dst, ')')
				continue
			}
			dst = AppendBond(dst, b)
			next = b.Dst
		}
		if next < 0 {
			return dst
		}
		cur = next
	}
}
