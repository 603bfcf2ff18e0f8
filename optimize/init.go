package optimize

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
)

// initRow is one molecule of an init file.
type initRow struct {
	line   int // 1-based
	smiles string
	score  float64
}

// readInitCSV reads a CSV init file (header first). The SMILES column is "smiles" or "smile" (any case); the
// scores come from a column named like the task, if there is one.
func readInitCSV(path, text, task string, count int) (rows []initRow, hasScores bool, err error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, false, fmt.Errorf("optimize: %s:1: %w", path, err)
	}
	smiCol, scoreCol := -1, -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case strings.EqualFold(h, "smiles") || strings.EqualFold(h, "smile"):
			if smiCol < 0 {
				smiCol = i
			}
		case strings.EqualFold(h, task):
			scoreCol = i
		}
	}
	if smiCol < 0 {
		return nil, false, fmt.Errorf("optimize: %s:1: no smiles or smile column in the header %s", path, smiles.Quote(strings.Join(header, ",")))
	}
	for len(rows) < count {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A *csv.ParseError names the line and column.
			return nil, false, fmt.Errorf("optimize: %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if smiCol >= len(rec) || (scoreCol >= 0 && scoreCol >= len(rec)) {
			return nil, false, fmt.Errorf("optimize: %s:%d: %d fields, the header has %d", path, line, len(rec), len(header))
		}
		row := initRow{line: line, smiles: trimSpace(rec[smiCol])}
		if err := smiles.CheckText(row.smiles); err != nil {
			return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): %w", path, line, smiCol+1, header[smiCol], err)
		}
		if scoreCol >= 0 {
			v := strings.TrimSpace(rec[scoreCol])
			if row.score, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): %w", path, line, scoreCol+1, header[scoreCol], err)
			}
			if math.IsNaN(row.score) || math.IsInf(row.score, 0) {
				return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): the score %s is not a finite number",
					path, line, scoreCol+1, header[scoreCol], smiles.Quote(v))
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("optimize: %s: no molecules", path)
	}
	return rows, scoreCol >= 0, nil
}

// trimSpace returns s without leading and trailing ASCII white space (strings.TrimSpace would also take
// Unicode spaces, hiding a non-ASCII byte that CheckText must see).
func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// canonicalInit canonicalises the initial molecules with NF-BO's SELFIES round trip and returns them with the run's
// sequence length T = 1 + the longest one. Molecules that cannot be tokenised (invalid SMILES, a symbol outside
// the vocabulary, longer than maxT−1 symbols) and repeats of an earlier molecule are skipped with a message on
// warn naming the file and line.
func canonicalInit(warn io.Writer, path string, rows []initRow, voc *vocab.Vocab, maxT int) ([]initMol, int, error) {
	codec, err := molseq.New(voc, maxT)
	if err != nil {
		return nil, 0, err
	}
	var mols []initMol
	seen := map[string]int{}
	longest := 0
	for _, r := range rows {
		ids := make([]int, maxT)
		key, err := codec.FromSMILES(ids, r.smiles)
		if err != nil {
			var ee *vocab.EncodeError
			if errors.As(err, &ee) {
				ee.File, ee.Line = path, r.line
				if len(ee.Molecule) > 80 {
					ee.Molecule = ee.Molecule[:80] + fmt.Sprintf("… (%d bytes)", len(ee.Molecule))
				}
				fmt.Fprintf(warn, "nfbo optimize: %v (skipped)\n", ee)
			} else {
				fmt.Fprintf(warn, "nfbo optimize: %s:%d: %s: %v (skipped)\n", path, r.line, smiles.Quote(r.smiles), err)
			}
			continue
		}
		if first, dup := seen[key]; dup {
			fmt.Fprintf(warn, "nfbo optimize: %s:%d: same molecule as line %d (skipped)\n", path, r.line, first)
			continue
		}
		seen[key] = r.line
		n := 0
		for n < maxT && ids[n] != vocab.Stop {
			n++
		}
		longest = max(longest, n)
		mols = append(mols, initMol{line: r.line, key: key, ids: ids, n: n, score: r.score})
	}
	if len(mols) == 0 {
		return nil, 0, fmt.Errorf("optimize: %s: none of the %d initial molecules can be tokenised", path, len(rows))
	}
	return mols, longest + 1, nil
}

// openMaybeGzip opens path for reading, through gzip when its name ends in
// ".gz"; the returned func closes it.
func openMaybeGzip(path string) (io.Reader, func(), error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return fh, func() { fh.Close() }, nil
	}
	gz, err := gzip.NewReader(fh)
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return gz, func() { gz.Close(); fh.Close() }, nil
}

// isSpace reports whether c is ASCII white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// Molecule is a molecule of a molecules file after NF-BO's canonicalisation (decode and re-encode).
type Molecule struct {
	Line  int     // 1-based line in the file
	Key   string  // the codec's key: the SMILES of the canonical SELFIES
	IDs   []int   // canonical token ids, padded to the model's MaxT
	N     int     // number of symbols
	Score float64 // the task's score from the file, when it has them
}

// ReadMolecules reads up to count molecules of path (a CSV with a smiles column, and a column named task
// when it has the task's scores; or one SMILES per line; gzip when the name ends in .gz), canonicalised with
// the vocabulary voc and padded to maxT. It returns them, the sequence length T they need (1 + the longest),
// and whether the file had the task's scores. Molecules the vocabulary cannot spell, and repeats, are skipped
// with a message to warn naming the line.
func ReadMolecules(path, task string, count int, voc *vocab.Vocab, maxT int, warn io.Writer) (mols []Molecule, t int, hasScores bool, err error) {
	rows, hasScores, err := readInit(path, task, count)
	if err != nil {
		return nil, 0, false, err
	}
	ms, t, err := canonicalInit(warn, path, rows, voc, maxT)
	if err != nil {
		return nil, 0, false, err
	}
	mols = make([]Molecule, len(ms))
	for i, m := range ms {
		mols[i] = Molecule{Line: m.line, Key: m.key, IDs: m.ids, N: m.n, Score: m.score}
	}
	return mols, t, hasScores, nil
}
