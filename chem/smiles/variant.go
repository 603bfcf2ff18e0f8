package smiles

import "strings"

// VariantKey returns smiles with what tells a molecule from its stereo, charge, hydrogen and radical variants
// taken out: each bracket atom becomes its isotope and element alone (bare when the element may be written
// without brackets), and the bond directions / and \ are dropped. Variants written with their atoms in the same
// order, as a SELFIES decoder writes a sequence and its one-symbol edits, share the key; it is a key, not a
// molecule, and not canonical: the same molecule written in another order has another key. A bracket that does
// not parse is kept as it is.
func VariantKey(smiles string) string {
	var b strings.Builder
	b.Grow(len(smiles))
	for i := 0; i < len(smiles); i++ {
		c := smiles[i]
		switch c {
		case '/', '\\':
			continue
		case '[':
			j := strings.IndexByte(smiles[i:], ']')
			if j < 0 {
				b.WriteString(smiles[i:])
				return b.String()
			}
			sym := smiles[i : i+j+1]
			i += j
			a, ok := parseBracketAtom(sym)
			if !ok {
				b.WriteString(sym)
				continue
			}
			elem := a.Element
			bare := organic(elem)
			if a.Aromatic {
				elem = strings.ToLower(elem)
				bare = aromaticSubset(elem) && len(elem) == 1
			}
			if a.Isotope == "" && bare {
				b.WriteString(elem)
				continue
			}
			b.WriteByte('[')
			b.WriteString(a.Isotope)
			b.WriteString(elem)
			b.WriteByte(']')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
