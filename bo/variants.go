package bo

// VariantKeyer is implemented by a Codec that can name a molecule's variants, for TokenSettings.SkipVariants.
type VariantKeyer interface {
	// VariantKey returns a key that the molecule of key smiles shares with its stereo, charge, hydrogen and
	// radical variants.
	VariantKey(smiles string) string
}

// When the objective is judged blind to variants (TokenSettings.SkipVariants).
const (
	variantMinPairs = 10  // paid pairs of variants before the objective is judged
	variantEqual    = 0.9 // the fraction of them scored exactly alike for it to be judged blind
)

// variants keeps the paid molecules' variant keys and how often the objective scored two variants alike.
type variants struct {
	key          func(smiles string) string
	first        map[string]float64 // variant key -> score of the first paid molecule with it
	pairs, equal int                // paid molecules whose variant key was paid before; of those, scored alike
}

func newVariants(key func(string) string) *variants {
	return &variants{key: key, first: make(map[string]float64)}
}

// add records the paid molecule smiles with score y.
func (v *variants) add(smiles string, y float64) {
	k := v.key(smiles)
	f, ok := v.first[k]
	if !ok {
		v.first[k] = y
		return
	}
	v.pairs++
	if f == y {
		v.equal++
	}
}

// blind reports whether the objective has scored variants alike often enough to skip them.
func (v *variants) blind() bool {
	return v.pairs >= variantMinPairs && float64(v.equal) >= variantEqual*float64(v.pairs)
}

// paid reports whether a molecule with the variant key k has been paid for.
func (v *variants) paid(k string) bool {
	_, ok := v.first[k]
	return ok
}
