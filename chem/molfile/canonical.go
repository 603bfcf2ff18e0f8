package molfile

import (
	"errors"
	"fmt"

	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
)

// Molecule is a molecule of a file after NF-BO's canonicalisation (decode and re-encode).
type Molecule struct {
	Line  int     // 1-based line in the file
	Key   string  // the codec's key: the SMILES of the canonical SELFIES
	IDs   []int   // canonical token ids, padded to the model's MaxT
	N     int     // number of symbols
	Score float64 // the task's score from the file, when it has them
	Name  string  // in the file, if any
}

// Canonicalize canonicalises the molecules of rows (read from path) with NF-BO's SELFIES round trip in the
// vocabulary voc, padded to maxT, and returns them with the sequence length T they need (1 + the longest).
// Molecules that cannot be tokenised (invalid SMILES, a symbol outside the vocabulary, longer than maxT−1
// symbols) and repeats of an earlier molecule are left out, each told to skips with a message naming the file
// and line; none left is an error.
func Canonicalize(rows []Row, path string, voc *vocab.Vocab, maxT int, skips *Skips) ([]Molecule, int, error) {
	codec, err := molseq.New(voc, maxT)
	if err != nil {
		return nil, 0, err
	}
	var mols []Molecule
	seen := map[string]int{}
	longest := 0
	for _, r := range rows {
		ids := make([]int, maxT)
		key, err := codec.FromSMILES(ids, r.SMILES)
		if err != nil {
			skips.Add(encodeMessage(err, path, r), err)
			continue
		}
		if first, dup := seen[key]; dup {
			skips.Repeat(fmt.Sprintf("%s: same molecule as line %d (skipped)", r.Where(path), first))
			continue
		}
		seen[key] = r.Line
		n := 0
		for n < maxT && ids[n] != vocab.Stop {
			n++
		}
		longest = max(longest, n)
		mols = append(mols, Molecule{Line: r.Line, Key: key, IDs: ids, N: n, Score: r.Score, Name: r.Name})
	}
	if len(mols) == 0 {
		return nil, 0, fmt.Errorf("%s: none of its %d molecules can be tokenised", path, len(rows))
	}
	return mols, longest + 1, nil
}

// encodeMessage says why the molecule of r cannot be tokenised: a vocab.EncodeError names the file, line and
// symbol.
func encodeMessage(err error, path string, r Row) string {
	var ee *vocab.EncodeError
	if !errors.As(err, &ee) {
		return fmt.Sprintf("%s: %s: %v (skipped)", r.Where(path), smiles.Quote(r.SMILES), err)
	}
	ee.File, ee.Line = path, r.Line
	if len(ee.Molecule) > 80 {
		ee.Molecule = ee.Molecule[:80] + fmt.Sprintf("… (%d bytes)", len(ee.Molecule))
	}
	skipped := "skipped"
	if r.Name != "" {
		skipped += "; " + r.Name
	}
	return fmt.Sprintf("%v (%s)", ee, skipped)
}

// ReadMolecules reads up to count molecules of path (Read, with the scores of column when it has them) and
// canonicalises them (Canonicalize). It returns them, the sequence length T they need and whether the file had
// the scores.
func ReadMolecules(path, column string, count int, voc *vocab.Vocab, maxT int, skips *Skips) (mols []Molecule, t int, hasScores bool, err error) {
	rows, hasScores, err := Read(path, column, count)
	if err != nil {
		return nil, 0, false, err
	}
	mols, t, err = Canonicalize(rows, path, voc, maxT, skips)
	if err != nil {
		return nil, 0, false, err
	}
	return mols, t, hasScores, nil
}
