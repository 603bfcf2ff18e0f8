package smiles

import (
	"fmt"
	"strconv"
)

// SyntaxError describes malformed or unsupported SMILES. Offset is the byte
// offset that selfies 2.0.0 blames (it can be -1 for an empty fragment at the
// very start, as in the reference).
type SyntaxError struct {
	SMILES string
	Offset int
	Msg    string
}

// Error formats the error with its offset and the input, quoted and clipped
// by Quote.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("smiles: %s at offset %d in %s", e.Msg, e.Offset, Quote(e.SMILES))
}

type tokenKind uint8

const (
	tokAtom tokenKind = iota
	tokBranch
	tokRing
	tokDot
)

// token is one SMILES token: an atom, branch bracket, ring number or dot,
// with the position of the bond character in front of it (-1 if none).
type token struct {
	bond       int
	start, end int
	kind       tokenKind
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBondChar(c byte) bool {
	switch c {
	case '-', '/', '\\', ':', '=', '#':
		return true
	}
	return false
}

// tokenize splits s into tokens as selfies' tokenize_smiles does. selfies
// tokenises the whole string before parsing, so its errors come first.
func tokenize(dst []token, s string) ([]token, error) {
	i := 0
	for i < len(s) {
		if s[i] == '.' {
			dst = append(dst, token{bond: -1, start: i, end: i + 1, kind: tokDot})
			i++
			continue
		}
		bond := -1
		if isBondChar(s[i]) {
			bond = i
			i++
		}
		var t token
		switch {
		case i == len(s):
			return dst, &SyntaxError{s, i, "hanging bond"}
		case isAlpha(s[i]):
			n := 1
			if i+2 <= len(s) && (s[i:i+2] == "Br" || s[i:i+2] == "Cl") {
				n = 2
			}
			t = token{bond, i, i + n, tokAtom}
		case s[i] == '[':
			r := -1
			for j := i + 1; j < len(s); j++ {
				if s[j] == ']' {
					r = j
					break
				}
			}
			if r < 0 {
				return dst, &SyntaxError{s, i, "hanging bracket ["}
			}
			t = token{bond, i, r + 1, tokAtom}
		case s[i] == '(' || s[i] == ')':
			// selfies drops a bond character in front of a bracket.
			t = token{-1, i, i + 1, tokBranch}
		case isDigit(s[i]):
			t = token{bond, i, i + 1, tokRing}
		case s[i] == '%':
			if i+3 > len(s) || !isDigit(s[i+1]) || !isDigit(s[i+2]) {
				end := min(i+3, len(s))
				return dst, &SyntaxError{s, i, fmt.Sprintf("invalid ring number '%%%s'", s[i+1:end])}
			}
			t = token{bond, i, i + 3, tokRing}
		default:
			return dst, &SyntaxError{s, i, fmt.Sprintf("unrecognized symbol %q", s[i])}
		}
		dst = append(dst, t)
		i = t.end
	}
	return dst, nil
}

// Parse parses s into a new Graph. The graph is not kekulised.
func Parse(s string) (*Graph, error) {
	g := new(Graph)
	if err := g.Parse(s); err != nil {
		return nil, err
	}
	return g, nil
}

// ringOpen is a ring number waiting for its closing partner.
type ringOpen struct {
	label string // "1" or "%12": selfies keys rings by their text
	tok   token
	atom  int
	pos   int
}

// Parse resets g and parses s into it, following selfies' smiles_to_mol. The
// graph is not kekulised. Errors are *SyntaxError.
func (g *Graph) Parse(s string) error {
	g.Reset()
	if s == "" {
		return &SyntaxError{s, 0, "empty SMILES"}
	}
	var err error
	g.tokens, err = tokenize(g.tokens[:0], s)
	if err != nil {
		return err
	}
	toks := g.tokens
	g.Grow(len(toks))
	for len(toks) > 0 {
		toks, err = g.parseFragment(s, toks)
		if err != nil {
			return err
		}
	}
	return nil
}

// parseFragment consumes tokens up to and including the next dot and returns
// the rest (selfies' _derive_mol_from_tokens).
func (g *Graph) parseFragment(s string, toks []token) ([]token, error) {
	// prev holds the atom that the next atom bonds to, one entry per open
	// branch; -1 means none (chain start).
	prev := append(g.stack[:0], -1)
	defer func() { g.stack = prev[:0] }()
	branches := g.branches[:0] // start offsets of open '(' tokens
	defer func() { g.branches = branches[:0] }()
	rings := g.rings[:0]
	defer func() { g.rings = rings[:0] }()
	chainStart := true
	var tok token

	for len(toks) > 0 {
		tok, toks = toks[0], toks[1:]
		prevAtom := prev[len(prev)-1]
		if tok.kind == tokDot {
			break
		}
		if tok.kind == tokAtom {
			a, ok := parseAtom(s[tok.start:tok.end])
			if !ok {
				return nil, &SyntaxError{s, tok.start, fmt.Sprintf("invalid atom symbol '%s'", s[tok.start:tok.end])}
			}
			cur := g.attachAtom(s, tok.bond, a, prevAtom)
			prev[len(prev)-1] = cur
			chainStart = false
			continue
		}
		if chainStart {
			return nil, &SyntaxError{s, tok.start, "SMILES chain begins with non-atom"}
		}
		switch tok.kind {
		case tokBranch:
			if s[tok.start] == '(' {
				branches = append(branches, tok.start)
				prev = append(prev, prevAtom)
				chainStart = true
			} else {
				if len(branches) == 0 {
					return nil, &SyntaxError{s, tok.start, "hanging ')' bracket"}
				}
				branches = branches[:len(branches)-1]
				prev = prev[:len(prev)-1]
			}
		case tokRing:
			label := s[tok.start:tok.end]
			k := -1
			for j := range rings {
				if rings[j].label == label {
					k = j
					break
				}
			}
			if k < 0 {
				pos := g.AddPlaceholder(prevAtom)
				rings = append(rings, ringOpen{label, tok, prevAtom, pos})
			} else {
				open := rings[k]
				// Python pops from an insertion-ordered dict; keep the order.
				rings = append(rings[:k], rings[k+1:]...)
				if err := g.makeRingBond(s, open, tok, prevAtom); err != nil {
					return nil, err
				}
			}
		}
	}

	if len(g.Atoms) == 0 {
		return nil, &SyntaxError{s, tok.start - 1, "empty SMILES fragment"}
	}
	if len(branches) > 0 {
		return nil, &SyntaxError{s, branches[len(branches)-1], "hanging '(' bracket"}
	}
	if len(rings) > 0 {
		last := rings[len(rings)-1]
		return nil, &SyntaxError{s, last.tok.start, fmt.Sprintf("hanging ring number '%s'", last.label)}
	}
	return toks, nil
}

// bondOf returns the order and stereo mark of the bond character at offset
// i of s (-1 for none: a single bond).
func bondOf(s string, i int) (BondOrder, byte) {
	if i < 0 {
		return Single, 0
	}
	switch s[i] {
	case '/', '\\':
		return Single, s[i]
	case ':':
		return Aromatic, 0
	case '=':
		return Double, 0
	case '#':
		return Triple, 0
	}
	return Single, 0
}

func (g *Graph) attachAtom(s string, bond int, a Atom, prev int) int {
	root := prev < 0
	idx := g.AddAtom(a, root)
	if !root {
		order, stereo := bondOf(s, bond)
		if g.Atoms[prev].Aromatic && a.Aromatic && bond < 0 {
			order = Aromatic
		}
		g.AddBond(prev, idx, order, stereo)
	}
	return idx
}

func isStereo(s string, i int) bool { return i >= 0 && (s[i] == '/' || s[i] == '\\') }

func (g *Graph) makeRingBond(s string, open ringOpen, closeTok token, ratom int) error {
	latom := open.atom
	if g.HasBond(latom, ratom) {
		return &SyntaxError{s, open.tok.start, "ring bond specified between already-bonded atoms"}
	}
	lb, rb := open.tok.bond, closeTok.bond
	// The two ends must agree: equal characters, at most one given, or two
	// stereo marks.
	b0, b1 := lb, rb
	if b0 < 0 {
		b0, b1 = b1, b0
	}
	switch {
	case b0 < 0 && b1 < 0, b1 < 0:
	case s[b0] == s[b1]:
	case isStereo(s, b0) && isStereo(s, b1):
	default:
		return &SyntaxError{s, open.tok.start, "mismatched ring bonds"}
	}
	lorder, lstereo := bondOf(s, lb)
	rorder, rstereo := bondOf(s, rb)
	if g.Atoms[latom].Aromatic && g.Atoms[ratom].Aromatic && lb < 0 && rb < 0 {
		lorder, rorder = Aromatic, Aromatic
	}
	g.AddRingBond(latom, ratom, max(lorder, rorder), lstereo, rstereo, open.pos, -1)
	return nil
}

// organic reports whether sym is in selfies' ORGANIC_SUBSET.
func organic(sym string) bool {
	switch sym {
	case "B", "C", "N", "O", "S", "P", "F", "Cl", "Br", "I":
		return true
	}
	return false
}

// aromaticSubset reports whether sym is in selfies' AROMATIC_SUBSET.
func aromaticSubset(sym string) bool {
	switch sym {
	case "b", "al", "c", "si", "n", "p", "as", "o", "s", "se", "te":
		return true
	}
	return false
}

// IsOrganic reports whether element is in the SMILES organic subset
// (B C N O S P F Cl Br I), whose atoms may be written without brackets.
func IsOrganic(element string) bool { return organic(element) }

func capitalize(sym string) string {
	if len(sym) == 0 || sym[0] < 'a' || sym[0] > 'z' {
		return sym
	}
	// Avoid allocating for the common aromatic symbols.
	switch sym {
	case "b":
		return "B"
	case "c":
		return "C"
	case "n":
		return "N"
	case "o":
		return "O"
	case "p":
		return "P"
	case "s":
		return "S"
	case "se":
		return "Se"
	case "te":
		return "Te"
	case "as":
		return "As"
	case "si":
		return "Si"
	case "al":
		return "Al"
	}
	b := []byte(sym)
	b[0] -= 'a' - 'A'
	return string(b)
}

// parseAtom converts an atom token to an Atom (selfies' smiles_to_atom).
func parseAtom(sym string) (Atom, bool) {
	if len(sym) >= 2 && sym[0] == '[' && sym[len(sym)-1] == ']' {
		return parseBracketAtom(sym)
	}
	if organic(sym) {
		return Atom{Element: sym, HCount: ImplicitH}, true
	}
	if aromaticSubset(sym) {
		return Atom{Element: capitalize(sym), Aromatic: true, HCount: ImplicitH}, true
	}
	return Atom{}, false
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

// parseBracketAtom matches the selfies pattern
// ^\[(\d*)([A-Za-z][a-z]?)(@{0,2})((?:H\d?)?)((?:\++|-+|[+-]\d+)?)((?::\d+)?)\]$
// by hand. No backtracking is needed: every later part begins with a
// character that cannot extend the part before it.
func parseBracketAtom(sym string) (Atom, bool) {
	body := sym[1 : len(sym)-1]
	i := 0
	for i < len(body) && isDigit(body[i]) {
		i++
	}
	iso := body[:i]
	if i >= len(body) || !isAlpha(body[i]) {
		return Atom{}, false
	}
	es := i
	i++
	if i < len(body) && isLower(body[i]) {
		i++
	}
	elem := body[es:i]
	ch := i
	for k := 0; k < 2 && i < len(body) && body[i] == '@'; k++ {
		i++
	}
	chir := body[ch:i]
	h := 0
	if i < len(body) && body[i] == 'H' {
		h = 1
		i++
		if i < len(body) && isDigit(body[i]) {
			h = int(body[i] - '0')
			i++
		}
	}
	charge := 0
	if i < len(body) && (body[i] == '+' || body[i] == '-') {
		sign := body[i]
		j := i + 1
		if j < len(body) && isDigit(body[j]) {
			for j < len(body) && isDigit(body[j]) {
				j++
			}
			v, err := strconv.Atoi(body[i+1 : j])
			if err != nil || v > 1<<30 {
				// Python's int is unbounded; charges this large are not
				// chemistry and are rejected here.
				return Atom{}, false
			}
			charge = v
		} else {
			for j < len(body) && body[j] == sign {
				j++
			}
			charge = j - i
		}
		if sign == '-' {
			charge = -charge
		}
		i = j
	}
	if i < len(body) && body[i] == ':' {
		j := i + 1
		for j < len(body) && isDigit(body[j]) {
			j++
		}
		if j == i+1 {
			return Atom{}, false
		}
		i = j
	}
	if i != len(body) {
		return Atom{}, false
	}
	aromatic := isLower(elem[0]) && aromaticSubset(elem)
	elem = capitalize(elem)
	if !IsElement(elem) {
		return Atom{}, false
	}
	return Atom{
		Element:   elem,
		Aromatic:  aromatic,
		Isotope:   normIsotope(iso),
		Chirality: chir,
		HCount:    h,
		Charge:    charge,
	}, true
}

// normIsotope writes a digit string as Python's str(int(s)) would.
func normIsotope(s string) string {
	if s == "" {
		return ""
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
