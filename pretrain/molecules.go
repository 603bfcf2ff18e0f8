package pretrain

import (
	"bufio"
	"context"
	"fmt"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/internal/textfile"
)

// Molecule is one usable line of a data file.
type Molecule struct {
	// Line is the 1-based line number in the file.
	Line int
	// SELFIES is the molecule as SELFIES (the line itself, or its SMILES converted by selfies.Encode).
	SELFIES string
	// Tokens are the SELFIES symbols (selfies.Split).
	Tokens []string
}

// tokenLists returns the molecules' symbols, for vocab.Build.
func tokenLists(mols []Molecule) [][]string {
	out := make([][]string, len(mols))
	for i, m := range mols {
		out[i] = m.Tokens
	}
	return out
}

// Read reads the molecules of the file name, one per line, SMILES or SELFIES (selfies.LooksLike) in the line's
// first field (smiles.FirstField: a name or an id may follow, as in .smi files and ZINC's downloads), through
// gzip when the name ends in .gz. A line that cannot be used (an invalid SMILES or SELFIES) is passed to skip
// as "FILE:LINE: reason" and left out; blank lines are skipped silently. A file with no usable molecule is an
// error.
func Read(ctx context.Context, name string, skip func(line string)) ([]Molecule, error) {
	r, err := textfile.Open(name)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	defer r.Close()
	var mols []Molecule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line, skipped := 0, 0
	for sc.Scan() {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line++
		text, _ := smiles.FirstField(sc.Text())
		if text == "" {
			continue
		}
		sf := text
		if !selfies.LooksLike(text) {
			if sf, err = selfies.Encode(text); err != nil {
				skipped++
				skip(fmt.Sprintf("%s:%d: SMILES %s: %v", name, line, smiles.Quote(text), err))
				continue
			}
		}
		tokens, err := selfies.Split(sf)
		if err != nil {
			skipped++
			skip(fmt.Sprintf("%s:%d: SELFIES %s: %v", name, line, smiles.Quote(sf), err))
			continue
		}
		mols = append(mols, Molecule{Line: line, SELFIES: sf, Tokens: tokens})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pretrain: read %s: %w", name, err)
	}
	switch {
	case line == 0:
		return nil, fmt.Errorf("pretrain: %s: the file is empty", name)
	case len(mols) == 0:
		return nil, fmt.Errorf("pretrain: %s: no molecule in its %d lines (%d could not be read)", name, line, skipped)
	}
	return mols, nil
}
