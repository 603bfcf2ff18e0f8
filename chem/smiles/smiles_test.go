package smiles

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPySetMatchesCPython replays set operations recorded from CPython
// (testdata/pyset_golden.txt) on the emulation that decides the order of
// augmenting-path roots in the kekuliser.
func TestPySetMatchesCPython(t *testing.T) {
	b, err := os.ReadFile("testdata/pyset_golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	ints := func(s string) []int {
		var out []int
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("bad golden field %q", s)
			}
			out = append(out, v)
		}
		return out
	}
	cases := 0
	for ln, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		parts := strings.Split(line, ";")
		keys, pops, discards := ints(parts[0]), ints(parts[1]), ints(parts[2])
		var s pySet
		s.reset()
		for _, k := range keys {
			s.add(k)
		}
		for i, want := range pops {
			if s.used == 0 {
				t.Fatalf("line %d: set empty before pop %d", ln+1, i)
			}
			if got := s.pop(); got != want {
				t.Fatalf("line %d: pop %d = %d, CPython popped %d (keys %v)", ln+1, i, got, want, keys)
			}
			if d := discards[i]; d >= 0 {
				s.discard(d)
			}
		}
		if s.used != 0 {
			t.Errorf("line %d: %d keys left, CPython set was empty", ln+1, s.used)
		}
		cases++
	}
	if cases != 400 {
		t.Errorf("replayed %d cases, want 400", cases)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, "empty SMILES"},
		{"C=", 2, "hanging bond"},
		{"C[NH", 1, "hanging bracket ["},
		{"C%1", 1, "invalid ring number '%1'"},
		{"C%a1", 1, "invalid ring number '%a1'"},
		{"C*", 1, "unrecognized symbol '*'"},
		{"C$C", 1, "unrecognized symbol '$'"},
		{"C[Xx]", 1, "invalid atom symbol '[Xx]'"},
		{"CH", 1, "invalid atom symbol 'H'"},
		{"(C)", 0, "SMILES chain begins with non-atom"},
		{"C()", 2, "SMILES chain begins with non-atom"},
		{"C)", 1, "hanging ')' bracket"},
		{"C(C", 1, "hanging '(' bracket"},
		{"C1CC", 1, "hanging ring number '1'"},
		{"C1C1", 1, "ring bond specified between already-bonded atoms"},
		{"C=1CC#1", 2, "mismatched ring bonds"}, // offset of the ring digit, as upstream
		{"C1.C1", 1, "hanging ring number '1'"},
		{".C", -1, "empty SMILES fragment"},
		{"C[C@@@H]", 1, "invalid atom symbol '[C@@@H]'"},
		{"[C+-]", 0, "invalid atom symbol '[C+-]'"},
		{"[CH:]", 0, "invalid atom symbol '[CH:]'"},
	} {
		_, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Offset != tc.offset || se.Msg != tc.msg {
			t.Errorf("Parse(%q): offset %d %q, want offset %d %q", tc.in, se.Offset, se.Msg, tc.offset, tc.msg)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	// Inputs selfies 2.0.0 accepts, some of them odd, with the Kekulé SMILES
	// our writer gives back.
	for _, tc := range []struct{ in, want string }{
		{"C", "C"},
		{"C.", "C"},
		{"C..", "C"},
		{"c1ccccc1", "C1=CC=CC=C1"},
		{"c1cc[nH]c1", "C=1C=C[NH1]C=1"}, // the matching selfies finds
		{"[13CH3:7]C", "[13CH3]C"},
		{"[007C]", "[7C]"}, // H0 only without other specifications
		{"[Fe++]", "[Fe+2]"},
		{"[O--]", "[O-2]"},
		{"[C]", "[CH0]"},
		{"C=(C)C", "C(C)C"}, // the bond in front of '(' is dropped
		{"C%12CC%12", "C1CC1"},
		{"C/C=C/C", "C/C=C/C"},
		{"F/C=C\\1.C1", ""}, // ring across '.' is rejected: see errors
	} {
		g, err := Parse(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Parse(%q) succeeded, want an error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if err := g.Kekulize(); err != nil {
			t.Errorf("Kekulize(%q): %v", tc.in, err)
			continue
		}
		if got := g.String(); got != tc.want {
			t.Errorf("Parse(%q) then write = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKekulizeFailures(t *testing.T) {
	for _, in := range []string{
		"c1cccc1", // five aromatic carbons with implicit H: no perfect matching
		"c1cc1",   // odd cycle reaches the root (selfies: IndexError)
		"C:Cl",    // Cl has no aromatic valence (selfies: KeyError)
		"c1ccc1c", // five atoms cannot be perfectly matched
	} {
		g, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if err := g.Kekulize(); !errors.Is(err, ErrKekulize) {
			t.Errorf("Kekulize(%q) = %v, want ErrKekulize", in, err)
		}
	}
}

func TestElements(t *testing.T) {
	n := 0
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ" {
		if IsElement(string(c)) {
			n++
		}
		for _, d := range "abcdefghijklmnopqrstuvwxyz" {
			if IsElement(string(c) + string(d)) {
				n++
			}
		}
	}
	// selfies 2.0.0 ELEMENTS: H–Lr (103) plus Rf, Db, Sg, Bh, Hs, Mt, Ds,
	// Rg, Cn, Fl, Lv.
	if n != 114 {
		t.Errorf("%d element symbols, want 114", n)
	}
}
