package selfies

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/nfbo/nfbo/chem/smiles"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"[C][=C][F].[C]", []string{"[C]", "[=C]", "[F]", ".", "[C]"}, false},
		{"", nil, false},
		{"xx[C]", []string{"[C]"}, false},
		{"[C]x[O]", []string{"[C]", "x[O]"}, false}, // as split_selfies does
		{"[C].", []string{"[C]", "."}, false},
		{"[C][O", []string{"[C]"}, true},
		{"[C]x", []string{"[C]"}, true},
	} {
		got, err := Split(tc.in)
		if !reflect.DeepEqual(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("Split(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestLooksLike(t *testing.T) {
	for s, want := range map[string]bool{
		"[C][C][O]": true, "[C].[O]": true, "[NH3+]CC(=O)[O-]": false, "CCO": false, "": false, "[C][C": false,
	} {
		if got := LooksLike(s); got != want {
			t.Errorf("LooksLike(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestLen(t *testing.T) {
	for in, want := range map[string]int{"[C][=C][F].[C]": 5, "": 0, "[C]": 1, "[C][Branch1][C][O]": 4} {
		if got := Len(in); got != want {
			t.Errorf("Len(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSemanticRobustAlphabet(t *testing.T) {
	a := SemanticRobustAlphabet(DefaultConstraints())
	if len(a) != 69 {
		t.Errorf("default alphabet has %d symbols, want 69 (chemistry.md §6.1): %q", len(a), a)
	}
	for i := 1; i < len(a); i++ {
		if a[i-1] >= a[i] {
			t.Fatalf("alphabet not sorted at %d: %q, %q", i, a[i-1], a[i])
		}
	}
	has := make(map[string]bool)
	for _, s := range a {
		has[s] = true
	}
	for _, s := range []string{"[#C+1]", "[=S-1]", "[B+1]", "[=Branch3]", "[Ring3]", "[P]", "[H]"} {
		if !has[s] {
			t.Errorf("alphabet lacks %s", s)
		}
	}
	for _, s := range []string{"[=H]", "[#O]", "[=B+1]" + "x", "[#Ring1]", "[Branch]"} {
		if has[s] {
			t.Errorf("alphabet has %s", s)
		}
	}
}

func TestConstraints(t *testing.T) {
	c := DefaultConstraints()
	for _, tc := range []struct {
		elem   string
		charge int
		want   int
	}{{"C", 0, 4}, {"C", 1, 5}, {"P", -1, 4}, {"S", 1, 7}, {"Xe", -2, 8}, {"Cl", 0, 1}} {
		if got := c.Capacity(tc.elem, tc.charge); got != tc.want {
			t.Errorf("default capacity of %s%+d = %d, want %d", tc.elem, tc.charge, got, tc.want)
		}
	}
	if got := OctetRuleConstraints().Capacity("S", 0); got != 2 {
		t.Errorf("octet S = %d, want 2", got)
	}
	if got := HypervalentConstraints().Capacity("N", 0); got != 5 {
		t.Errorf("hypervalent N = %d, want 5", got)
	}
	// Presets are fresh values: changing one does not change another.
	d := DefaultConstraints()
	if err := d.Set("C", 2); err != nil {
		t.Fatal(err)
	}
	if DefaultConstraints().Capacity("C", 0) != 4 {
		t.Error("Set on one preset value changed DefaultConstraints")
	}
	for _, key := range []string{"Xx", "C+", "C+a", "c", ""} {
		if err := d.Set(key, 1); err == nil {
			t.Errorf("Set(%q) accepted an invalid key", key)
		}
	}
	if err := d.Set("C", -1); err == nil {
		t.Error("Set accepted a negative capacity")
	}
	// A valid but non-canonical key is stored and never matches an atom.
	if err := d.Set("N+01", 0); err != nil {
		t.Fatal(err)
	}
	if d.Capacity("N", 1) != 4 {
		t.Error(`key "N+01" changed the capacity of N+1`)
	}
	// A decoder copies its constraints.
	_ = d.Set("C", 1)
	dec := NewDecoder(d)
	_ = d.Set("C", 4)
	if got, _ := dec.Decode("[C][=C]"); got != "CC" {
		t.Errorf("decoder saw a later change to its constraints: got %q, want CC", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		sym    string
		index  int
		offset int
	}{
		{"[C][Xx]", "[Xx]", 1, 3},
		{"[C].[C][CH5]", "[CH5]", 3, 7},
		{"[C][nop][Branch4]", "[Branch4]", 2, 8},
		{"[C][C", "", 1, 3},
		{"[C][/Ring1]", "[/Ring1]", 1, 3},
	} {
		_, err := Decode(tc.in)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%q) = %v, want *DecodeError", tc.in, err)
			continue
		}
		if de.Symbol != tc.sym || de.Index != tc.index || de.Offset != tc.offset {
			t.Errorf("Decode(%q): %+v; want symbol %q index %d offset %d", tc.in, de, tc.sym, tc.index, tc.offset)
		}
	}
	// Symbols after the chain has ended are consumed unchecked, as upstream.
	if got, err := Decode("[CH4][Xx]"); err != nil || got != "[CH4]" {
		t.Errorf(`Decode("[CH4][Xx]") = %q, %v; want "[CH4]"`, got, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		syntax bool
	}{
		{"C1CC", 1, true},
		{"C*", 1, true},
		{"c1cccc1", -1, false},
		{"FC(F)(F)(F)F", -1, false}, // pentavalent carbon violates the constraints
		{"C11", -1, false},
	} {
		_, err := Encode(tc.in)
		var ee *EncodeError
		if !errors.As(err, &ee) {
			t.Errorf("Encode(%q) = %v, want *EncodeError", tc.in, err)
			continue
		}
		var se *smiles.SyntaxError
		if ee.Offset != tc.offset || errors.As(err, &se) != tc.syntax {
			t.Errorf("Encode(%q): %v (offset %d); want offset %d, syntax error %v", tc.in, err, ee.Offset, tc.offset, tc.syntax)
		}
	}
	// Non-strict mode encodes the violation; decoding then changes it.
	e := NewEncoder(DefaultConstraints())
	e.SetStrict(false)
	if got, err := e.Encode("FC(F)(F)(F)F"); err != nil || got != "[F][C][Branch1][C][F][Branch1][C][F][Branch1][C][F][F]" {
		t.Errorf("non-strict Encode = %q, %v", got, err)
	}
}

// ExampleEncode shows the default codec: aromatic input is kekulised, and
// decoding gives the Kekulé SMILES in the same atom order.
func ExampleEncode() {
	s, err := Encode("c1ccccc1O")
	if err != nil {
		fmt.Println(err)
		return
	}
	smi, _ := Decode(s)
	fmt.Println(s)
	fmt.Println(smi)
	// Output:
	// [C][=C][C][=C][C][=C][Ring1][=Branch1][O]
	// C1=CC=CC=C1O
}

func TestCompatibleSymbols(t *testing.T) {
	for old, want := range map[string]string{
		"[Branch1_1]":   "[Branch1]",
		"[Branch3_3]":   "[#Branch3]",
		"[Expl=Ring2]":  "[=Ring2]",
		"[Expl/Ring1]":  "[//Ring1]",
		"[Expl\\Ring3]": "[\\\\Ring3]",
		"[C@@Hexpl]":    "[C@@H1]",
		"[=NH+expl]":    "[=NH1+1]",
		"[cexpl]":       "[cexpl]", // aromatic atoms are left as they are
		"[C]":           "[C]",
	} {
		if got := modernizeSymbol(old); got != want {
			t.Errorf("modernizeSymbol(%q) = %q, want %q", old, got, want)
		}
	}
	d := NewDecoder(DefaultConstraints())
	if _, err := d.Decode("[C][Branch1_1][C][C]"); err == nil {
		t.Error("old symbols accepted without SetCompatible(true)")
	}
	d.SetCompatible(true)
	if got, err := d.Decode("[C][Branch1_1][C][C][C]"); err != nil || got != "C(C)C" {
		t.Errorf("compatible decode = %q, %v; want C(C)C", got, err)
	}
}
