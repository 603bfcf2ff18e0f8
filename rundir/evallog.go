package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Record is one paid evaluation, one JSON line of the evaluation log (AppendRecord):
//
//	{"call":1,"smiles":"OCC","canonical":"CCO","score":0.25,"error":"","time":"2026-11-21T14:00:00.1Z","task":"adip","crc":"8c1c2f0e"}
//
// and, for a molecule the optimiser proposed, where it came from (Origin):
//
//	{"call":2,...,"task":"adip","from":{"by":"crossover","parents":["CCO","c1ccccc1"]},"crc":"..."}
//
// Call numbers start at 1 and increase by one per line. The last field, crc, is the CRC-32C of the line without
// it: a changed digit of a score or character of a SMILES is found by ReadLog, which names the line. Logs of
// an earlier nfbo have no crc; they read as before (ReadLogChecked counts them).
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
	// From is how the optimiser came to propose the molecule (for a told score, as the ask/tell ledger kept it);
	// nil for the initial molecules, for the baselines' evaluations, and in logs of an nfbo from before it was
	// kept (an nfbo from before it reads no log that holds it).
	From *Origin `json:"from,omitempty"`
}

// Origin is how the optimiser came to propose a molecule: the move that made it and the molecules it was made
// from, so that a run's log tells which moves found its best molecules, directly or through their children.
type Origin struct {
	// By is the move: ByFlow, ByCrossover or ByMutation.
	By string `json:"by"`
	// Parents are the molecules it was made from, as the optimiser sent them (Record.SMILES of their records,
	// or an initial molecule's key): the anchor of a ByFlow candidate, the two parents of a ByCrossover
	// child, the one of a ByMutation child.
	Parents []string `json:"parents,omitempty"`
}

// The moves of Origin.By.
const (
	// ByFlow is a latent candidate decoded by the flow, drawn in the trust region around an anchor's latent.
	ByFlow = "flow"
	// ByCrossover is a GA child made by crossing two parents, then mutated unless the mutation rate spared it.
	ByCrossover = "crossover"
	// ByMutation is a GA child made by mutating a copy of one parent.
	ByMutation = "mutation"
)

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
	recs, end, torn, _, err = ReadLogChecked(path)
	return recs, end, torn, err
}

// ReadLogChecked is ReadLog that also returns how many of the records carry no check (crc): records written by
// an nfbo from before the checks, whose damage cannot be found. A record whose check does not match its line,
// or one without a check after one with a check (nfbo never writes such a log), is a *LogError.
func ReadLogChecked(path string) (recs []Record, end int64, torn, unchecked int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("rundir: reading evaluation log: %w", err)
	}
	return parseLog(path, data)
}

// crcField begins a record's check: `,"crc":"` then 8 hex digits and `"}` end the line.
const crcField = `,"crc":"`

// AppendRecord appends r to dst as one line of the evaluation log, its newline included: r's JSON with, as its
// last field, "crc", the CRC-32C (Castagnoli) in 8 hex digits of the same line without that field.
func AppendRecord(dst []byte, r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return dst, fmt.Errorf("rundir: encoding record %d: %w", r.Call, err)
	}
	dst = append(dst, b[:len(b)-1]...)
	return fmt.Appendf(dst, "%s%08x\"}\n", crcField, crc32.Checksum(b, castagnoli)), nil
}

// checked splits a line into the record without its check and whether it had one, or says why the check fails.
func checked(text []byte) (body []byte, ok bool, err error) {
	n := len(text) - len(crcField) - 10
	if n < 1 || string(text[n:n+len(crcField)]) != crcField || !bytes.HasSuffix(text, []byte(`"}`)) {
		return text, false, nil
	}
	want, perr := strconv.ParseUint(string(text[n+len(crcField):len(text)-2]), 16, 32)
	body = append(text[:n:n], '}')
	if got := crc32.Checksum(body, castagnoli); perr != nil || uint32(want) != got {
		return nil, false, fmt.Errorf("damaged: the record does not match its check (crc %s, its contents give %08x): "+
			"a score, SMILES or other field was changed after nfbo wrote it; restore the line from a backup, or correct it "+
			"from the objective's own records and remove its crc field", text[n+len(crcField):len(text)-2], got)
	}
	return body, true, nil
}

func parseLog(path string, data []byte) (recs []Record, end int64, torn, unchecked int, err error) {
	line := 0
	for len(data[end:]) > 0 {
		rest := data[end:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return recs, end, len(rest), unchecked, nil
		}
		line++
		text, ok, err := checked(rest[:nl])
		switch {
		case err != nil:
			return nil, 0, 0, 0, &LogError{Path: path, Line: line, Err: err}
		case !ok && unchecked < len(recs):
			return nil, 0, 0, 0, &LogError{Path: path, Line: line, Err: fmt.Errorf("damaged: the record has no check (crc), " +
				"though the records before it have one: it was changed or added after nfbo wrote the log")}
		case !ok:
			unchecked++
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, 0, 0, 0, &LogError{Path: path, Line: line, Err: fmt.Errorf("not a record: %w", err)}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, 0, 0, 0, &LogError{Path: path, Line: line, Err: fmt.Errorf("trailing data after the record")}
		}
		if r.Call != len(recs)+1 {
			return nil, 0, 0, 0, &LogError{Path: path, Line: line,
				Err: fmt.Errorf("call %d out of sequence (want %d)", r.Call, len(recs)+1)}
		}
		recs = append(recs, r)
		end += int64(nl + 1)
	}
	return recs, end, 0, unchecked, nil
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
