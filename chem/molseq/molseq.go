// Package molseq turns molecules into the fixed-length token sequences that the flow reads and back, with NF-BO's
// canonicalisation (github.com/mlvlab/NFBO, objective/guacamol/utils/mol_utils/data.py, class SELFIESDataset):
//
//	ids -> SELFIES (up to the first <stop>, <start> dropped) -> selfies.Decode -> SMILES
//	    -> selfies.Encode -> SELFIES -> ids of length T
//
// The round trip is the selfies library's own (2.0.0), not RDKit's canonical SMILES. A sequence is invalid when
// the SELFIES does not decode, decodes to an empty SMILES, re-encodes with a symbol outside the vocabulary, or
// re-encodes to more than T−1 symbols (the reference keeps only rows whose position T−1 is <stop>).
//
// A molecule's key is the SMILES that the canonical SELFIES decodes to: what the reference scores, and a function
// of the canonical sequence alone, so two proposals with equal keys have equal sequences.
package molseq

import (
	"fmt"
	"math/rand/v2"

	"github.com/nfbo/nfbo/chem/graphga"
	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
)

// Codec canonicalises token sequences of length T over a vocabulary. It keeps selfies scratch state, so it is not
// safe for concurrent use; use one Codec per goroutine.
type Codec struct {
	voc   *vocab.Vocab
	t     int
	enc   *selfies.Encoder
	dec   *selfies.Decoder
	cross graphga.Crosser
	mut   graphga.Mutator
	ident smiles.Identifier
}

// New returns a codec for sequences of length t (t ≥ 2) over v, with selfies' default constraints.
func New(v *vocab.Vocab, t int) (*Codec, error) {
	if t < 2 {
		return nil, fmt.Errorf("molseq: sequence length T = %d, want at least 2", t)
	}
	c := selfies.DefaultConstraints()
	return &Codec{voc: v, t: t, enc: selfies.NewEncoder(c), dec: selfies.NewDecoder(c)}, nil
}

// T returns the sequence length.
func (c *Codec) T() int { return c.t }

// Vocab returns the vocabulary.
func (c *Codec) Vocab() *vocab.Vocab { return c.voc }

// Canonical writes the canonical form of the length-T sequence tokens into dst (length T) and returns the
// molecule's key, or ok = false when the sequence is not a valid molecule (dst is then unspecified). It
// implements bo.Codec.
func (c *Codec) Canonical(dst, tokens []int) (smiles string, ok bool) {
	if len(dst) != c.t || len(tokens) != c.t {
		panic(fmt.Sprintf("molseq: Canonical: len(dst) = %d, len(tokens) = %d, want T = %d", len(dst), len(tokens), c.t))
	}
	smi, ok := c.decode(tokens)
	if !ok {
		return "", false
	}
	key, err := c.fromSMILES(dst, smi)
	if err != nil {
		return "", false
	}
	return key, true
}

// decode returns the SMILES that the sequence tokens decodes to, or false when a token is outside the vocabulary
// or the SELFIES decodes to nothing.
func (c *Codec) decode(tokens []int) (string, bool) {
	for _, id := range tokens {
		if id < 0 || id >= c.voc.Len() {
			return "", false
		}
	}
	smi, err := c.dec.Decode(c.voc.DecodeString(tokens))
	return smi, err == nil && smi != ""
}

// Identity returns the identity of the molecule of key (chem/smiles.Identifier): the same for every key of one
// molecule, whatever the order its atoms are written in, as graph-GA children are written in their own order.
// A key the identifier cannot read is its own identity. It implements bo.Identifier.
func (c *Codec) Identity(key string) string {
	id, err := c.ident.Identity(key)
	if err != nil {
		return key
	}
	return id
}

// Cross writes into dst (length T) the canonical sequence of a graph crossover child of the molecules a and b
// (keys; chem/graphga: a fragment of each, cut at a single bond outside rings, joined; with rings, half the
// time parts of their rings) and reports whether there is one: not when either molecule has no bond to cut, or
// the child needs a symbol outside the vocabulary or more than T−1 symbols. It implements bo.Crosser.
func (c *Codec) Cross(dst []int, a, b string, rings bool, rng *rand.Rand) bool {
	c.cross.Rings = rings
	smi, err := c.cross.Cross(a, b, rng)
	if err != nil {
		return false
	}
	_, err = c.FromSMILES(dst, smi)
	return err == nil
}

// Mutate writes into dst (length T) the canonical sequence of a graph mutant of the molecule that the length-T
// sequence tokens decodes to (chem/graphga.Mutator: an atom or bond inserted, deleted or changed, or a ring closed,
// within the atoms' valences; with fused, a ring closed onto one of the molecule's rings too) and reports whether
// there is one: not when tokens is not a molecule, no mutation gives a valid molecule, or the mutant needs a
// symbol outside the vocabulary or more than T−1 symbols. dst and tokens may be the same slice. It implements
// bo.Mutator.
func (c *Codec) Mutate(dst, tokens []int, fused bool, rng *rand.Rand) bool {
	if len(dst) != c.t || len(tokens) != c.t {
		panic(fmt.Sprintf("molseq: Mutate: len(dst) = %d, len(tokens) = %d, want T = %d", len(dst), len(tokens), c.t))
	}
	smi, ok := c.decode(tokens)
	if !ok {
		return false
	}
	c.mut.Fuse = fused
	mutant, err := c.mut.Mutate(smi, rng)
	if err != nil {
		return false
	}
	_, err = c.FromSMILES(dst, mutant)
	return err == nil
}

// FromSMILES encodes a SMILES string into dst (length T), canonicalised as Canonical does, and returns the
// molecule's key. The error is a *vocab.EncodeError for a symbol outside the vocabulary or a molecule of more
// than T−1 symbols, or the selfies package's error for a SMILES it cannot encode.
func (c *Codec) FromSMILES(dst []int, smiles string) (key string, err error) {
	if len(dst) != c.t {
		panic(fmt.Sprintf("molseq: FromSMILES: len(dst) = %d, want T = %d", len(dst), c.t))
	}
	sf, err := c.enc.Encode(smiles)
	if err != nil {
		return "", err
	}
	smi, err := c.dec.Decode(sf)
	if err != nil {
		return "", err
	}
	if smi == "" {
		return "", fmt.Errorf("molseq: %q decodes to an empty molecule", smiles)
	}
	return c.fromSMILES(dst, smi)
}

// fromSMILES encodes smi (a decoder's output) into dst and returns the key: the decoded canonical SELFIES.
func (c *Codec) fromSMILES(dst []int, smi string) (string, error) {
	sf, err := c.enc.Encode(smi)
	if err != nil {
		return "", err
	}
	symbols, err := selfies.Split(sf)
	if err != nil {
		return "", err
	}
	if _, err := c.voc.Encode(dst, symbols, c.t); err != nil {
		if e, ok := err.(*vocab.EncodeError); ok {
			e.Molecule = sf
		}
		return "", err
	}
	// The canonical SELFIES decodes to the key. Decoding it rather than reusing smi makes the key a function of
	// the canonical sequence alone, as bo's de-duplication requires.
	return c.dec.Decode(sf)
}
