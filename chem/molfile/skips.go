package molfile

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/chem/vocab"
)

// ListedSkips is how many left-out molecules a Skips names one by one before it only counts them.
const ListedSkips = 20

// summaryTokens is how many unknown tokens Summary names, the most frequent first.
const summaryTokens = 8

// Skips tells what a reader of molecules leaves out: the first ListedSkips each on a line of its own (FILE:LINE:
// reason), then only counted, and once the file is read a one-line Summary by reason that names the unknown
// tokens that kept most molecules out. A file of millions of molecules in which a token the vocabulary lacks is
// common (ZINC's stereo tokens under GuacaMol's vocabulary) then neither floods the log nor hides why most of it
// was left out. Create it with NewSkips.
type Skips struct {
	who     string // the prefix of the Skips' own line
	note    func(string)
	n       int            // molecules left out
	unread  int            // not valid SMILES or SELFIES
	long    int            // longer than T allows
	repeats int            // the same molecule as an earlier line
	tokens  map[string]int // unknown tokens: the molecules each kept out (a molecule counts for its first)
}

// NewSkips returns a Skips that passes its lines to note, its own line (that it names no more) prefixed by
// "who: " unless who is empty; a nil note only counts.
func NewSkips(who string, note func(string)) *Skips {
	if note == nil {
		note = func(string) {}
	}
	if who != "" {
		who += ": "
	}
	return &Skips{who: who, note: note, tokens: make(map[string]int)}
}

// Add records a molecule left out with the message msg, its reason err: a *vocab.EncodeError for a token outside
// the vocabulary or a molecule too long for T, anything else (nil included) for a line that is no valid SMILES
// or SELFIES.
func (s *Skips) Add(msg string, err error) {
	var ee *vocab.EncodeError
	switch {
	case errors.As(err, &ee) && errors.Is(ee.Err, vocab.ErrUnknownToken):
		s.tokens[ee.Token]++
	case errors.As(err, &ee):
		s.long++
	default:
		s.unread++
	}
	s.list(msg)
}

// Repeat records a molecule left out as the same as an earlier line's.
func (s *Skips) Repeat(msg string) {
	s.repeats++
	s.list(msg)
}

// Len returns how many molecules were left out.
func (s *Skips) Len() int { return s.n }

// Unknown returns how many molecules were left out for a token outside the vocabulary.
func (s *Skips) Unknown() int { return s.n - s.unread - s.long - s.repeats }

// list names a left-out molecule while fewer than ListedSkips have been named.
func (s *Skips) list(msg string) {
	s.n++
	switch {
	case s.n <= ListedSkips:
		s.note(msg)
	case s.n == ListedSkips+1:
		s.note(fmt.Sprintf("%smore molecules left out; the first %d are named above, the rest counted below", s.who, ListedSkips))
	}
}

// Summary returns one line on what was left out of read molecules, and why, with the vocabulary named by
// vocabName and sequences of T symbols at most; "" when nothing was.
func (s *Skips) Summary(read int, vocabName string, t int) string {
	if s.n == 0 {
		return ""
	}
	var parts []string
	if n := s.Unknown(); n > 0 {
		toks := slices.SortedFunc(maps.Keys(s.tokens), func(a, b string) int {
			return cmp.Or(cmp.Compare(s.tokens[b], s.tokens[a]), strings.Compare(a, b))
		})
		named := make([]string, 0, summaryTokens+1)
		for i, tok := range toks {
			if i == summaryTokens {
				named = append(named, fmt.Sprintf("%d other tokens", len(toks)-i))
				break
			}
			named = append(named, fmt.Sprintf("%s %d", tok, s.tokens[tok]))
		}
		parts = append(parts, fmt.Sprintf("%d with a token outside %s (%s)", n, vocabName, strings.Join(named, ", ")))
	}
	if s.unread > 0 {
		parts = append(parts, fmt.Sprintf("%d that are no valid SMILES or SELFIES", s.unread))
	}
	if s.long > 0 {
		parts = append(parts, fmt.Sprintf("%d longer than T = %d allows", s.long, t))
	}
	if s.repeats > 0 {
		parts = append(parts, fmt.Sprintf("%d repeats of an earlier molecule", s.repeats))
	}
	return fmt.Sprintf("%d of %d molecules left out: %s", s.n, read, strings.Join(parts, "; "))
}
