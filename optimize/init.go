package optimize

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/sdf"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/internal/textfile"
)

// initRow is one molecule of an init file.
type initRow struct {
	line     int // 1-based
	smiles   string
	score    float64
	name     string // the molecule's name in the file (an SDF title, a name column), if any
	molblock string // an SDF record's molfile block, read by RDKit into smiles (standardizeInit)
}

// named returns " (name)", or "" for a molecule without a name.
func named(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// readInitSDF reads an SDF init file: a molecule per record, named by its title line, with the task's scores
// from a data item named like the task when every record has one.
func readInitSDF(path string, data []byte, task string, count int) (rows []initRow, hasScores bool, err error) {
	recs, err := sdf.Read(path, bytes.NewReader(data))
	if err != nil {
		return nil, false, fmt.Errorf("optimize: %w", err)
	}
	scored := 0
	for _, r := range recs {
		if _, ok := dataItem(r.Data, task); ok {
			scored++
		}
	}
	hasScores = scored > 0
	for _, r := range recs {
		if len(rows) == count {
			break
		}
		row := initRow{line: r.Line, name: r.Name, molblock: r.MolBlock}
		if hasScores {
			v, ok := dataItem(r.Data, task)
			if !ok {
				return nil, false, fmt.Errorf("optimize: %s:%d: record %q has no <%s> item, but %d others have one: give every "+
					"record a score, or none", path, r.Line, r.Name, task, scored)
			}
			if row.score, err = objective.ParseScore(strings.TrimSpace(v)); err != nil {
				return nil, false, fmt.Errorf("optimize: %s:%d: record %q: <%s> %w", path, r.Line, r.Name, task, err)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("optimize: %s: no molecules", path)
	}
	return rows, hasScores, nil
}

// dataItem returns the SDF data item named like the task (any case).
func dataItem(data map[string]string, task string) (string, bool) {
	for k, v := range data {
		if strings.EqualFold(strings.TrimSpace(k), task) {
			return v, true
		}
	}
	return "", false
}

// standardizeInit reads the SDF records of rows and reduces salts and mixtures to their parent molecule with
// RDKit (objective.Pool.Standardize), saying so per molecule on warn; a record RDKit cannot read is skipped with
// its line. Without RDKit an SDF is an error and mixtures are left as they are (canonicalInit skips them).
func standardizeInit(ctx context.Context, python, path string, rows []initRow, warn io.Writer) ([]initRow, error) {
	var idx []int
	var texts []string
	blocks := rows[0].molblock != ""
	for i, r := range rows {
		switch {
		case blocks:
			texts = append(texts, r.molblock)
		case strings.Contains(r.smiles, "."):
			texts = append(texts, r.smiles)
		default:
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return rows, nil
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{Python: python})
	if err == nil {
		defer pool.Close()
		err = pool.Start(ctx)
	}
	if err != nil {
		if !blocks && errors.Is(err, objective.ErrRDKitMissing) {
			return rows, nil
		}
		return nil, fmt.Errorf("optimize: reading %s needs RDKit: %w", path, err)
	}
	std, err := pool.Standardize(ctx, texts, blocks)
	if err != nil {
		return nil, fmt.Errorf("optimize: %s: %w", path, err)
	}
	skip := map[int]bool{}
	for k, i := range idx {
		r, s := &rows[i], std[k]
		what := fmt.Sprintf("%s:%d%s", path, r.line, named(r.name))
		switch {
		case s.SMILES == "":
			fmt.Fprintf(warn, "nfbo optimize: %s: %s (skipped)\n", what, s.Reason)
			skip[i] = true
		case s.Note != "":
			fmt.Fprintf(warn, "nfbo optimize: %s: %s: %s\n", what, s.Note, s.SMILES)
		}
		r.smiles = s.SMILES
	}
	if len(skip) == 0 {
		return rows, nil
	}
	kept := rows[:0:0]
	for i, r := range rows {
		if !skip[i] {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("optimize: %s: none of its %d molecules can be read", path, len(rows))
	}
	return kept, nil
}

// readInitCSV reads a CSV init file (header first), its fields separated by comma (',', or '\t' for a
// tab-separated file). The SMILES column is "smiles" or "smile" (any case); the scores come from a column named
// like the task, if there is one.
func readInitCSV(path, text, task string, count int, comma rune) (rows []initRow, hasScores bool, err error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = comma
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, false, fmt.Errorf("optimize: %s:1: %w", path, err)
	}
	smiCol, scoreCol, nameCol := -1, -1, -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case strings.EqualFold(h, "smiles") || strings.EqualFold(h, "smile"):
			if smiCol < 0 {
				smiCol = i
			}
		case strings.EqualFold(h, task):
			scoreCol = i
		case strings.EqualFold(h, "name") || (strings.EqualFold(h, "id") && nameCol < 0):
			nameCol = i // a compound's name, or its id in the user's own registry
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
		if nameCol >= 0 && nameCol < len(rec) {
			row.name = strings.TrimSpace(rec[nameCol])
		}
		if err := smiles.CheckText(row.smiles); err != nil {
			return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): %w", path, line, smiCol+1, header[smiCol], err)
		}
		if scoreCol >= 0 {
			v := strings.TrimSpace(rec[scoreCol])
			if v == "" {
				return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): no score: give every molecule a score, or "+
					"drop the column to have the objective score them", path, line, scoreCol+1, header[scoreCol])
			}
			if row.score, err = objective.ParseScore(v); err != nil {
				return nil, false, fmt.Errorf("optimize: %s:%d: column %d (%s): the score %w", path, line, scoreCol+1, header[scoreCol], err)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("optimize: %s: no molecules", path)
	}
	return rows, scoreCol >= 0, nil
}

// initColumns returns the columns of a CSV or tab-separated init file's header other than its SMILES, name and
// id columns and SELFIES (those that may hold scores), or nil for another file or one that cannot be read.
func initColumns(path string) []string {
	r, err := textfile.Open(path)
	if err != nil {
		return nil
	}
	defer r.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimRight(strings.TrimPrefix(line, "\ufeff"), "\r\n")
	var fields []string
	switch {
	case tsvHeader(line):
		fields = strings.Split(line, "\t")
	case strings.Contains(line, ","):
		fields, _ = csv.NewReader(strings.NewReader(line)).Read()
	}
	if !smilesHeader(fields) {
		return nil
	}
	var others []string
	for _, h := range fields {
		switch h = strings.TrimSpace(h); strings.ToLower(h) {
		case "smiles", "smile", "selfies", "selfie", "name", "id", "":
		default:
			others = append(others, h)
		}
	}
	return others
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

// tsvHeader reports whether line, an init file's first line, is the header of a tab-separated table: tabs
// between its fields, one of which names the SMILES column. A SMILES file whose lines hold a name after a tab
// has no such header, and a spreadsheet's table exported with tabs (DataWarrior's, say) keeps its scores.
func tsvHeader(line string) bool {
	return strings.Contains(line, "\t") && smilesHeader(strings.Split(line, "\t"))
}

// smilesHeader reports whether a table's header has more than one field, one of which names the SMILES column.
func smilesHeader(fields []string) bool {
	if len(fields) < 2 {
		return false
	}
	for _, h := range fields {
		if h = strings.TrimSpace(h); strings.EqualFold(h, "smiles") || strings.EqualFold(h, "smile") {
			return true
		}
	}
	return false
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
				skipped := "skipped"
				if r.name != "" {
					skipped += "; " + r.name
				}
				fmt.Fprintf(warn, "nfbo optimize: %v (%s)\n", ee, skipped)
			} else {
				fmt.Fprintf(warn, "nfbo optimize: %s:%d%s: %s: %v (skipped)\n", path, r.line, named(r.name), smiles.Quote(r.smiles), err)
			}
			continue
		}
		if first, dup := seen[key]; dup {
			fmt.Fprintf(warn, "nfbo optimize: %s:%d%s: same molecule as line %d (skipped)\n", path, r.line, named(r.name), first)
			continue
		}
		seen[key] = r.line
		n := 0
		for n < maxT && ids[n] != vocab.Stop {
			n++
		}
		longest = max(longest, n)
		mols = append(mols, initMol{line: r.line, key: key, ids: ids, n: n, score: r.score, name: r.name})
	}
	if len(mols) == 0 {
		return nil, 0, fmt.Errorf("optimize: %s: none of the %d initial molecules can be tokenised", path, len(rows))
	}
	return mols, longest + 1, nil
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
