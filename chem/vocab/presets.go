package vocab

import (
	"bytes"
	"fmt"

	"github.com/nfbo/nfbo/data"
)

// The hash-ordered tail. NF-BO appends the semantic-robust SELFIES symbols
// missing from its hand-written list as list(set(...)), whose order depends
// on Python's per-process string hashing and so cannot be recovered. We fix
// it once, for good: the tail is appended in byte-wise sorted order (the
// order of data/vocab/*_tail_unordered.txt), then [#SH1] last, as NF-BO does.
// Changing this order would silently re-map the embedding rows of every
// saved model, so it must not change.

// NFBOGuacaMol returns NF-BO's GuacaMol vocabulary: its 162 listed tokens,
// the 22 appended robust-alphabet tokens in sorted order, then [#SH1]; 185
// ids. [=SiH2] and [=CH2] appear twice in the list; their later ids encode.
func NFBOGuacaMol() (*Vocab, error) {
	return nfbo("nfbo_guacamol_selfies_vocab_base.txt", "nfbo_guacamol_selfies_vocab_tail_unordered.txt")
}

// NFBOZinc returns NF-BO's ZINC vocabulary, used for the PMO tasks: 141
// listed tokens, 32 appended tokens in sorted order, then [#SH1]; 174 ids.
func NFBOZinc() (*Vocab, error) {
	return nfbo("nfbo_zinc_selfies_vocab_base.txt", "nfbo_zinc_selfies_vocab_tail_unordered.txt")
}

// LOLBO returns LOL-BO's DEFAULT_SELFIES_VOCAB (97 ids), which is also the
// first 97 ids of NFBOGuacaMol.
func LOLBO() (*Vocab, error) {
	b, err := data.Vocab("lolbo_selfies_vocab.txt")
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(b), "lolbo_selfies_vocab.txt")
}

// Combined returns NFBOGuacaMol followed by the tokens of NFBOZinc it lacks
// (ZINC's stereo tokens), so one model covers both corpora and every
// GuacaMol id keeps its meaning. It is the shipped model's vocabulary.
func Combined() (*Vocab, error) {
	g, err := NFBOGuacaMol()
	if err != nil {
		return nil, err
	}
	z, err := NFBOZinc()
	if err != nil {
		return nil, err
	}
	return Union(g, z), nil
}

// Named returns the vocabulary called name: "guacamol", "zinc",
// "guacamol+zinc" (Combined) or "lolbo".
func Named(name string) (*Vocab, error) {
	switch name {
	case "guacamol+zinc":
		return Combined()
	case "guacamol":
		return NFBOGuacaMol()
	case "zinc":
		return NFBOZinc()
	case "lolbo":
		return LOLBO()
	}
	return nil, fmt.Errorf("vocab: unknown vocabulary %q (want guacamol, zinc, guacamol+zinc or lolbo)", name)
}

func nfbo(baseName, tailName string) (*Vocab, error) {
	base, err := data.Vocab(baseName)
	if err != nil {
		return nil, err
	}
	tail, err := data.Vocab(tailName)
	if err != nil {
		return nil, err
	}
	var all bytes.Buffer
	all.Write(base)
	all.Write(tail)
	all.WriteString("[#SH1]\n")
	return Parse(&all, baseName)
}
