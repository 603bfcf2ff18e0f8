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
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

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

// MaxTellBytes is the largest tell file Parse reads: far above any batch (a million rows of id and score).
const MaxTellBytes = 64 << 20

// Parse reads a tell file named name (for errors): either CSV with a header that has an "id" and a "score"
// column (case-insensitive; an "error" column may say why a score is missing; other columns, such as ask's
// "smiles", are ignored), or JSON lines, one object {"id": "m1", "score": 0.5} (or "error": "...") per line.
// Blank lines are skipped. A score must be a finite number, or empty with an error; an id may appear twice
// only with the same answer. The first bad row is a *RowError.
func Parse(name string, r io.Reader) ([]Told, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTellBytes+1))
	if err != nil {
		return nil, fmt.Errorf("asktell: read %s: %w", name, err)
	}
	if len(data) > MaxTellBytes {
		return nil, fmt.Errorf("asktell: %s is larger than %d MiB", name, MaxTellBytes>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // the byte order mark of some spreadsheets
	var rows []Told
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		rows, err = parseJSONLines(name, data)
	} else {
		rows, err = parseCSV(name, data)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("asktell: %s holds no rows", name)
	}
	first := map[string]Told{}
	for _, r := range rows {
		if p, ok := first[r.ID]; ok && (p.Score != r.Score || p.Error != r.Error) {
			return nil, &RowError{name, r.Line, fmt.Errorf("id %s is told %s here and %s on line %d", r.ID, answer(r), answer(p), p.Line)}
		} else if !ok {
			first[r.ID] = r
		}
	}
	return rows, nil
}

func answer(r Told) string {
	if r.Error != "" {
		return fmt.Sprintf("error %q", r.Error)
	}
	return "score " + strconv.FormatFloat(r.Score, 'g', -1, 64)
}

func parseCSV(name string, data []byte) ([]Told, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, &RowError{name, 1, fmt.Errorf("not a CSV header with id and score columns: %w", err)}
	}
	idCol, scoreCol, errCol := -1, -1, -1
	for i, h := range header {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "id":
			idCol = i
		case "score":
			scoreCol = i
		case "error":
			errCol = i
		}
	}
	if idCol < 0 || scoreCol < 0 {
		return nil, &RowError{name, 1, fmt.Errorf("header %q: want an id and a score column (CSV), or JSON lines", strings.Join(header, ","))}
	}
	var rows []Told
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, &RowError{name, line, err}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		field := func(i int) string {
			if i < 0 || i >= len(rec) {
				return ""
			}
			return strings.TrimSpace(rec[i])
		}
		t := Told{ID: field(idCol), Error: field(errCol), Line: line}
		if err := t.setScore(field(scoreCol)); err != nil {
			return nil, &RowError{name, line, err}
		}
		rows = append(rows, t)
	}
}

func parseJSONLines(name string, data []byte) ([]Told, error) {
	var rows []Told
	for i, text := range strings.Split(string(data), "\n") {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		var v struct {
			ID    json.RawMessage `json:"id"`
			Score json.RawMessage `json:"score"`
			Error string          `json:"error"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		if err := dec.Decode(&v); err != nil {
			return nil, &RowError{name, i + 1, fmt.Errorf("not a JSON object {\"id\": ..., \"score\": ...}: %w", err)}
		}
		if dec.More() {
			return nil, &RowError{name, i + 1, errors.New("more than one JSON value on the line")}
		}
		t := Told{Error: strings.TrimSpace(v.Error), Line: i + 1}
		if err := json.Unmarshal(v.ID, &t.ID); err != nil {
			var n json.Number
			if json.Unmarshal(v.ID, &n) != nil {
				return nil, &RowError{name, i + 1, fmt.Errorf("id %s: want a string such as \"m1\"", v.ID)}
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
		if err := t.setScore(score); err != nil {
			return nil, &RowError{name, i + 1, err}
		}
		rows = append(rows, t)
	}
	return rows, nil
}

// setScore parses the score field s and checks the row.
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
		return fmt.Errorf("id %s: both a score (%s) and an error (%q)", t.ID, s, t.Error)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("id %s: score %q is not a number", t.ID, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("id %s: score %q is not a finite number", t.ID, s)
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
	for _, r := range rows {
		a, ok := ledger.ByID(r.ID)
		if !ok {
			known := "none was handed out yet"
			if n := len(ledger.Items); n > 0 {
				known = fmt.Sprintf("this run handed out %s to %s", rundir.AskedID(1), rundir.AskedID(n))
			}
			return sum, &RowError{name, r.Line, fmt.Errorf("unknown id %q (%s)", r.ID, known)}
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
	}
	if rem := b.Remaining(); rem >= 0 && len(smiles) > rem {
		return sum, fmt.Errorf("asktell: %s tells %d new scores, but the run's budget has %d calls left: %w",
			name, len(smiles), rem, ErrOverBudget)
	}
	if len(smiles) > 0 {
		evs, err := b.Evaluate(ctx, smiles)
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
