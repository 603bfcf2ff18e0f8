package selfies

import (
	"strings"

	"github.com/nfbo/nfbo/chem/smiles"
)

// Decoder translates SELFIES strings into SMILES under a set of constraints.
// It keeps scratch storage between calls, so it is not safe for concurrent
// use; use one Decoder per goroutine.
type Decoder struct {
	c          Constraints
	compatible bool

	g     smiles.Graph
	caps  []int // bonding capacity per atom, H already subtracted
	rings []pendingRing
	made  []int
	it    symIter
	buf   []byte
}

// pendingRing is a ring bond requested by a ring symbol; ring bonds are
// formed after the whole string is read.
type pendingRing struct {
	left, right      int
	order            int
	lstereo, rstereo byte
}

// NewDecoder returns a decoder that uses a copy of c.
func NewDecoder(c Constraints) *Decoder {
	return &Decoder{c: c.Clone()}
}

// SetCompatible makes the decoder accept the symbols of SELFIES before
// version 2 ([Branch1_2], [Expl=Ring1], [C@@Hexpl], …) by translating them
// first, as selfies.decoder(compatible=True) does. The result may still
// differ from what the old versions decoded.
func (d *Decoder) SetCompatible(on bool) { d.compatible = on }

// Constraints returns a copy of the decoder's constraints.
func (d *Decoder) Constraints() Constraints { return d.c.Clone() }

// Decode translates a SELFIES string into SMILES, exactly as selfies 2.0.0's
// decoder does with the same constraints. The result always obeys the
// constraints. An unknown symbol, an atom with more hydrogens than its
// capacity, or a '[' without a ']' is a *DecodeError.
func (d *Decoder) Decode(s string) (string, error) {
	b, err := d.AppendDecode(d.buf[:0], s)
	d.buf = b[:0]
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendDecode is Decode that appends the SMILES to dst.
func (d *Decoder) AppendDecode(dst []byte, s string) ([]byte, error) {
	d.g.Reset()
	d.caps = d.caps[:0]
	d.rings = d.rings[:0]
	if n := strings.Count(s, "["); cap(d.caps) < n {
		// A fresh decoder: size its storage once instead of growing it.
		d.g.Grow(n)
		d.caps = make([]int, 0, n)
	}

	// selfies splits on every '.' first, even inside brackets, and derives
	// each fragment from state 0.
	base, index := 0, 0
	for {
		end := strings.IndexByte(s[base:], '.')
		frag := s[base:]
		if end >= 0 {
			frag = s[base : base+end]
		}
		d.it.reset(frag, base, index, d.compatible)
		if _, err := d.derive(-1, 0, -1); err != nil {
			return dst, err
		}
		if end < 0 {
			break
		}
		index = d.it.index + 1 // the '.' counts as a symbol
		base += end + 1
	}
	d.formRings()
	return d.g.AppendSMILES(dst)
}

// symIter yields the symbols of one fragment lazily, as selfies' generator
// does: a hanging '[' is reported only when the derivation reaches it, and
// [nop] is skipped.
type symIter struct {
	s          string
	base       int // byte offset of s in the whole string
	pos        int // next byte to read; -1 when exhausted
	index      int // index of the next symbol in the whole string
	compatible bool
}

func (it *symIter) reset(s string, base, index int, compatible bool) {
	*it = symIter{s: s, base: base, index: index, compatible: compatible}
	it.pos = strings.IndexByte(s, '[')
}

// next returns the next symbol, its index and byte offset; ok is false at
// the end of the fragment.
func (it *symIter) next() (sym string, index, off int, ok bool, err error) {
	for {
		if it.pos < 0 || it.pos >= len(it.s) {
			return "", 0, 0, false, nil
		}
		left := it.pos
		r := strings.IndexByte(it.s[left+1:], ']')
		if r < 0 {
			it.pos = -1
			return "", 0, 0, false, &DecodeError{
				Index: it.index, Offset: it.base + left,
				Reason: "malformed SELFIES string, hanging '[' bracket",
			}
		}
		right := left + 1 + r
		sym = it.s[left : right+1]
		it.pos = right + 1
		index, off = it.index, it.base+left
		it.index++
		if sym == "[nop]" {
			continue
		}
		if it.compatible {
			sym = modernizeSymbol(sym)
		}
		return sym, index, off, true, nil
	}
}

// derive ports selfies' _derive_mol_from_symbols: it reads symbols from the
// iterator, at most maxDerive of them (-1: no limit), starting in state
// initState and bonding to root (-1: none). It returns the number of symbols
// it consumed.
func (d *Decoder) derive(maxDerive, initState, root int) (int, error) {
	n := 0
	state := initState
	prev := root
	more := func() bool { return maxDerive < 0 || n < maxDerive }

	for more() {
		sym, idx, off, ok, err := d.it.next()
		if err != nil {
			return n, err
		}
		if !ok {
			break
		}
		n++
		var next int
		stop := false

		switch classify(sym) {
		case kindBranch:
			order, L, ok := branchSymbol(sym)
			if !ok {
				return n, invalidSymbol(sym, idx, off)
			}
			if state <= 1 {
				next = state // ignored, and its index symbols are not read
				break
			}
			binit := min(state-1, order)
			next = state - binit
			q, err := d.readIndex(L)
			if err != nil {
				return n, err
			}
			m, err := d.derive(q+1, binit, prev)
			if err != nil {
				return n, err
			}
			n += L + m

		case kindRing:
			order, L, ls, rs, ok := ringSymbol(sym)
			if !ok {
				return n, invalidSymbol(sym, idx, off)
			}
			if state == 0 {
				next = 0
				break
			}
			ringOrder := min(order, state)
			if left := state - ringOrder; left == 0 {
				stop = true
			} else {
				next = left
			}
			q, err := d.readIndex(L)
			if err != nil {
				return n, err
			}
			n += L
			d.rings = append(d.rings, pendingRing{
				left: max(0, prev-(q+1)), right: prev,
				order: ringOrder, lstereo: ls, rstereo: rs,
			})

		case kindEpsilon:
			if state == 0 {
				next = 0
			} else {
				stop = true
			}

		default:
			atom, capacity, order, stereo, ok := d.atomSymbol(sym)
			if !ok {
				return n, invalidSymbol(sym, idx, off)
			}
			if state == 0 {
				order = 0
			}
			order = min(order, state, capacity)
			if left := capacity - order; left == 0 {
				stop = true
			} else {
				next = left
			}
			switch {
			case order > 0:
				i := d.addAtom(atom, capacity, false)
				d.g.AddBond(prev, i, smiles.BondOrder(2*order), stereo)
				prev = i
			case state == 0:
				prev = d.addAtom(atom, capacity, true)
			default:
				// Capacity 0 in a nonzero state: selfies drops the atom and
				// ends the chain.
				prev = -1
			}
		}
		if stop {
			break
		}
		state = next
	}
	// Consume what is left of this branch's budget.
	for more() {
		_, _, _, ok, err := d.it.next()
		if err != nil {
			return n, err
		}
		if !ok {
			break
		}
		n++
	}
	return n, nil
}

func invalidSymbol(sym string, idx, off int) error {
	return &DecodeError{Symbol: sym, Index: idx, Offset: off, Reason: "invalid symbol"}
}

func (d *Decoder) addAtom(a smiles.Atom, capacity int, root bool) int {
	d.caps = append(d.caps, capacity)
	return d.g.AddAtom(a, root)
}

// readIndex reads L index symbols as a base-16 number; a missing symbol
// counts as 0.
func (d *Decoder) readIndex(L int) (int, error) {
	q := 0
	for range L {
		sym, _, _, ok, err := d.it.next()
		if err != nil {
			return 0, err
		}
		v := 0
		if ok {
			v = indexValue(sym)
		}
		q = q*16 + v
	}
	return q, nil
}

// atomSymbol parses an atom symbol with selfies' pattern
// ^\[([=#/\\]?)(\d*)([A-Z][a-z]?)(@{0,2})((?:H\d)?)((?:[+-][1-9]+)?)\]$
// and returns the atom, its capacity (H subtracted), the requested bond
// order and the stereo mark. ok is false for a malformed symbol, an unknown
// element, or a negative capacity.
func (d *Decoder) atomSymbol(sym string) (a smiles.Atom, capacity, order int, stereo byte, ok bool) {
	if len(sym) < 3 || sym[0] != '[' || sym[len(sym)-1] != ']' {
		return
	}
	body := sym[1 : len(sym)-1]
	order = 1
	i := 0
	if len(body) > 0 {
		switch body[0] {
		case '=':
			order, i = 2, 1
		case '#':
			order, i = 3, 1
		case '/', '\\':
			stereo, i = body[0], 1
		}
	}
	atomPart := body[i:]
	is := i
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		i++
	}
	iso := body[is:i]
	if i >= len(body) || body[i] < 'A' || body[i] > 'Z' {
		return
	}
	es := i
	i++
	if i < len(body) && body[i] >= 'a' && body[i] <= 'z' {
		i++
	}
	elem := body[es:i]
	cs := i
	for k := 0; k < 2 && i < len(body) && body[i] == '@'; k++ {
		i++
	}
	chir := body[cs:i]
	h := 0
	if i+1 < len(body) && body[i] == 'H' && body[i+1] >= '0' && body[i+1] <= '9' {
		h = int(body[i+1] - '0')
		i += 2
	}
	charge := 0
	if i < len(body) && (body[i] == '+' || body[i] == '-') {
		j := i + 1
		for j < len(body) && body[j] >= '1' && body[j] <= '9' {
			j++
		}
		if j == i+1 || j-i-1 > 9 {
			// No digits: no match. More than nine digits: Python would
			// take it, but such charges are not chemistry.
			return
		}
		for _, c := range body[i+1 : j] {
			charge = charge*10 + int(c-'0')
		}
		if body[i] == '-' {
			charge = -charge
		}
		i = j
	}
	if i != len(body) {
		return
	}
	if smiles.IsOrganic(atomPart) {
		a = smiles.Atom{Element: elem, HCount: smiles.ImplicitH}
		return a, d.c.Capacity(elem, 0), order, stereo, true
	}
	if !smiles.IsElement(elem) {
		return
	}
	for len(iso) > 1 && iso[0] == '0' {
		iso = iso[1:] // as Python's int() reads it
	}
	a = smiles.Atom{Element: elem, Isotope: iso, Chirality: chir, HCount: h, Charge: charge}
	capacity = d.c.Capacity(elem, charge) - h
	if capacity < 0 {
		return a, 0, 0, 0, false // too many Hs, e.g. [CH5]
	}
	return a, capacity, order, stereo, true
}

// formRings forms the pending ring bonds in order (selfies'
// _form_rings_bilocally): a ring bond needs free capacity at both ends, is
// capped by it, and raises the order of an existing bond (at most triple)
// instead of adding a second one. New ring bonds go to the front of each
// atom's out-bonds, after the ring bonds made before them.
func (d *Decoder) formRings() {
	n := d.g.Len()
	if cap(d.made) < n {
		d.made = make([]int, n)
	}
	made := d.made[:n]
	clear(made)
	for _, r := range d.rings {
		l, rt := r.left, r.right
		if l == rt {
			continue
		}
		lfree := d.caps[l] - d.g.BondCount(l)/2
		rfree := d.caps[rt] - d.g.BondCount(rt)/2
		if lfree <= 0 || rfree <= 0 {
			continue
		}
		order := min(r.order, lfree, rfree)
		if b := d.g.DirBond(l, rt); b != nil {
			newOrder := min(order+int(b.Order)/2, 3)
			d.g.UpdateBondOrder(l, rt, smiles.BondOrder(2*newOrder))
			continue
		}
		d.g.AddRingBond(l, rt, smiles.BondOrder(2*order), r.lstereo, r.rstereo, made[l], made[rt])
		made[l]++
		made[rt]++
	}
}

// modernizeSymbol translates a SELFIES symbol from before version 2 into its
// version 2 form (selfies' modernize_symbol); other symbols are returned
// unchanged.
func modernizeSymbol(sym string) string {
	for L := byte('1'); L <= '3'; L++ {
		l := string(L)
		switch sym {
		case "[Branch" + l + "_1]":
			return "[Branch" + l + "]"
		case "[Branch" + l + "_2]":
			return "[=Branch" + l + "]"
		case "[Branch" + l + "_3]":
			return "[#Branch" + l + "]"
		case "[Expl=Ring" + l + "]":
			return "[=Ring" + l + "]"
		case "[Expl#Ring" + l + "]":
			return "[#Ring" + l + "]"
		case "[Expl/Ring" + l + "]":
			return "[//Ring" + l + "]"
		case "[Expl\\Ring" + l + "]":
			return "[\\\\Ring" + l + "]"
		}
	}
	if !strings.HasSuffix(sym, "expl]") || len(sym) < 6 {
		return sym
	}
	bond, atomSym := "", sym[1:len(sym)-5]
	if strings.IndexByte("=#/\\", sym[1]) >= 0 {
		bond, atomSym = sym[1:2], sym[2:len(sym)-5]
	}
	g := smiles.Graph{}
	if err := g.Parse("[" + atomSym + "]"); err != nil || g.Len() != 1 || g.Atoms[0].Aromatic {
		// Parse of a lone bracket atom fails exactly when selfies'
		// smiles_to_atom returns None.
		return sym
	}
	return "[" + bond + string(smiles.AppendAtom(nil, &g.Atoms[0], false)) + "]"
}
