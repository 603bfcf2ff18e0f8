package vocab

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestPresetSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{{"guacamol", 185}, {"zinc", 174}, {"lolbo", 97}} {
		v, err := Named(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Len() != tc.want {
			t.Errorf("%s: %d tokens, want %d", tc.name, v.Len(), tc.want)
		}
		if v.Token(Start) != StartToken || v.Token(Stop) != StopToken {
			t.Errorf("%s: special tokens at wrong ids", tc.name)
		}
	}
}

// NF-BO's GuacaMol list starts with LOL-BO's 97 tokens in the same order, and
// its duplicates encode to their later ids.
func TestGuacaMolLayout(t *testing.T) {
	g, _ := NFBOGuacaMol()
	l, _ := LOLBO()
	for i := 0; i < l.Len(); i++ {
		if g.Token(i) != l.Token(i) {
			t.Fatalf("id %d: guacamol %q, lolbo %q", i, g.Token(i), l.Token(i))
		}
	}
	for tok, want := range map[string]int{"[=SiH2]": 113, "[=CH2]": 151, "[#SH1]": 184, "[#B-1]": 162, "[Ring3]": 183} {
		if id, _ := g.ID(tok); id != want {
			t.Errorf("%s encodes to %d, want %d", tok, id, want)
		}
	}
	if g.Token(107) != "[=SiH2]" || g.Token(147) != "[=CH2]" {
		t.Errorf("duplicate rows 107/147 hold %q/%q", g.Token(107), g.Token(147))
	}
}

func TestEncodeDecode(t *testing.T) {
	v, _ := NFBOGuacaMol()
	toks := []string{"[C]", "[=C]", "[Ring1]", "[O]"}
	ids, err := v.Encode(nil, toks, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 7 || ids[4] != Stop || ids[6] != Stop {
		t.Fatalf("ids %v: want 4 tokens then <stop> padding to 7", ids)
	}
	if got := strings.Join(v.Decode(ids), ""); got != "[C][=C][Ring1][O]" {
		t.Fatalf("decode: %q", got)
	}
	// Everything after the first <stop> is ignored.
	ids[5] = ids[0]
	if got := v.DecodeString(ids); got != "[C][=C][Ring1][O]" {
		t.Fatalf("decode past stop: %q", got)
	}
	if _, err := v.Encode(nil, toks, 4); !errors.Is(err, ErrTooLong) {
		t.Fatalf("4 tokens in T=4: err %v, want ErrTooLong", err)
	}
	_, err = v.Encode(nil, []string{"[C]", "[Xx]"}, 5)
	var ee *EncodeError
	if !errors.As(err, &ee) || ee.Token != "[Xx]" || ee.Pos != 1 || !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("unknown token: err %v", err)
	}
	ee.File, ee.Line, ee.Molecule = "in.txt", 12, "[C][Xx]"
	if msg := ee.Error(); !strings.Contains(msg, "in.txt:12") || !strings.Contains(msg, `"[Xx]"`) || !strings.Contains(msg, "[C][Xx]") {
		t.Fatalf("error message lacks file, line, token or molecule: %s", msg)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse(strings.NewReader("<start>\n<stop>\n\n[C]\n"), "v.txt"); err == nil || !strings.Contains(err.Error(), "v.txt:3") {
		t.Fatalf("blank line: err %v", err)
	}
	if _, err := Parse(strings.NewReader("[C]\n<stop>\n"), "v.txt"); err == nil {
		t.Fatal("missing <start> accepted")
	}
}

func TestBuildUnion(t *testing.T) {
	a := Build([][]string{{"[C]", "[O]"}, {"[C]", "[N]"}})
	if got := strings.Join(a.Tokens(), " "); got != "<start> <stop> [C] [O] [N]" {
		t.Fatalf("Build: %s", got)
	}
	b := Build([][]string{{"[S]", "[C]", "[Cl]"}})
	u := Union(a, b)
	if got := strings.Join(u.Tokens(), " "); got != "<start> <stop> [C] [O] [N] [S] [Cl]" {
		t.Fatalf("Union: %s", got)
	}
}

// Every symbol of the reference SELFIES of both 10k sets is in the NF-BO
// vocabulary of its corpus (data/README.md's coverage check).
func TestCorpusCoverage(t *testing.T) {
	for _, tc := range []struct{ file, vocab string }{
		{"../../data/generated/guacamol_10k_selfies_v2.0.0_scores.csv.gz", "guacamol"},
		{"../../data/generated/zinc250k_first10k_selfies_v2.0.0.csv.gz", "zinc"},
	} {
		v, _ := Named(tc.vocab)
		rows := readSelfiesColumn(t, tc.file)
		maxLen := 0
		for i, s := range rows {
			toks := splitSymbols(s)
			maxLen = max(maxLen, len(toks))
			if _, err := v.Encode(nil, toks, len(toks)+1); err != nil {
				t.Errorf("%s row %d: %v", tc.file, i+1, err)
			}
		}
		t.Logf("%s: %d molecules, longest %d symbols, all in the %s vocabulary", tc.file, len(rows), maxLen, tc.vocab)
	}
}

// splitSymbols splits a dot-free SELFIES string at its brackets; the codec's
// own Split is tested in chem/selfies.
func splitSymbols(s string) []string {
	var out []string
	for len(s) > 0 {
		j := strings.IndexByte(s, ']')
		if s[0] != '[' || j < 0 {
			return append(out, s)
		}
		out = append(out, s[:j+1])
		s = s[j+1:]
	}
	return out
}

func readSelfiesColumn(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := csv.NewReader(bufio.NewReader(gz))
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range recs[0] {
		if h == "selfies" {
			col = i
		}
	}
	var out []string
	for _, rec := range recs[1:] {
		out = append(out, rec[col])
	}
	return out
}

func TestCombinedCoversBothCorpora(t *testing.T) {
	c, err := Combined()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := NFBOGuacaMol()
	z, _ := NFBOZinc()
	for i := 0; i < g.Len(); i++ {
		if c.Token(i) != g.Token(i) {
			t.Fatalf("id %d: combined %q, guacamol %q", i, c.Token(i), g.Token(i))
		}
	}
	for _, tok := range z.Tokens() {
		if !c.Contains(tok) {
			t.Errorf("combined lacks ZINC token %s", tok)
		}
	}
	t.Logf("combined vocabulary: %d tokens", c.Len())
}
