package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Record is one paid evaluation, one JSON line of the evaluation log:
//
//	{"call":1,"smiles":"OCC","canonical":"CCO","score":0.25,"error":"","time":"2026-11-21T14:00:00.1Z","task":"adip"}
//
// Call numbers start at 1 and increase by one per line.
type Record struct {
	// Call is the 1-based index of the paid call.
	Call int `json:"call"`
	// SMILES is the molecule as the caller gave it (the one scored).
	SMILES string `json:"smiles"`
	// Canonical is its RDKit canonical SMILES, the cache key.
	Canonical string `json:"canonical"`
	// Score is the objective value (0 when Error is set).
	Score float64 `json:"score"`
	// Error is the reason the score is 0, or empty.
	Error string `json:"error"`
	// Time is when the score was returned by the objective (UTC).
	Time time.Time `json:"time"`
	// Task names the objective, so a log is never resumed with another.
	Task string `json:"task,omitempty"`
}

// LogError reports a malformed evaluation log: a line that is not a record
// or whose call number is out of sequence. Only a torn last line (no
// newline) is forgiven; anything else means the file was damaged or
// written by something else, and resuming from it would mis-count.
type LogError struct {
	Path string
	Line int // 1-based
	Err  error
}

// Error implements error, naming the file and line.
func (e *LogError) Error() string {
	return fmt.Sprintf("evaluation log %s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the underlying problem.
func (e *LogError) Unwrap() error { return e.Err }

// ReadLog reads every complete record of an evaluation log. A last line
// without its newline is a torn write from a crash: it is not a record,
// and ReadLog returns its byte offset as end (the length of the complete
// part) and its length as torn, so the caller can drop it. Any complete
// line that is not a valid, in-sequence record is a *LogError.
func ReadLog(path string) (recs []Record, end int64, torn int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("rundir: reading evaluation log: %w", err)
	}
	return parseLog(path, data)
}

func parseLog(path string, data []byte) (recs []Record, end int64, torn int, err error) {
	line := 0
	for len(data[end:]) > 0 {
		rest := data[end:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return recs, end, len(rest), nil
		}
		line++
		text := rest[:nl]
		var r Record
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, 0, 0, &LogError{Path: path, Line: line, Err: fmt.Errorf("not a record: %w", err)}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, 0, 0, &LogError{Path: path, Line: line, Err: fmt.Errorf("trailing data after the record")}
		}
		if r.Call != len(recs)+1 {
			return nil, 0, 0, &LogError{Path: path, Line: line,
				Err: fmt.Errorf("call %d out of sequence (want %d)", r.Call, len(recs)+1)}
		}
		recs = append(recs, r)
		end += int64(nl + 1)
	}
	return recs, end, 0, nil
}

// RecordScores returns the records' scores in call order: the input of
// metrics.TopK and metrics.AUCTopK for a run read back with ReadLog.
func RecordScores(recs []Record) []float64 {
	s := make([]float64, len(recs))
	for i, r := range recs {
		s[i] = r.Score
	}
	return s
}

// NoAnswerPrefix begins the Error of the records that nfbo wrote, before
// it learnt to tell a broken objective from a poisonous molecule, for
// molecules its objective never answered (a worker that crashed, hung or
// garbled its answer on every attempt). They hold no answer, only a 0.
const NoAnswerPrefix = "worker failed on this molecule"

// NoAnswer reports whether r is a record that an earlier nfbo wrote for a
// molecule its objective never answered (its Error begins "worker failed
// on this molecule"): a 0 that is no score. OpenBudget drops such records
// from the log, so that they are not paid for and the molecules are scored
// again; a reader that counts a log's paid calls should skip them too.
func (r Record) NoAnswer() bool {
	return strings.HasPrefix(r.Error, NoAnswerPrefix)
}
