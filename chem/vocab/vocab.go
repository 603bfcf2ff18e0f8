// Package vocab maps SELFIES symbols to token ids and back, and turns
// molecules into the fixed-length id arrays the flow consumes.
//
// Conventions, as in NF-BO (github.com/mlvlab/NFBO,
// objective/guacamol/utils/mol_utils/data.py, class SELFIESDataset): id 0 is
// <start> (never produced by encoding), id 1 is <stop>, which also pads every
// sequence to the length T. A molecule of n symbols therefore needs T ≥ n+1.
package vocab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Ids of the two special tokens.
const (
	Start = 0 // <start>
	Stop  = 1 // <stop>, also the padding
)

// Names of the two special tokens.
const (
	StartToken = "<start>"
	StopToken  = "<stop>"
)

// Vocab is an immutable ordered list of tokens. A token listed twice (NF-BO's
// GuacaMol list has two such duplicates) keeps both ids for decoding; the
// later id wins for encoding, as in the reference's dict comprehension.
type Vocab struct {
	tokens []string
	index  map[string]int
}

// New returns a vocabulary of the given tokens in order. tokens[0] must be
// <start> and tokens[1] <stop>.
func New(tokens []string) (*Vocab, error) {
	if len(tokens) < 2 || tokens[Start] != StartToken || tokens[Stop] != StopToken {
		return nil, fmt.Errorf("vocab: the first two tokens must be %s and %s", StartToken, StopToken)
	}
	v := &Vocab{tokens: slices.Clone(tokens), index: make(map[string]int, len(tokens))}
	for i, t := range tokens {
		if t == "" {
			return nil, fmt.Errorf("vocab: token %d is empty", i)
		}
		v.index[t] = i
	}
	return v, nil
}

// Parse reads one token per line from r; blank lines are an error naming
// the source and line, since a blank token would shift every later id.
func Parse(r io.Reader, name string) (*Vocab, error) {
	var tokens []string
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			return nil, fmt.Errorf("vocab: %s:%d: empty token", name, line)
		}
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vocab: read %s: %w", name, err)
	}
	v, err := New(tokens)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// Load reads a vocabulary file written by WriteTo or listed one token per line.
func Load(path string) (*Vocab, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// WriteTo writes the tokens one per line.
func (v *Vocab) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	for _, t := range v.tokens {
		buf.WriteString(t)
		buf.WriteByte('\n')
	}
	return buf.WriteTo(w)
}

// Len returns the number of ids, V.
func (v *Vocab) Len() int { return len(v.tokens) }

// Tokens returns a copy of the tokens in id order.
func (v *Vocab) Tokens() []string { return slices.Clone(v.tokens) }

// Token returns the token of id i. It panics if i is out of range.
func (v *Vocab) Token(i int) string { return v.tokens[i] }

// ID returns the id of token t and whether t is in the vocabulary.
func (v *Vocab) ID(t string) (int, bool) {
	i, ok := v.index[t]
	return i, ok
}

// Contains reports whether t is in the vocabulary.
func (v *Vocab) Contains(t string) bool {
	_, ok := v.index[t]
	return ok
}

// ErrTooLong is wrapped by EncodeError when a molecule does not fit in T.
var ErrTooLong = errors.New("sequence too long")

// ErrUnknownToken is wrapped by EncodeError when a symbol is not in the vocabulary.
var ErrUnknownToken = errors.New("unknown token")

// EncodeError reports a molecule that cannot be turned into ids. Encode fills
// Token and Pos; callers that read files add File, Line and Molecule.
type EncodeError struct {
	File     string // source file, if known
	Line     int    // 1-based line in File, 0 if unknown
	Molecule string // the SELFIES (or SMILES) being encoded, if known
	Token    string // the offending token, for ErrUnknownToken
	Pos      int    // 0-based symbol index of Token, or the length for ErrTooLong
	Err      error  // ErrUnknownToken or ErrTooLong
}

// Error formats the error as "vocab: FILE:LINE: reason in MOLECULE".
func (e *EncodeError) Error() string {
	var b strings.Builder
	b.WriteString("vocab: ")
	if e.File != "" {
		fmt.Fprintf(&b, "%s:", e.File)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d: ", e.Line)
	} else if e.File != "" {
		b.WriteString(" ")
	}
	switch {
	case errors.Is(e.Err, ErrUnknownToken):
		fmt.Fprintf(&b, "unknown token %q at symbol %d", e.Token, e.Pos)
	default:
		fmt.Fprintf(&b, "%v: %d symbols", e.Err, e.Pos)
	}
	if e.Molecule != "" {
		fmt.Fprintf(&b, " in %q", e.Molecule)
	}
	return b.String()
}

// Unwrap returns ErrUnknownToken or ErrTooLong.
func (e *EncodeError) Unwrap() error { return e.Err }

// Encode writes the ids of tokens followed by <stop> padding to length t into
// dst, which it allocates when nil, and returns it. It fails with an
// *EncodeError when a token is unknown or len(tokens)+1 > t.
func (v *Vocab) Encode(dst []int, tokens []string, t int) ([]int, error) {
	if len(tokens)+1 > t {
		return nil, &EncodeError{Pos: len(tokens), Err: fmt.Errorf("%w for T = %d", ErrTooLong, t)}
	}
	if dst == nil {
		dst = make([]int, t)
	}
	if len(dst) != t {
		panic(fmt.Sprintf("vocab: dst has length %d, want %d", len(dst), t))
	}
	for i, tok := range tokens {
		id, ok := v.index[tok]
		if !ok {
			return nil, &EncodeError{Token: tok, Pos: i, Err: ErrUnknownToken}
		}
		dst[i] = id
	}
	for i := len(tokens); i < t; i++ {
		dst[i] = Stop
	}
	return dst, nil
}

// Decode returns the tokens of ids up to, not including, the first <stop>.
// <start> tokens are dropped, as the reference does when it strips them.
// It panics on an id outside [0, V).
func (v *Vocab) Decode(ids []int) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id == Stop {
			break
		}
		if id == Start {
			continue
		}
		out = append(out, v.tokens[id])
	}
	return out
}

// DecodeString returns Decode(ids) joined into one SELFIES string.
func (v *Vocab) DecodeString(ids []int) string {
	return strings.Join(v.Decode(ids), "")
}

// Build returns a vocabulary of <start>, <stop> and every distinct token of
// corpus in order of first appearance.
func Build(corpus [][]string) *Vocab {
	tokens := []string{StartToken, StopToken}
	seen := map[string]bool{StartToken: true, StopToken: true}
	for _, seq := range corpus {
		for _, t := range seq {
			if !seen[t] {
				seen[t] = true
				tokens = append(tokens, t)
			}
		}
	}
	v, err := New(tokens)
	if err != nil {
		panic(err) // unreachable: the first two tokens are set above
	}
	return v
}

// Union returns a's tokens followed by b's tokens not in a, in b's order, so
// every id of a keeps its meaning.
func Union(a, b *Vocab) *Vocab {
	tokens := slices.Clone(a.tokens)
	for _, t := range b.tokens {
		if !a.Contains(t) && !slices.Contains(tokens[len(a.tokens):], t) {
			tokens = append(tokens, t)
		}
	}
	v, err := New(tokens)
	if err != nil {
		panic(err) // unreachable: a starts with the special tokens
	}
	return v
}
