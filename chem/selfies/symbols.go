package selfies

import "strings"

// indexAlphabet is selfies' INDEX_ALPHABET: the symbols that encode the
// digits 0–15 of the ring and branch sizes Q, in base 16, big-endian.
var indexAlphabet = [16]string{
	"[C]", "[Ring1]", "[Ring2]",
	"[Branch1]", "[=Branch1]", "[#Branch1]",
	"[Branch2]", "[=Branch2]", "[#Branch2]",
	"[O]", "[N]", "[=N]", "[=C]", "[#C]", "[S]", "[P]",
}

// IndexAlphabet returns the 16 index symbols in digit order.
func IndexAlphabet() []string { return append([]string(nil), indexAlphabet[:]...) }

// indexValue returns the digit of an index symbol; any other symbol is 0.
func indexValue(sym string) int {
	switch sym {
	case "[C]":
		return 0
	case "[Ring1]":
		return 1
	case "[Ring2]":
		return 2
	case "[Branch1]":
		return 3
	case "[=Branch1]":
		return 4
	case "[#Branch1]":
		return 5
	case "[Branch2]":
		return 6
	case "[=Branch2]":
		return 7
	case "[#Branch2]":
		return 8
	case "[O]":
		return 9
	case "[N]":
		return 10
	case "[=N]":
		return 11
	case "[=C]":
		return 12
	case "[#C]":
		return 13
	case "[S]":
		return 14
	case "[P]":
		return 15
	}
	return 0
}

// Split returns the symbols of a SELFIES string in order, as
// selfies.split_selfies yields them: each bracketed symbol, and "." for a
// dot that directly follows a closing bracket. Text before the first '['
// is skipped; text after a ']' (other than one '.') starts the next symbol,
// as upstream does, so "[C]x[O]" gives "[C]" and "x[O]". Trailing text
// without a closing ']' is an error (upstream calls it a hanging '[').
func Split(s string) ([]string, error) {
	var out []string
	var err error
	splitSymbols(s, func(sym string, off int) bool {
		out = append(out, sym)
		return true
	}, func(off int) {
		err = &DecodeError{Index: len(out), Offset: off, Reason: "malformed SELFIES string, hanging '[' bracket"}
	})
	return out, err
}

// splitSymbols walks the symbols of s, calling yield with each symbol and
// its byte offset until yield returns false, and hanging with the offset of
// an unclosed '['.
func splitSymbols(s string, yield func(sym string, off int) bool, hanging func(off int)) {
	left := strings.IndexByte(s, '[')
	for left >= 0 && left < len(s) {
		r := strings.IndexByte(s[left+1:], ']')
		if r < 0 {
			hanging(left)
			return
		}
		right := left + 1 + r
		if !yield(s[left:right+1], left) {
			return
		}
		left = right + 1
		if left < len(s) && s[left] == '.' {
			if !yield(".", left) {
				return
			}
			left++
		}
		// split_selfies takes the next symbol from here to the next ']',
		// so text between symbols becomes part of the next symbol.
	}
}

// LooksLike reports whether s is made only of bracketed symbols (and '.'
// between fragments), which is how a file mixing SMILES and SELFIES lines is
// told apart. A leading '[' is not enough: SMILES such as "[NH3+]CC(=O)[O-]"
// start with one too (ZINC250k has thousands).
func LooksLike(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return false
			}
			i += j + 1
		default:
			return false
		}
	}
	return true
}

// Len returns the number of symbols in s as selfies.len_selfies counts them:
// the number of '[' plus the number of '.'.
func Len(s string) int {
	return strings.Count(s, "[") + strings.Count(s, ".")
}

// symbolKind classifies a symbol the way the selfies decoder does, by
// looking at its tail: "ch" before the last two characters is a branch,
// "ng" a ring, "eps" anywhere an epsilon, anything else an atom.
type symbolKind uint8

const (
	kindAtom symbolKind = iota
	kindBranch
	kindRing
	kindEpsilon
)

func classify(sym string) symbolKind {
	if n := len(sym); n >= 4 {
		switch sym[n-4 : n-2] {
		case "ch":
			return kindBranch
		case "ng":
			return kindRing
		}
	}
	if strings.Contains(sym, "eps") {
		return kindEpsilon
	}
	return kindAtom
}

// branchSymbol returns the bond order and index length L of a branch symbol.
func branchSymbol(sym string) (order, L int, ok bool) {
	body, ok := strings.CutPrefix(sym, "[")
	if !ok {
		return 0, 0, false
	}
	order = 1
	if len(body) > 0 && (body[0] == '=' || body[0] == '#') {
		order = 2
		if body[0] == '#' {
			order = 3
		}
		body = body[1:]
	}
	switch body {
	case "Branch1]":
		return order, 1, true
	case "Branch2]":
		return order, 2, true
	case "Branch3]":
		return order, 3, true
	}
	return 0, 0, false
}

// ringSymbol returns the bond order, index length L and the stereo marks of
// the two ends of a ring symbol: [RingL], [=RingL], [#RingL], or a pair of
// -, / and \ (not "--") such as [\/RingL].
func ringSymbol(sym string) (order, L int, lstereo, rstereo byte, ok bool) {
	body, ok := strings.CutPrefix(sym, "[")
	if !ok {
		return
	}
	order = 1
	i := strings.Index(body, "Ring")
	if i < 0 {
		return 0, 0, 0, 0, false
	}
	prefix, rest := body[:i], body[i+4:]
	switch rest {
	case "1]":
		L = 1
	case "2]":
		L = 2
	case "3]":
		L = 3
	default:
		return 0, 0, 0, 0, false
	}
	stereo := func(c byte) (byte, bool) {
		switch c {
		case '-':
			return 0, true
		case '/', '\\':
			return c, true
		}
		return 0, false
	}
	switch len(prefix) {
	case 0:
	case 1:
		switch prefix[0] {
		case '=':
			order = 2
		case '#':
			order = 3
		default:
			return 0, 0, 0, 0, false
		}
	case 2:
		if prefix == "--" {
			return 0, 0, 0, 0, false
		}
		var ok1, ok2 bool
		lstereo, ok1 = stereo(prefix[0])
		rstereo, ok2 = stereo(prefix[1])
		if !ok1 || !ok2 {
			return 0, 0, 0, 0, false
		}
	default:
		return 0, 0, 0, 0, false
	}
	return order, L, lstereo, rstereo, true
}
