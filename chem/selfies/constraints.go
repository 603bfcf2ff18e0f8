package selfies

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/chem/smiles"
)

// Constraints are the semantic constraints of SELFIES: the bonding capacity
// of each atom type, keyed as selfies keys them ("C", "N+1", "O-1", "Sn+4"),
// and a default capacity "?" for every atom type not listed. The capacity
// of an atom is its table value minus its explicit hydrogens.
//
// A Constraints value holds a map: copies share it, so use Clone before
// changing a table that someone else holds. Encoders and decoders clone the
// table they are given. The zero value is an empty table with default 0;
// build tables from a preset.
type Constraints struct {
	def     int
	entries map[string]int  // every key as given, for the alphabet
	lookup  map[atomKey]int // canonical keys only, for capacity lookups
}

type atomKey struct {
	element string
	charge  int
}

// DefaultConstraints returns a fresh copy of the selfies 2.0.0 default
// constraints: H F Cl Br I 1; B 3, B+1 2, B-1 4; O 2, O+1 3, O-1 1; N 3,
// N+1 4, N-1 2; C 4, C+1 5, C-1 3; P 5, P+1 6, P-1 4; S 6, S+1 7, S-1 5;
// any other atom 8. (selfies 2.2.0 changed C+1, P+1, P-1 and S+1; these are
// the 2.0.0 values.)
func DefaultConstraints() Constraints {
	c := Constraints{
		def:     8,
		entries: make(map[string]int, 24),
		lookup:  make(map[atomKey]int, 24),
	}
	// Filled directly rather than through Set: the package-level Encode and
	// Decode build this table on every call.
	for _, e := range [...]struct {
		key     string
		element string
		charge  int
		cap     int
	}{
		{"H", "H", 0, 1}, {"F", "F", 0, 1}, {"Cl", "Cl", 0, 1}, {"Br", "Br", 0, 1}, {"I", "I", 0, 1},
		{"B", "B", 0, 3}, {"B+1", "B", 1, 2}, {"B-1", "B", -1, 4},
		{"O", "O", 0, 2}, {"O+1", "O", 1, 3}, {"O-1", "O", -1, 1},
		{"N", "N", 0, 3}, {"N+1", "N", 1, 4}, {"N-1", "N", -1, 2},
		{"C", "C", 0, 4}, {"C+1", "C", 1, 5}, {"C-1", "C", -1, 3},
		{"P", "P", 0, 5}, {"P+1", "P", 1, 6}, {"P-1", "P", -1, 4},
		{"S", "S", 0, 6}, {"S+1", "S", 1, 7}, {"S-1", "S", -1, 5},
	} {
		c.entries[e.key] = e.cap
		c.lookup[atomKey{e.element, e.charge}] = e.cap
	}
	c.entries["?"] = 8
	return c
}

// OctetRuleConstraints returns the selfies "octet_rule" preset: the defaults
// with S 2, S+1 3, S-1 1, P 3, P+1 4, P-1 2.
func OctetRuleConstraints() Constraints {
	c := DefaultConstraints()
	c.mustSet("S", 2, "S+1", 3, "S-1", 1, "P", 3, "P+1", 4, "P-1", 2)
	return c
}

// HypervalentConstraints returns the selfies "hypervalent" preset: the
// defaults with Cl, Br and I 7 and N 5.
func HypervalentConstraints() Constraints {
	c := DefaultConstraints()
	c.mustSet("Cl", 7, "Br", 7, "I", 7, "N", 5)
	return c
}

func (c *Constraints) mustSet(kv ...any) {
	for i := 0; i < len(kv); i += 2 {
		if err := c.Set(kv[i].(string), kv[i+1].(int)); err != nil {
			panic(err)
		}
	}
}

// Clone returns a deep copy of c.
func (c Constraints) Clone() Constraints {
	d := Constraints{
		def:     c.def,
		entries: make(map[string]int, len(c.entries)),
		lookup:  make(map[atomKey]int, len(c.lookup)),
	}
	for k, v := range c.entries {
		d.entries[k] = v
	}
	for k, v := range c.lookup {
		d.lookup[k] = v
	}
	return d
}

// Set sets the capacity of key, validated as selfies'
// set_semantic_constraints does: key is "?", an element symbol, or an
// element followed by + or - and decimal digits; capacity must be >= 0.
func (c *Constraints) Set(key string, capacity int) error {
	if capacity < 0 {
		return fmt.Errorf("selfies: invalid value at constraints[%q] = %d", key, capacity)
	}
	if c.entries == nil {
		c.entries = make(map[string]int)
		c.lookup = make(map[atomKey]int)
	}
	if key == "?" {
		c.def = capacity
		c.entries[key] = capacity
		return nil
	}
	j := max(strings.IndexByte(key, '+'), strings.IndexByte(key, '-'))
	var element string
	charge := 0
	if j < 0 {
		element = key
		if !smiles.IsElement(element) {
			return fmt.Errorf("selfies: invalid key %q in constraints", key)
		}
	} else {
		element = key[:j]
		digits := key[j+1:]
		if !smiles.IsElement(element) || !allDigits(digits) {
			return fmt.Errorf("selfies: invalid key %q in constraints", key)
		}
		if v, err := strconv.Atoi(digits); err == nil {
			charge = v
			if key[j] == '-' {
				charge = -v
			}
		}
	}
	c.entries[key] = capacity
	// selfies looks atoms up by element plus "{:+}".format(charge); a key
	// such as "C+01" or "C+0" is valid but never matches an atom.
	if canonicalKey(element, charge) == key {
		c.lookup[atomKey{element, charge}] = capacity
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func canonicalKey(element string, charge int) string {
	if charge == 0 {
		return element
	}
	return element + fmt.Sprintf("%+d", charge)
}

// Capacity returns the bonding capacity of an atom of the given element and
// charge before explicit hydrogens are subtracted.
func (c Constraints) Capacity(element string, charge int) int {
	if v, ok := c.lookup[atomKey{element, charge}]; ok {
		return v
	}
	return c.def
}

// Get returns the capacity stored under key ("?" for the default) and
// whether key is in the table.
func (c Constraints) Get(key string) (int, bool) {
	v, ok := c.entries[key]
	return v, ok
}

// Keys returns the keys of the table, sorted, "?" included.
func (c Constraints) Keys() []string {
	keys := make([]string, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SemanticRobustAlphabet returns, sorted, the symbols that the constraints
// c constrain (selfies' get_semantic_robust_alphabet): every atom key with
// each bond prefix whose order does not exceed its capacity, [Ring1-3],
// [=Ring1-3], [Branch1-3], [=Branch1-3], [#Branch1-3] and the index
// alphabet. With DefaultConstraints it has 69 symbols.
func SemanticRobustAlphabet(c Constraints) []string {
	set := make(map[string]struct{})
	for key, capacity := range c.entries {
		if key == "?" {
			continue
		}
		for order, bond := range [...]string{"", "=", "#"} {
			if order+1 <= capacity {
				set["["+bond+key+"]"] = struct{}{}
			}
		}
	}
	for L := 1; L <= 3; L++ {
		n := strconv.Itoa(L)
		for _, s := range [...]string{"[Ring", "[=Ring", "[Branch", "[=Branch", "[#Branch"} {
			set[s+n+"]"] = struct{}{}
		}
	}
	for _, s := range indexAlphabet {
		set[s] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ParseConstraintOverrides applies overrides written as "KEY=N" items
// separated by ';' (for example "O-2=2;Sn+4=1" or "?=2") to a copy of base.
func ParseConstraintOverrides(base Constraints, spec string) (Constraints, error) {
	c := base.Clone()
	if spec == "" || spec == "default" {
		return c, nil
	}
	for _, item := range strings.Split(spec, ";") {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return c, fmt.Errorf("selfies: constraint override %q: want KEY=N", item)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("selfies: constraint override %q: %w", item, err)
		}
		if err := c.Set(k, n); err != nil {
			return c, err
		}
	}
	return c, nil
}
