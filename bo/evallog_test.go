package bo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// This file holds the tests' evaluation log: a minimal Objective that persists every paid evaluation the way
// chem/objective.Budget does in production (nfbo optimize), so bo's resume and kill -9 tests need no chem.

// Scorer computes scores; it is what EvalLog wraps.
type Scorer interface {
	// Score writes the score of smiles[i] into dst[i].
	Score(ctx context.Context, dst []float64, smiles []string) error
}

// EvalLog is an Objective that persists every evaluation it pays for. Each paid score is appended to a JSON-lines
// file and synced before Evaluate returns; molecules already in the file are replayed without calling the
// Scorer, so after a crash no paid evaluation is lost and none is paid twice.
type EvalLog struct {
	f     *os.File
	path  string
	inner Scorer
	cache map[string]float64
	order []string
}

// evalRecord is one line of the log.
type evalRecord struct {
	SMILES string  `json:"smiles"`
	Score  float64 `json:"score"`
}

var _ Objective = (*EvalLog)(nil)

// OpenEvalLog opens (creating if needed) the log at path. A last line cut short by a crash is dropped; any other
// bad line is an error naming the file and line.
func OpenEvalLog(path string, inner Scorer) (*EvalLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bo: evaluation log: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // make a newly created file's entry durable
		d.Sync()
		d.Close()
	}
	l := &EvalLog{f: f, path: path, inner: inner, cache: make(map[string]float64)}
	r := bufio.NewReader(f)
	var good int64
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a partial last line (no newline) is discarded below
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("bo: read %s: %w", path, err)
		}
		var rec evalRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			f.Close()
			return nil, fmt.Errorf("bo: %s:%d: %w", path, line, err)
		}
		if _, ok := l.cache[rec.SMILES]; !ok {
			l.order = append(l.order, rec.SMILES)
		}
		l.cache[rec.SMILES] = rec.Score
		good += int64(len(b))
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("bo: truncate %s: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("bo: seek %s: %w", path, err)
	}
	return l, nil
}

// Len returns the number of molecules in the log.
func (l *EvalLog) Len() int { return len(l.order) }

// Evaluate replays logged scores and scores the rest with the Scorer, logging and syncing them before returning.
func (l *EvalLog) Evaluate(ctx context.Context, smiles []string) (scores []float64, paid []bool, err error) {
	scores, paid = make([]float64, len(smiles)), make([]bool, len(smiles))
	var todo []string
	var at []int
	for i, s := range smiles {
		if v, ok := l.cache[s]; ok {
			scores[i] = v
			continue
		}
		todo = append(todo, s)
		at = append(at, i)
	}
	if len(todo) == 0 {
		return scores, paid, nil
	}
	fresh := make([]float64, len(todo))
	if err := l.inner.Score(ctx, fresh, todo); err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for k, s := range todo {
		if err := enc.Encode(evalRecord{s, fresh[k]}); err != nil {
			return nil, nil, fmt.Errorf("bo: log %q: %w", s, err)
		}
	}
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("bo: append %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return nil, nil, fmt.Errorf("bo: sync %s: %w", l.path, err)
	}
	for k, s := range todo {
		l.cache[s] = fresh[k]
		l.order = append(l.order, s)
		scores[at[k]], paid[at[k]] = fresh[k], true
	}
	return scores, paid, nil
}

// Close closes the log file.
func (l *EvalLog) Close() error { return l.f.Close() }
