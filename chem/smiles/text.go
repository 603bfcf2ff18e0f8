package smiles

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// TextError reports a byte that cannot be part of a SMILES string. SMILES are
// printable ASCII; a non-ASCII byte most often means a file in another
// encoding or a binary file, and a tool that stops reading at such a byte
// (RDKit does) would silently score the prefix, another molecule.
type TextError struct {
	SMILES string
	Offset int // 0-based byte offset of the first bad byte in SMILES
}

// Error names the character (or the invalid UTF-8 byte), its byte offset and
// the input, quoted and clipped by Quote.
func (e *TextError) Error() string {
	s := e.SMILES[e.Offset:]
	var what string
	switch r, size := utf8.DecodeRuneInString(s); {
	case r == utf8.RuneError && size <= 1:
		what = fmt.Sprintf("invalid UTF-8 byte 0x%02x", s[0])
	case r < 0x80:
		what = fmt.Sprintf("control character 0x%02x", s[0])
	default:
		what = fmt.Sprintf("non-ASCII character %q (U+%04X)", r, r)
	}
	return fmt.Sprintf("smiles: %s at byte offset %d of %s (SMILES are printable ASCII)", what, e.Offset, Quote(e.SMILES))
}

// CheckText returns a *TextError for the first byte of s that is not
// printable ASCII (0x20 to 0x7e), or nil.
func CheckText(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return &TextError{SMILES: s, Offset: i}
		}
	}
	return nil
}

// quoteMax is the longest input Quote shows whole; a longer one is clipped,
// so that a bad megabyte-long line gives a message of one line.
const quoteMax = 80

// Quote returns s as a Go string literal (control characters and invalid
// UTF-8 escaped, so that no input reaches a terminal raw). An input longer
// than 80 bytes is clipped to its first 80, followed by an ellipsis and its
// length: "CCCC"… (1000001 bytes).
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	cut := quoteMax
	// Clip on a character boundary where there is one near, so that a valid
	// character is not shown as escaped bytes.
	for k := cut; k > cut-utf8.UTFMax && k > 0; k-- {
		if utf8.RuneStart(s[k]) {
			cut = k
			break
		}
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// FirstField returns the first field of line, as separated by ASCII white space, and its byte offset in line;
// "" when the line is blank. Line-oriented SMILES files carry the SMILES in that field (and a name or score
// after it).
func FirstField(line string) (field string, start int) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' }
	for start < len(line) && isSpace(line[start]) {
		start++
	}
	end := start
	for end < len(line) && !isSpace(line[end]) {
		end++
	}
	return line[start:end], start
}
