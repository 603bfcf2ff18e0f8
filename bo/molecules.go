package bo

// Identifier is implemented by a Codec whose keys depend on how a molecule is written and that can name the
// molecule itself (chem/molseq.Codec: its key is the SMILES of the canonical SELFIES, in an atom order that
// depends on the sequence; graph-GA children come in their own order). The screened variant then takes two keys
// of one identity for one molecule: a candidate paid for under another key is a duplicate, not a pick that the
// objective's cache answers without a call.
type Identifier interface {
	// Identity returns a string that the keys of one molecule share and keys of different molecules do not, and
	// that no key equals unless it is the key's own.
	Identity(key string) string
}

// identity returns the identity of the molecule of key, or "" when the optimiser keys molecules by key alone (the
// reference variant, or a Codec that is not an Identifier).
func (o *Optimizer) identity(key string) string {
	if o.ident == nil {
		return ""
	}
	return o.ident(key)
}

// holds reports whether set holds k. The optimiser's sets of molecules hold each molecule's key and, with an
// Identifier, its identity.
func holds(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// remember adds a molecule's key and, when it is not "", its identity to set.
func remember(set map[string]struct{}, key, id string) {
	set[key] = struct{}{}
	if id != "" {
		set[id] = struct{}{}
	}
}
