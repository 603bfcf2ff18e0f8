// Package asktell holds the ask/tell side of a run: the files a user tells scores in, and applying them to a
// run directory's evaluation log. The proposing side (ask) is the optimiser's run with an objective that
// scores nothing (objective.Deferred); the molecules it hands out, and their ids, are in the run directory's
// ledger (rundir.Ledger).
//
// A told score is paid for exactly as an objective's answer is: it is appended to the evaluation log and synced
// before Tell returns, so a tell that returned has its scores on disk, and one killed midway can be sent again:
// scores already in the log are recognised and counted once.
package asktell

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// Told is one row of a tell file: the score (or the reason there is none) of the molecule handed out under ID.
type Told struct {
	// ID is the ledger id from ask, e.g. "m12".
	ID string
	// Score is the objective's value.
	Score float64
	// Error, when not empty, says why the molecule has no score (say, the synthesis failed): it is paid for and
	// logged with score 0 and this reason, as an objective's error answer is.
	Error string
	// Line is the row's 1-based line in its file.
	Line int
}

// RowError is a bad row of a tell file: it names the file, the line and what is wrong. Nothing from a file
// with a bad row is applied.
type RowError struct {
	File string
	Line int
	Err  error
}

// Error implements error as FILE:LINE: problem.
func (e *RowError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the problem.
func (e *RowError) Unwrap() error { return e.Err }

// The limits of a tell file bound what Parse holds, whatever the file. It reads the file as a stream, a line
// at a time, so the file's size costs time, not memory; it keeps the rows, 48 bytes each (twice that while
// they are gathered into one slice) and their strings, at most the file's bytes. At most MaxTellRows rows of
// a file of at most MaxTellBytes hold at most about 150 MB; a million rows of id and score take 140 MB.
const (
	// MaxTellBytes is the largest tell file Parse reads. A batch is tens to thousands of rows, and a whole run
	// (the PMO budget is 10,000 calls) fits many times over: a million rows of id and score
	// ("m1234567,0.123456789") are 21 MB, and ask's CSV sent back with a score (id, SMILES, score, about 80 bytes
	// a row) fits 400,000 rows.
	MaxTellBytes = 32 << 20
	// MaxTellRows is the most rows Parse accepts from one file: it holds them all until the file is checked,
	// since a bad row anywhere means nothing of the file is applied.
	MaxTellRows = 1 << 20
	// MaxTellLineBytes is the longest line Parse reads; a row is an id, a score and perhaps a SMILES and a reason.
	MaxTellLineBytes = 1 << 20
)

// peekBytes is how far Parse looks for the first byte that is not blank, which says whether a file is JSON lines.
const peekBytes = 64 << 10

// Parse reads a tell file named name (for errors): either CSV with a header that has an "id" and a "score"
// column (case-insensitive; an "error" column may say why a score is missing; other columns, such as ask's
// "smiles", are ignored; fields separated by tabs when the header has tabs and no comma), or JSON lines, one
// object {"id": "m1", "score": 0.5} (or "error": "...") per line. Blank lines are skipped. A score must be a
// finite number, or empty with an error; an id may appear twice only with the same answer. The first bad row is
// a *RowError.
//
// Parse reads r as a stream and stops at the first problem, so a file of up to MaxTellBytes costs memory for
// its rows only (see MaxTellRows). A file is JSON lines when its first byte that is not blank (within the first
// 64 KiB) is '{'. A file larger than MaxTellBytes is an error; so is one with more than MaxTellRows rows or a
// line longer than MaxTellLineBytes (a *RowError naming the line). An error reading r, or the size limit, is
// reported in place of a row error found after it, since that row may be cut short.
func Parse(name string, r io.Reader) ([]Told, error) {
	src := &tellReader{r: r, left: MaxTellBytes}
	br := bufio.NewReaderSize(src, peekBytes)
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	var rows rowList
	var err error
	if firstByte(br) == '{' {
		err = parseJSONLines(name, br, &rows)
	} else {
		err = parseCSV(name, br, &rows, separator(br))
	}
	if src.err != nil && src.err != io.EOF {
		// src reads ahead of the rows parsed: a bad row before a long line is the first problem, but any row
		// may be cut short by a read that failed.
		var long *longLineError
		var re *RowError
		switch {
		case errors.Is(src.err, errTooLarge):
			return nil, fmt.Errorf("asktell: %s is larger than %d MiB", name, MaxTellBytes>>20)
		case errors.As(src.err, &long) && errors.As(err, &re) && re.Line < long.line:
			return nil, err
		case long != nil:
			return nil, &RowError{name, long.line, fmt.Errorf("the line is longer than %d bytes", MaxTellLineBytes)}
		}
		return nil, fmt.Errorf("asktell: read %s: %w", name, src.err)
	}
	if err != nil {
		var re *RowError
		if !errors.As(err, &re) {
			// Not a row's error, and src read to its end: the scanner's own limit, which src's limit on lines
			// keeps it from reaching.
			return nil, fmt.Errorf("asktell: read %s: %w", name, err)
		}
		return nil, err
	}
	told := rows.all()
	if len(told) == 0 {
		return nil, fmt.Errorf("asktell: %s holds no rows", name)
	}
	if err := checkRepeats(name, told); err != nil {
		return nil, err
	}
	return told, nil
}

// bom is the byte order mark of some spreadsheets' CSV.
const bom = "\ufeff"

// firstByte returns the first byte of br that is not blank, within its buffer, without reading past it; 0 means
// none.
func firstByte(br *bufio.Reader) byte {
	for n := 1; n <= br.Size(); n++ {
		b, _ := br.Peek(n)
		if len(b) < n {
			return 0
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// separator returns the field separator of a tell table: a tab when its header line holds tabs and no comma,
// as a spreadsheet's tab-delimited export does, a comma otherwise. It looks at the header line within the first
// br.Size() bytes, without reading past them.
func separator(br *bufio.Reader) rune {
	b, _ := br.Peek(br.Size())
	header, _, _ := bytes.Cut(b, []byte("\n"))
	if bytes.IndexByte(header, '\t') >= 0 && bytes.IndexByte(header, ',') < 0 {
		return '\t'
	}
	return ','
}

// errTooLarge is tellReader's error for a file over MaxTellBytes.
var errTooLarge = errors.New("asktell: tell file too large")

// longLineError is tellReader's error for a line over MaxTellLineBytes.
type longLineError struct{ line int }

func (e *longLineError) Error() string {
	return fmt.Sprintf("asktell: line %d is longer than %d bytes", e.line, MaxTellLineBytes)
}

// tellReader reads a tell file for Parse and enforces its limits: it fails once more than left bytes come, or
// a line longer than MaxTellLineBytes, and keeps its first error (io.EOF included), so Parse can tell a row
// cut short by a failed read from a bad one.
type tellReader struct {
	r    io.Reader
	left int64 // bytes still allowed
	line int   // 0-based line being read
	col  int   // bytes of that line read so far
	err  error
}

func (t *tellReader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if t.left == 0 {
		// Exactly MaxTellBytes read: a file of that size is fine, one byte more is not.
		var one [1]byte
		n, err := io.ReadFull(t.r, one[:])
		if n > 0 {
			t.err = errTooLarge
		} else if err == io.ErrUnexpectedEOF || err == io.EOF {
			t.err = io.EOF
		} else {
			t.err = err
		}
		return 0, t.err
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.r.Read(p)
	t.left -= int64(n)
	// Pass the lines that fit; the error comes at the next read, after the rows before the long line.
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			j = n - i
		}
		if t.col+j > MaxTellLineBytes {
			t.err = &longLineError{t.line + 1}
			if i == 0 {
				return 0, t.err
			}
			return i, nil
		}
		if i+j == n {
			t.col += j
			break
		}
		t.line++
		t.col = 0
		i += j + 1
	}
	if err != nil {
		t.err = err
	}
	return n, err
}

// rowList gathers rows in blocks of rowBlock, so that a long file's rows are copied once (by all) instead of
// at each growth of one slice.
type rowList struct {
	full [][]Told
	cur  []Told
	n    int
}

const rowBlock = 4096

// add appends t, or fails when the file has more than MaxTellRows rows.
func (l *rowList) add(name string, t Told) error {
	if l.n == MaxTellRows {
		return &RowError{name, t.Line, fmt.Errorf("more than %d rows in one file; split it", MaxTellRows)}
	}
	if len(l.cur) == rowBlock {
		l.full = append(l.full, l.cur)
		l.cur = make([]Told, 0, rowBlock)
	}
	l.cur = append(l.cur, t)
	l.n++
	return nil
}

// all returns the rows in order in one slice.
func (l *rowList) all() []Told {
	if len(l.full) == 0 {
		return l.cur
	}
	out := make([]Told, 0, l.n)
	for i, b := range l.full {
		out = append(out, b...)
		l.full[i] = nil // garbage now, not at the end
	}
	return append(out, l.cur...)
}

// checkRepeats fails on the first row, in file order, whose id an earlier row told another answer. It sorts
// row indices by id (4 bytes a row) rather than filling a map of ids, which costs ten times that.
func checkRepeats(name string, rows []Told) error {
	idx := make([]int32, len(rows))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := strings.Compare(rows[a].ID, rows[b].ID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	bad, badFirst := -1, -1 // the first row told otherwise, and the first row of its id
	first := 0
	for k, i := range idx {
		if k == 0 || rows[i].ID != rows[first].ID {
			first = int(i)
			continue
		}
		r, p := rows[i], rows[first]
		if (p.Score != r.Score || p.Error != r.Error) && (bad < 0 || int(i) < bad) {
			bad, badFirst = int(i), first
		}
	}
	if bad < 0 {
		return nil
	}
	r, p := rows[bad], rows[badFirst]
	return &RowError{name, r.Line, fmt.Errorf("id %s is told %s here and %s on line %d", r.ID, answer(r), answer(p), p.Line)}
}

// excerpt quotes s, or its first 60 bytes and its length when it is longer: an error names the input it refuses
// without echoing a line of a megabyte back.
func excerpt(s string) string {
	const max = 60
	if len(s) <= max {
		return strconv.Quote(s)
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:n]), len(s))
}

func answer(r Told) string {
	if r.Error != "" {
		return "error " + excerpt(r.Error)
	}
	return "score " + strconv.FormatFloat(r.Score, 'g', -1, 64)
}

func parseCSV(name string, r io.Reader, rows *rowList, comma rune) error {
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return &RowError{name, 1, fmt.Errorf("not a CSV header with id and score columns: %w", err)}
	}
	idCol, scoreCol, errCol := -1, -1, -1
	for i, h := range header {
		var col *int
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "id":
			col = &idCol
		case "score":
			col = &scoreCol
		case "error":
			col = &errCol
		default:
			continue
		}
		if *col >= 0 { // which one is meant is a guess: refuse rather than take the last
			return &RowError{name, 1, fmt.Errorf("header %s has two %q columns (%d and %d)", excerpt(strings.Join(header, ",")),
				strings.ToLower(strings.TrimSpace(h)), *col+1, i+1)}
		}
		*col = i
	}
	width := len(header)
	if idCol < 0 || scoreCol < 0 {
		if len(header) == 1 && strings.Contains(header[0], ";") {
			return &RowError{name, 1, fmt.Errorf("header %s: %w", excerpt(header[0]), objective.ErrSemicolons)}
		}
		return &RowError{name, 1, fmt.Errorf("header %s: want an id and a score column (CSV), or JSON lines", excerpt(strings.Join(header, ",")))}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return &RowError{name, pe.Line, err}
		} else if err != nil {
			return err // a failed read, which Parse reports
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != width {
			// A field too many (an unquoted comma in a note) shifts the score column: refuse the row.
			return &RowError{name, line, fmt.Errorf("%d fields, the header has %d", len(rec), width)}
		}
		field := func(i int) string {
			if i < 0 || i >= len(rec) {
				return ""
			}
			return strings.TrimSpace(rec[i])
		}
		// The fields are slices of one string holding the whole record (with, say, a SMILES column); the row
		// keeps copies of its own, so that string can go.
		t := Told{ID: strings.Clone(field(idCol)), Error: strings.Clone(field(errCol)), Line: line}
		if err := t.setScore(field(scoreCol)); err != nil {
			return &RowError{name, line, err}
		}
		if err := rows.add(name, t); err != nil {
			return err
		}
	}
}

func parseJSONLines(name string, r io.Reader, rows *rowList) error {
	sc := bufio.NewScanner(r)
	// tellReader refuses longer lines first, naming the line; this leaves room for the newline.
	sc.Buffer(nil, MaxTellLineBytes+64)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		t, err := jsonLine(text)
		if err != nil {
			return &RowError{name, line, err}
		}
		t.Line = line
		if err := rows.add(name, t); err != nil {
			return err
		}
	}
	return sc.Err() // a failed read, which Parse reports
}

// jsonLine decodes one line of JSON lines into a row. The usual line, one object whose values are strings
// without escapes, numbers or null, is read here, and costs the row's strings only (encoding/json costs ten
// times that, which for a million rows is a quarter of a gigabyte); any other line, including every bad one,
// goes to jsonLineSlow, which decodes it with encoding/json and says what is wrong. FuzzJSONLine checks that
// both give the same answer.
func jsonLine(text []byte) (Told, error) {
	var id, score, reason []byte
	var haveID, haveScore, haveReason bool
	p := jsonScan{b: text}
	if !p.next('{') {
		return jsonLineSlow(text)
	}
	for {
		key, kind := p.value()
		if kind != jsonString || !p.next(':') {
			return jsonLineSlow(text)
		}
		val, kind := p.value()
		if kind == jsonNull {
			val = nil
		}
		switch {
		case kind == jsonInvalid:
			return jsonLineSlow(text)
		case string(key) == "id" && !haveID && (kind == jsonString || kind == jsonNumber):
			id, haveID = val, true
		case string(key) == "score" && !haveScore && kind != jsonBool:
			score, haveScore = val, true
		case string(key) == "error" && !haveReason && (kind == jsonString || kind == jsonNull):
			reason, haveReason = val, true
		case bytes.EqualFold(key, []byte("id")) || bytes.EqualFold(key, []byte("score")) || bytes.EqualFold(key, []byte("error")):
			// Another kind of value, a key repeated (the last wins) or written otherwise (encoding/json
			// matches keys without regard to case).
			return jsonLineSlow(text)
		}
		if p.next('}') {
			break
		}
		if !p.next(',') {
			return jsonLineSlow(text)
		}
	}
	if p.skipSpace(); p.i != len(p.b) || !haveID {
		return jsonLineSlow(text)
	}
	t := Told{ID: string(id), Error: strings.TrimSpace(string(reason))}
	return t, t.setScore(string(score))
}

// The kinds of value jsonScan reads.
const (
	jsonInvalid = iota // anything else: an object, an array, a string with escapes, or not JSON
	jsonString
	jsonNumber
	jsonNull
	jsonBool
)

// jsonScan reads the simple JSON of the usual tell line (RFC 8259).
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) skipSpace() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

// next skips blanks and reads c if it comes next.
func (p *jsonScan) next(c byte) bool {
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// value skips blanks and reads a value: a string's text between its quotes, the text of another kind.
func (p *jsonScan) value() ([]byte, int) {
	p.skipSpace()
	if p.i == len(p.b) {
		return nil, jsonInvalid
	}
	start := p.i
	switch c := p.b[p.i]; {
	case c == '"':
		for p.i++; p.i < len(p.b); p.i++ {
			switch c := p.b[p.i]; {
			case c == '"':
				s := p.b[start+1 : p.i]
				p.i++
				if !utf8.Valid(s) {
					return nil, jsonInvalid // encoding/json replaces bad bytes
				}
				return s, jsonString
			case c == '\\' || c < 0x20:
				return nil, jsonInvalid
			}
		}
		return nil, jsonInvalid
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	for _, w := range [...]struct {
		text string
		kind int
	}{{"null", jsonNull}, {"true", jsonBool}, {"false", jsonBool}} {
		if bytes.HasPrefix(p.b[p.i:], []byte(w.text)) {
			p.i += len(w.text)
			return p.b[start:p.i], w.kind
		}
	}
	return nil, jsonInvalid
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *jsonScan) number() ([]byte, int) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, jsonInvalid
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, jsonInvalid
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, jsonInvalid
		}
	}
	return p.b[start:p.i], jsonNumber
}

// repeatedKey returns the first of the keys id, score and error that appears twice in the JSON object text
// (compared without regard to case, as encoding/json matches them), or "" when none does or text is not an
// object. Other keys are not read, so their repeats are no one's concern.
func repeatedKey(text []byte) string {
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := tok.(string)
		if l := strings.ToLower(key); l == "id" || l == "score" || l == "error" {
			if seen[l] {
				return key
			}
			seen[l] = true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// jsonLineSlow decodes one line of JSON lines into a row, saying what is wrong with a bad one.
func jsonLineSlow(text []byte) (Told, error) {
	if k := repeatedKey(text); k != "" {
		return Told{}, fmt.Errorf("key %q appears twice on the line: which value is meant is a guess", k)
	}
	var v struct {
		ID    json.RawMessage `json:"id"`
		Score json.RawMessage `json:"score"`
		Error string          `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&v); err != nil {
		return Told{}, fmt.Errorf("not a JSON object {\"id\": ..., \"score\": ...}: %w", err)
	}
	if dec.More() {
		return Told{}, errors.New("more than one JSON value on the line")
	}
	t := Told{Error: strings.TrimSpace(v.Error)}
	if err := json.Unmarshal(v.ID, &t.ID); err != nil {
		var n json.Number
		if json.Unmarshal(v.ID, &n) != nil {
			return Told{}, fmt.Errorf("id %s: want a string such as \"m1\"", v.ID)
		}
		t.ID = n.String()
	}
	score := strings.TrimSpace(string(v.Score))
	if score == "null" {
		score = ""
	}
	if unq, err := strconv.Unquote(score); err == nil {
		score = unq
	}
	return t, t.setScore(score)
}

// setScore parses the score field s and checks the row. Its errors quote a copy of s, so that s does not
// escape and a caller's string(bytes) of each row's score can stay on the stack.
func (t *Told) setScore(s string) error {
	t.ID = strings.TrimSpace(t.ID)
	if t.ID == "" {
		return errors.New("no id")
	}
	if s == "" {
		if t.Error == "" {
			return fmt.Errorf("id %s: no score (give a number, or an error saying why there is none)", t.ID)
		}
		return nil
	}
	if t.Error != "" {
		return fmt.Errorf("id %s: both a score (%s) and an error (%s)", t.ID, excerpt(string(s)), excerpt(t.Error))
	}
	v, err := objective.ParseScore(s)
	if err != nil {
		return fmt.Errorf("id %s: score %w", t.ID, err)
	}
	t.Score = v
	return nil
}

// ErrOverBudget is wrapped by Tell's error for a file with more new scores than the run's budget has calls left.
// It cannot happen with ids handed out by ask, which never hands out more molecules than the budget pays for.
var ErrOverBudget = errors.New("more new scores than calls left")

// Summary says what a Tell did.
type Summary struct {
	// New is the number of molecules paid for now: their scores are in the evaluation log.
	New int
	// Repeated is the number of rows whose molecule was already told with the same answer (a file sent again):
	// counted once, not paid again.
	Repeated int
	// Calls is the number of paid calls in the log after the tell.
	Calls int
	// Awaiting is the number of molecules handed out by ask and not told yet.
	Awaiting int
}

// Options are a run's settings that Tell needs.
type Options struct {
	// Task is the run's task, written in each record; a log of another task is refused.
	Task string
	// Limit is the run's budget of paid calls; 0 means none.
	Limit int
	// Warnf is told about a torn last line dropped from the log (a crash during an earlier write); nil means
	// no warnings.
	Warnf func(format string, args ...any)
}

// Tell applies rows, read from the file name, to the run directory dir, whose lock the caller holds: every
// id must be in the ledger, and a molecule already told must be told the same answer. All rows are checked
// before any is applied, so a bad file changes nothing; then the new answers are appended to the evaluation log
// and synced in one write.
func Tell(ctx context.Context, dir, name string, rows []Told, opts Options) (Summary, error) {
	var sum Summary
	warnf := opts.Warnf
	if warnf == nil {
		warnf = func(string, ...any) {}
	}
	ledger, err := rundir.ReadLedger(dir)
	if err != nil {
		return sum, err
	}
	tolds := map[string]objective.Result{}
	canon := ledgerCanon{}
	for _, a := range ledger.Items {
		canon[a.SMILES] = a.Canonical
	}
	b, err := objective.OpenBudget(filepath.Join(dir, rundir.EvalLogFile), toldObjective(tolds), canon,
		objective.BudgetOptions{Limit: opts.Limit, Task: opts.Task, MaxErrorStreak: -1, Warnf: warnf})
	if err != nil {
		return sum, fmt.Errorf("asktell: %w", err)
	}
	defer b.Close()
	var smiles []string
	var from []rundir.Origin // each molecule's origin as the ledger keeps it, for its record
	for _, r := range rows {
		a, ok := ledger.ByID(r.ID)
		if !ok {
			known := "none was handed out yet"
			if n := len(ledger.Items); n > 0 {
				known = fmt.Sprintf("this run handed out %s to %s", rundir.AskedID(1), rundir.AskedID(n))
			}
			return sum, &RowError{name, r.Line, fmt.Errorf("unknown id %s (%s)", excerpt(r.ID), known)}
		}
		key := a.Canonical
		if key == "" {
			key = a.SMILES
		}
		if rec, ok := b.Lookup(key); ok {
			if rec.Score != r.Score || rec.Error != r.Error {
				was := Told{Score: rec.Score, Error: rec.Error}
				return sum, &RowError{name, r.Line, fmt.Errorf("id %s (%s) was told %s at call %d; a paid answer cannot be changed",
					r.ID, key, answer(was), rec.Call)}
			}
			sum.Repeated++
			continue
		}
		if _, dup := tolds[a.SMILES]; dup {
			sum.Repeated++
			continue
		}
		res := objective.Result{Score: r.Score, Reason: r.Error, Done: true}
		if r.Error != "" {
			res.Score = 0
		}
		tolds[a.SMILES] = res
		smiles = append(smiles, a.SMILES)
		var o rundir.Origin
		if a.From != nil {
			o = *a.From
		}
		from = append(from, o)
	}
	if rem := b.Remaining(); rem >= 0 && len(smiles) > rem {
		return sum, fmt.Errorf("asktell: %s tells %d new scores, but the run's budget has %d calls left: %w",
			name, len(smiles), rem, ErrOverBudget)
	}
	if len(smiles) > 0 {
		evs, err := b.EvaluateFrom(ctx, smiles, from)
		if err != nil {
			return sum, fmt.Errorf("asktell: %w", err)
		}
		for _, e := range evs {
			if e.Status == objective.Paid {
				sum.New++
			}
		}
	}
	sum.Calls = b.Calls()
	for _, a := range ledger.Items {
		key := a.Canonical
		if key == "" {
			key = a.SMILES
		}
		if _, ok := b.Lookup(key); !ok {
			sum.Awaiting++
		}
	}
	return sum, nil
}

// TellRun tells rows, read from the file name, to the run in dir, whose lock the caller holds and whose run.json
// it read as info: Tell with the run's task and budget, then run.json's count of calls brought up to the log's.
// It is the one writer of run.json after a tell (nfbo tell and nfbo serve call it). An error from Tell says
// that nothing was applied; one from writing run.json says that the scores are in the log (the next tell or
// ask brings run.json up to date).
func TellRun(ctx context.Context, dir, name string, rows []Told, info rundir.Info, warnf func(format string, args ...any)) (Summary, error) {
	sum, err := Tell(ctx, dir, name, rows, Options{Task: info.Task, Limit: info.Budget, Warnf: warnf})
	if err != nil {
		return sum, fmt.Errorf("%w; nothing was applied", err)
	}
	if sum.Calls > info.Calls {
		info.Calls = sum.Calls
		if err := rundir.WriteInfo(dir, info); err != nil {
			return sum, fmt.Errorf("the scores are in the log, but %w", err)
		}
	}
	return sum, nil
}

// toldObjective answers the molecules of a tell from its rows.
type toldObjective map[string]objective.Result

// Score returns the told answers; a molecule without one (which Tell never asks for) is an error.
func (t toldObjective) Score(_ context.Context, smiles []string) ([]objective.Result, error) {
	out := make([]objective.Result, len(smiles))
	for i, s := range smiles {
		r, ok := t[s]
		if !ok {
			return nil, fmt.Errorf("asktell: no told score for %s", s)
		}
		out[i] = r
	}
	return out, nil
}

// ledgerCanon canonicalises the molecules of the ledger as ask did when it handed them out, so tell needs no
// RDKit.
type ledgerCanon map[string]string

// Canonicalize returns the ledger's canonical form of each molecule (the molecule itself when ask had none).
func (c ledgerCanon) Canonicalize(_ context.Context, smiles []string, _ bool) ([]objective.Canonical, error) {
	out := make([]objective.Canonical, len(smiles))
	for i, s := range smiles {
		k, ok := c[s]
		switch {
		case !ok:
			return nil, fmt.Errorf("asktell: %s is not in the ledger", s)
		case k == "":
			k = s
		}
		out[i].SMILES = k
	}
	return out, nil
}
