// Package molfile reads the molecule files people keep, as every command that takes molecules reads them (nfbo
// optimize's and ask's -init, recon's, flowstats' and fitcheck's data, score's tables and SDFs): a CSV or
// tab-separated table with a SMILES column (and scores in a column named like the task, names in a name or id
// column), one SMILES per line (a name after it), or an SDF (a molecule per record, scores in a data item named
// like the task); gzip when the name ends in .gz. Read and Parse return the rows as written; Canonicalize turns them into NF-BO's canonical
// token sequences (the SELFIES round trip of chem/molseq), skipping what the vocabulary cannot spell and repeats.
//
// Errors name the file and the line (and the column of a table). A SMILES that holds a byte that is not
// printable ASCII (another encoding, a binary file) and a score that is not a finite number are errors, found
// before anything is paid.
package molfile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/sdf"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/internal/textfile"
)

// Row is one molecule of a file, as written.
type Row struct {
	Line     int // 1-based line (an SDF record's first line)
	SMILES   string
	Score    float64 // the task's score, when the file has them
	Name     string  // the molecule's name in the file (an SDF title, a name or id column), if any
	MolBlock string  // an SDF record's molfile block; SMILES is empty until RDKit reads it
}

// Where returns "path:line" and the row's name in parentheses, if it has one: where a message about the row
// points.
func (r Row) Where(path string) string {
	return fmt.Sprintf("%s:%d%s", path, r.Line, named(r.Name))
}

// named returns " (name)", or "" for a molecule without a name.
func named(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// Read reads the first count molecules of the file path (through gzip when its name ends in ".gz"), with the
// scores of the column (or SDF data item) named like column, any case, when it has one: see Parse.
func Read(path, column string, count int) (rows []Row, hasScores bool, err error) {
	r, err := textfile.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(path, b, column, count)
}

// Parse reads the first count molecules of the file path, whose bytes are data: an SDF, a CSV (a comma in the
// first line) or tab-separated table whose header names the SMILES column ("smiles" or "smile"), or one SMILES
// per line, whose first field is the SMILES (lines starting with '#' and a first line "smiles" are skipped).
// hasScores says whether the file has the scores of column; then every molecule has one.
func Parse(path string, data []byte, column string, count int) (rows []Row, hasScores bool, err error) {
	if sdf.Looks(data) {
		return parseSDF(path, data, column, count)
	}
	text := strings.TrimPrefix(string(data), "\ufeff") // the byte order mark some editors write
	first, _, _ := strings.Cut(text, "\n")
	if strings.Contains(first, ",") {
		return parseTable(path, text, column, count, ',')
	}
	if tsvHeader(first) {
		return parseTable(path, text, column, count, '\t')
	}
	if smilesHeader(strings.Split(first, ";")) {
		return nil, false, fmt.Errorf("%s:1: %w", path, objective.ErrSemicolons)
	}
	for i, line := range strings.Split(text, "\n") {
		if len(rows) == count {
			break
		}
		f, _ := smiles.FirstField(line)
		if f == "" || strings.HasPrefix(f, "#") || (i == 0 && strings.EqualFold(f, "smiles")) {
			continue
		}
		if err := smiles.CheckText(f); err != nil {
			return nil, false, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		rows = append(rows, Row{Line: i + 1, SMILES: f, Name: strings.TrimSpace(strings.TrimPrefix(trimSpace(line), f))})
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("%s: no molecules", path)
	}
	return rows, false, nil
}

// Tabular reports whether a file that begins with head (its first four lines at least, or all of it) is an SDF or
// a table whose header names the SMILES column rather than one SMILES per line, so that a reader streaming SMILES
// lines (nfbo score) can hand the others to Parse whole. An SDF shows itself by a molfile's counts line (V2000 or
// V3000 on the fourth line) or its "M  END". A SMILES file whose first molecule's name holds a comma is no table.
func Tabular(head []byte) bool {
	lines := strings.SplitN(strings.TrimPrefix(string(head), "\ufeff"), "\n", 5)
	if len(lines) >= 4 && (strings.Contains(lines[3], "V2000") || strings.Contains(lines[3], "V3000")) {
		return true
	}
	first := strings.TrimRight(lines[0], "\r")
	fields, _ := csv.NewReader(strings.NewReader(first)).Read()
	return sdf.Looks(head) || smilesHeader(fields) || tsvHeader(first) || smilesHeader(strings.Split(first, ";"))
}

// parseSDF reads an SDF: a molecule per record, named by its title line, with the scores of a data item named
// like column when any record has one (then every record must).
func parseSDF(path string, data []byte, column string, count int) (rows []Row, hasScores bool, err error) {
	recs, err := sdf.Read(path, bytes.NewReader(data))
	if err != nil {
		return nil, false, err
	}
	scored := 0
	for _, r := range recs {
		if _, ok := dataItem(r.Data, column); ok {
			scored++
		}
	}
	hasScores = scored > 0
	for _, r := range recs {
		if len(rows) == count {
			break
		}
		row := Row{Line: r.Line, Name: r.Name, MolBlock: r.MolBlock}
		if hasScores {
			v, ok := dataItem(r.Data, column)
			if !ok {
				return nil, false, fmt.Errorf("%s:%d: record %q has no <%s> item, but %d others have one: give every "+
					"record a score, or none", path, r.Line, r.Name, column, scored)
			}
			if row.Score, err = objective.ParseScore(strings.TrimSpace(v)); err != nil {
				return nil, false, fmt.Errorf("%s:%d: record %q: <%s> %w", path, r.Line, r.Name, column, err)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("%s: no molecules", path)
	}
	return rows, hasScores, nil
}

// dataItem returns the SDF data item named like column (any case).
func dataItem(data map[string]string, column string) (string, bool) {
	for k, v := range data {
		if strings.EqualFold(strings.TrimSpace(k), column) {
			return v, true
		}
	}
	return "", false
}

// parseTable reads a table (header first), its fields separated by comma (',', or '\t' for a tab-separated
// file). The SMILES column is "smiles" or "smile" (any case); the scores come from a column named like column,
// if there is one.
func parseTable(path, text, column string, count int, comma rune) (rows []Row, hasScores bool, err error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = comma
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, false, fmt.Errorf("%s:1: %w", path, err)
	}
	smiCol, scoreCol, nameCol := -1, -1, -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case strings.EqualFold(h, "smiles") || strings.EqualFold(h, "smile"):
			if smiCol < 0 {
				smiCol = i
			}
		case strings.EqualFold(h, column):
			scoreCol = i
		case strings.EqualFold(h, "name") || (strings.EqualFold(h, "id") && nameCol < 0):
			nameCol = i // a compound's name, or its id in the user's own registry
		}
	}
	if smiCol < 0 {
		return nil, false, fmt.Errorf("%s:1: no smiles or smile column in the header %s", path, smiles.Quote(strings.Join(header, ",")))
	}
	for len(rows) < count {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A *csv.ParseError names the line and column.
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if smiCol >= len(rec) || (scoreCol >= 0 && scoreCol >= len(rec)) {
			return nil, false, fmt.Errorf("%s:%d: %d fields, the header has %d", path, line, len(rec), len(header))
		}
		row := Row{Line: line, SMILES: trimSpace(rec[smiCol])}
		if nameCol >= 0 && nameCol < len(rec) {
			row.Name = strings.TrimSpace(rec[nameCol])
		}
		if err := smiles.CheckText(row.SMILES); err != nil {
			return nil, false, fmt.Errorf("%s:%d: column %d (%s): %w", path, line, smiCol+1, header[smiCol], err)
		}
		if scoreCol >= 0 {
			v := strings.TrimSpace(rec[scoreCol])
			if v == "" {
				return nil, false, fmt.Errorf("%s:%d: column %d (%s): no score: give every molecule a score, or "+
					"drop the column to have the objective score them", path, line, scoreCol+1, header[scoreCol])
			}
			if row.Score, err = objective.ParseScore(v); err != nil {
				return nil, false, fmt.Errorf("%s:%d: column %d (%s): the score %w", path, line, scoreCol+1, header[scoreCol], err)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("%s: no molecules", path)
	}
	return rows, scoreCol >= 0, nil
}

// ScoreColumns returns the columns of a CSV or tab-separated file's header other than its SMILES, name and id
// columns and SELFIES (those that may hold scores), or nil for another file or one that cannot be read.
func ScoreColumns(path string) []string {
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

// isSpace reports whether c is ASCII white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// tsvHeader reports whether line, a file's first line, is the header of a tab-separated table: tabs between
// its fields, one of which names the SMILES column. A SMILES file whose lines hold a name after a tab has no
// such header, and a spreadsheet's table exported with tabs (DataWarrior's, say) keeps its scores.
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
