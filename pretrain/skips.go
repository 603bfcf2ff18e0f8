package pretrain

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/chem/vocab"
)

// maxListedSkips is how many left-out molecules a run names one by one before it only counts them.
const maxListedSkips = 20

// maxSummaryTokens is how many unknown tokens the summary names, the most frequent first.
const maxSummaryTokens = 8

// skipLog reports the molecules a run leaves out: the first maxListedSkips each on a line of its own (FILE:LINE:
// reason), then only counted, and once the data are read a summary by reason with the unknown tokens that kept
// most molecules out. A library of millions of molecules in which a token the vocabulary lacks is common (ZINC's
// stereo tokens under GuacaMol's vocabulary) then neither floods the log, whose lines a GPU window must bring
// back, nor hides why most of it was not trained on.
type skipLog struct {
	note   func(string)
	n      int            // molecules left out
	unread int            // lines that are no valid SMILES or SELFIES
	long   int            // molecules longer than T allows
	tokens map[string]int // unknown tokens: the molecules each kept out (a molecule counts for its first)
}

func newSkipLog(note func(string)) *skipLog {
	return &skipLog{note: note, tokens: make(map[string]int)}
}

// list names a left-out molecule while fewer than maxListedSkips have been named.
func (s *skipLog) list(line string) {
	s.n++
	if s.n <= maxListedSkips {
		s.note(line)
	} else if s.n == maxListedSkips+1 {
		s.note(fmt.Sprintf("pretrain: more molecules left out; the first %d are listed above, the rest counted below", maxListedSkips))
	}
}

// unreadable is Read's skip: a line that is no valid SMILES or SELFIES.
func (s *skipLog) unreadable(line string) {
	s.unread++
	s.list(line)
}

// unencodable records a molecule the vocabulary cannot spell or T cannot hold (vocab.Encode's error).
func (s *skipLog) unencodable(err error) {
	var ee *vocab.EncodeError
	if errors.As(err, &ee) && errors.Is(ee.Err, vocab.ErrUnknownToken) {
		s.tokens[ee.Token]++
	} else {
		s.long++
	}
	s.list(err.Error())
}

// summary returns one line on what was left out and why, of read molecules in all, with the vocabulary named by
// vocabName, T symbols long; "" when nothing was.
func (s *skipLog) summary(read int, vocabName string, t int) string {
	if s.n == 0 {
		return ""
	}
	var parts []string
	if n := s.n - s.unread - s.long; n > 0 {
		toks := slices.SortedFunc(maps.Keys(s.tokens), func(a, b string) int {
			return cmp.Or(cmp.Compare(s.tokens[b], s.tokens[a]), strings.Compare(a, b))
		})
		named := make([]string, 0, maxSummaryTokens+1)
		for i, tok := range toks {
			if i == maxSummaryTokens {
				named = append(named, fmt.Sprintf("%d other tokens", len(toks)-i))
				break
			}
			named = append(named, fmt.Sprintf("%s %d", tok, s.tokens[tok]))
		}
		parts = append(parts, fmt.Sprintf("%d with a token outside %s (%s; -vocab build takes every token of the data)",
			n, vocabName, strings.Join(named, ", ")))
	}
	if s.unread > 0 {
		parts = append(parts, fmt.Sprintf("%d that are no valid SMILES or SELFIES", s.unread))
	}
	if s.long > 0 {
		parts = append(parts, fmt.Sprintf("%d longer than T = %d allows", s.long, t))
	}
	return fmt.Sprintf("pretrain: %d of %d molecules left out: %s", s.n, read, strings.Join(parts, "; "))
}
