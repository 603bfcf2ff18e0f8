package selfies

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/chem/smiles"
)

// Encoder translates SMILES strings into SELFIES. It keeps scratch storage
// between calls, so it is not safe for concurrent use; use one Encoder per
// goroutine.
type Encoder struct {
	c      Constraints
	strict bool

	g    smiles.Graph
	buf  []byte
	perm []int
}

// NewEncoder returns a strict encoder that checks input against a copy of c.
func NewEncoder(c Constraints) *Encoder {
	return &Encoder{c: c.Clone(), strict: true}
}

// SetStrict sets whether Encode rejects molecules that violate the
// constraints (the default, as in selfies). A non-strict encoder encodes
// them anyway, and decoding the result then gives a different molecule.
func (e *Encoder) SetStrict(on bool) { e.strict = on }

// Constraints returns a copy of the encoder's constraints.
func (e *Encoder) Constraints() Constraints { return e.c.Clone() }

// Encode translates a SMILES string into SELFIES, exactly as selfies 2.0.0's
// encoder does: the SMILES is parsed and kekulised, atom order is kept (the
// result is not canonical), and fragments are joined by '.'. Errors are
// *EncodeError.
func (e *Encoder) Encode(s string) (string, error) {
	b, err := e.AppendEncode(e.buf[:0], s)
	e.buf = b[:0]
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendEncode is Encode that appends the SELFIES to dst.
func (e *Encoder) AppendEncode(dst []byte, s string) ([]byte, error) {
	g := &e.g
	if err := g.Parse(s); err != nil {
		ee := &EncodeError{SMILES: s, Offset: -1, Reason: "failed to parse input", Err: err}
		var se *smiles.SyntaxError
		if errors.As(err, &se) {
			ee.Offset = se.Offset
			ee.Reason = "failed to parse input: " + se.Msg
		}
		return dst, ee
	}
	if err := g.Kekulize(); err != nil {
		return dst, &EncodeError{SMILES: s, Offset: -1, Reason: err.Error(), Err: err}
	}
	if e.strict {
		if err := e.checkConstraints(s); err != nil {
			return dst, err
		}
	}
	// Invert chirality where the SELFIES derivation order of an atom's
	// neighbours is an odd permutation of their SMILES order, so that
	// decoding restores it.
	for i := range g.Atoms {
		if g.Atoms[i].Chirality != "" && g.HasRingBond(i) && e.shouldInvertChirality(i) {
			g.Atoms[i].InvertChirality()
		}
	}
	for f, root := range g.Roots {
		if f > 0 {
			dst = append(dst, '.')
		}
		var err error
		dst, _, err = e.fragment(dst, nil, root)
		if err != nil {
			return dst, &EncodeError{SMILES: s, Offset: -1, Reason: err.Error(), Err: err}
		}
	}
	return dst, nil
}

// checkConstraints is selfies' _check_bond_constraints.
func (e *Encoder) checkConstraints(s string) error {
	g := &e.g
	capacity := func(a *smiles.Atom) int {
		c := e.c.Capacity(a.Element, a.Charge)
		if a.HCount != smiles.ImplicitH {
			c -= a.HCount
		}
		return c
	}
	ok := true
	for i := range g.Atoms {
		if g.BondCount(i)/2 > capacity(&g.Atoms[i]) {
			ok = false
			break
		}
	}
	if ok {
		return nil
	}
	// Build the message only on failure: the builder escapes.
	var b strings.Builder
	b.WriteString("input violates the semantic constraints:")
	for i := range g.Atoms {
		a := &g.Atoms[i]
		if count, c := g.BondCount(i)/2, capacity(a); count > c {
			fmt.Fprintf(&b, " [%s with %d bond(s) - a max. of %d bond(s) was specified]",
				smiles.AppendAtom(nil, a, true), count, c)
		}
	}
	return &EncodeError{SMILES: s, Offset: -1, Reason: b.String()}
}

// shouldInvertChirality ports selfies' _should_invert_chirality. SELFIES
// derives an atom's neighbours as: ring bonds closed here, ring bonds opened
// here (by partner index), then branches and the chain. It reports whether
// that order is an odd permutation of the SMILES order.
func (e *Encoder) shouldInvertChirality(atom int) bool {
	g := &e.g
	out := g.Out(atom)
	perm := e.perm[:0]
	for i, id := range out {
		if b := g.BondAt(id); b.Ring && b.Src >= b.Dst {
			perm = append(perm, i)
		}
	}
	k := len(perm)
	for i, id := range out {
		if b := g.BondAt(id); b.Ring && b.Src < b.Dst {
			perm = append(perm, i)
		}
	}
	opened := perm[k:]
	sort.SliceStable(opened, func(x, y int) bool {
		return g.BondAt(out[opened[x]]).Dst < g.BondAt(out[opened[y]]).Dst
	})
	for i, id := range out {
		if !g.BondAt(id).Ring {
			perm = append(perm, i)
		}
	}
	e.perm = perm
	count := 0
	for i := range perm {
		for j := i + 1; j < len(perm); j++ {
			if perm[i] > perm[j] {
				count++
			}
		}
	}
	return count%2 != 0
}

var errSelfRing = errors.New("ring bond from an atom to itself")

// fragment appends the SELFIES of the fragment rooted at root, entered by
// bondIn (nil at a fragment start), and returns the number of symbols it
// wrote (selfies' _fragment_to_selfies).
func (e *Encoder) fragment(dst []byte, bondIn *smiles.Bond, root int) ([]byte, int, error) {
	g := &e.g
	n := 0
	cur := root
	for {
		dst = append(dst, '[')
		if bondIn != nil {
			dst = smiles.AppendBond(dst, bondIn)
		}
		dst = smiles.AppendAtom(dst, &g.Atoms[cur], false)
		dst = append(dst, ']')
		n++

		out := g.Out(cur)
		next := -1
		for i, id := range out {
			b := g.BondAt(id)
			switch {
			case b.Ring:
				if b.Src < b.Dst {
					continue // written where the ring closes
				}
				if b.Src == b.Dst {
					// selfies fails here with an IndexError.
					return dst, n, errSelfRing
				}
				rev := g.DirBond(b.Dst, b.Src)
				dst = append(dst, '[')
				dst = appendRingBonds(dst, rev, b)
				dst = append(dst, "Ring"...)
				var L int
				dst, L = appendQ(dst, b.Src-b.Dst-1)
				n += 1 + L
			case i == len(out)-1:
				bondIn, next = b, b.Dst
			default:
				start := len(dst)
				var m int
				var err error
				dst, m, err = e.fragment(dst, b, b.Dst)
				if err != nil {
					return dst, n, err
				}
				// The branch symbol and its size come before the branch:
				// write them after it, then rotate them into place.
				mid := len(dst)
				dst = append(dst, '[')
				switch b.Order {
				case smiles.Double:
					dst = append(dst, '=')
				case smiles.Triple:
					dst = append(dst, '#')
				}
				dst = append(dst, "Branch"...)
				var L int
				dst, L = appendQ(dst, m-1)
				rotate(dst[start:], mid-start)
				n += 1 + L + m
			}
		}
		if next < 0 {
			return dst, n, nil
		}
		cur = next
	}
}

// appendQ appends, after a "Ring" or "Branch" prefix, the length digit L,
// "]" and the L index symbols of q.
func appendQ(dst []byte, q int) ([]byte, int) {
	var digits [24]int
	L := 0
	if q == 0 {
		L = 1
	}
	for v := q; v > 0; v /= 16 {
		digits[L] = v % 16
		L++
	}
	dst = strconv.AppendInt(dst, int64(L), 10)
	dst = append(dst, ']')
	for i := L - 1; i >= 0; i-- {
		dst = append(dst, indexAlphabet[digits[i]]...)
	}
	return dst, L
}

// rotate moves b[k:] in front of b[:k] in place.
func rotate(b []byte, k int) {
	reverse(b[:k])
	reverse(b[k:])
	reverse(b)
}

func reverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// appendRingBonds writes the bond part of a ring symbol (selfies'
// _ring_bonds_to_selfies): '=' or '#' for a multiple bond, nothing for a
// plain single bond, and a pair of marks from -, / and \ when either end is
// directional.
func appendRingBonds(dst []byte, lbond, rbond *smiles.Bond) []byte {
	if lbond.Order != smiles.Single || (lbond.Stereo == 0 && rbond.Stereo == 0) {
		switch lbond.Order {
		case smiles.Double:
			dst = append(dst, '=')
		case smiles.Triple:
			dst = append(dst, '#')
		}
		return dst
	}
	for _, b := range [2]*smiles.Bond{lbond, rbond} {
		if b.Stereo == 0 {
			dst = append(dst, '-')
		} else {
			dst = append(dst, b.Stereo)
		}
	}
	return dst
}
