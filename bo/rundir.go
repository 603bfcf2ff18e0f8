package bo

import (
	"bufio"
	"bytes"
	"context"
	"encoding"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Files of a run directory.
const (
	ConfigFile     = "config.json"       // the resolved Config, written when the run starts
	CheckpointFile = "checkpoint.gob"    // state, RNG, surrogate and flow after the last completed iteration
	EvalLogFile    = "evaluations.jsonl" // one JSON object per paid evaluation, appended and synced
	PendingFile    = "pending.gob"       // the batch being evaluated, written before the objective is called
)

// checkpointData is what CheckpointFile holds.
type checkpointData struct {
	Version   int
	State     state
	RNG       []byte
	Surrogate []byte
	Flow      []byte
}

const checkpointVersion = 1

// WriteFileAtomic writes data to path so that a crash leaves either the old file or the new one: it writes a
// temporary file in the same directory, syncs it, renames it over path and syncs the directory.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("bo: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("bo: sync %s: %w", dir, err)
		}
	}
	return nil
}

// open prepares the run directory: resume its checkpoint if there is one, else write the config.
func (o *Optimizer) open() error {
	dir := o.cfg.RunDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bo: run directory: %w", err)
	}
	path := filepath.Join(dir, CheckpointFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfg, err := json.MarshalIndent(o.cfg, "", "  ")
		if err != nil {
			return err
		}
		return WriteFileAtomic(filepath.Join(dir, ConfigFile), append(cfg, '\n'))
	case err != nil:
		return fmt.Errorf("bo: read checkpoint: %w", err)
	}
	var c checkpointData
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return fmt.Errorf("bo: decode checkpoint %s: %w", path, err)
	}
	if c.Version != checkpointVersion || c.State.T != o.t || c.State.F != o.f {
		return fmt.Errorf("bo: checkpoint %s: version %d, shape T=%d F=%d; want version %d, T=%d F=%d",
			path, c.Version, c.State.T, c.State.F, checkpointVersion, o.t, o.f)
	}
	if err := o.src.(encoding.BinaryUnmarshaler).UnmarshalBinary(c.RNG); err != nil {
		return fmt.Errorf("bo: checkpoint %s: random state: %w", path, err)
	}
	if c.Surrogate != nil {
		if err := o.surr.UnmarshalBinary(c.Surrogate); err != nil {
			return fmt.Errorf("bo: checkpoint %s: surrogate: %w", path, err)
		}
	}
	if err := o.prob.Flow.(Checkpointer).UnmarshalBinary(c.Flow); err != nil {
		return fmt.Errorf("bo: checkpoint %s: flow: %w", path, err)
	}
	o.st = c.State
	o.rebuildSeen()
	cfgPath := filepath.Join(dir, ConfigFile)
	saved, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("bo: resume: %w", err)
	}
	now, err := json.MarshalIndent(o.cfg, "", "  ")
	if err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(saved), now) {
		return fmt.Errorf("bo: resume: the configuration differs from %s", cfgPath)
	}
	// A batch proposed after the checkpoint and possibly (partly) evaluated: evaluate exactly it next.
	pend, err := os.ReadFile(filepath.Join(dir, PendingFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("bo: resume: %w", err)
	}
	var b batch
	if err := gob.NewDecoder(bytes.NewReader(pend)).Decode(&b); err != nil {
		return fmt.Errorf("bo: decode %s: %w", filepath.Join(dir, PendingFile), err)
	}
	if b.Iter == o.st.Iter {
		o.pending = &b
	}
	return nil
}

// savePending writes the batch and the random state to PendingFile; without a RunDir it does nothing.
func (o *Optimizer) savePending(b *batch) error {
	if o.cfg.RunDir == "" {
		return nil
	}
	var err error
	if b.RNG, err = o.src.(encoding.BinaryMarshaler).MarshalBinary(); err != nil {
		return fmt.Errorf("bo: save random state: %w", err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(b); err != nil {
		return fmt.Errorf("bo: encode pending batch: %w", err)
	}
	return WriteFileAtomic(filepath.Join(o.cfg.RunDir, PendingFile), buf.Bytes())
}

func (o *Optimizer) restoreRNG(state []byte) error {
	if err := o.src.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return fmt.Errorf("bo: restore random state: %w", err)
	}
	return nil
}

// checkpoint writes CheckpointFile atomically; without a RunDir it does nothing.
func (o *Optimizer) checkpoint() error {
	if o.cfg.RunDir == "" {
		return nil
	}
	c := checkpointData{Version: checkpointVersion, State: o.st}
	var err error
	if c.RNG, err = o.src.(encoding.BinaryMarshaler).MarshalBinary(); err != nil {
		return fmt.Errorf("bo: checkpoint random state: %w", err)
	}
	if o.st.Fitted {
		if c.Surrogate, err = o.surr.MarshalBinary(); err != nil {
			return fmt.Errorf("bo: checkpoint surrogate: %w", err)
		}
	}
	if c.Flow, err = o.prob.Flow.(Checkpointer).MarshalBinary(); err != nil {
		return fmt.Errorf("bo: checkpoint flow: %w", err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(c); err != nil {
		return fmt.Errorf("bo: encode checkpoint: %w", err)
	}
	return WriteFileAtomic(filepath.Join(o.cfg.RunDir, CheckpointFile), buf.Bytes())
}

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
