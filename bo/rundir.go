package bo

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files of a run directory.
const (
	ConfigFile     = "config.json"    // the resolved Config, written when the run starts
	CheckpointFile = "checkpoint.gob" // state, RNG, surrogate and flow after the last completed iteration
	// EvalLogFile is the evaluation log: one JSON line per paid evaluation, appended and synced before the
	// optimiser sees the score. bo never writes it itself: the Objective does (in nfbo, chem/objective.Budget,
	// whose cache replays the pending batch after a resume), so that there is one log format and one cache.
	EvalLogFile = "evaluations.jsonl"
	PendingFile = "pending.gob" // the batch being evaluated, written before the objective is called
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
	if err := sameConfig(saved, o.cfg); err != nil {
		return fmt.Errorf("bo: resume: %s: %w", cfgPath, err)
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

// sameConfig reports whether the saved config.json describes cfg. RunDir is left out of the comparison: it is
// where the directory was when the run started, and a run directory may be moved or copied and resumed there.
func sameConfig(saved []byte, cfg Config) error {
	var was Config
	if err := json.Unmarshal(saved, &was); err != nil {
		return fmt.Errorf("read saved configuration: %w", err)
	}
	was.RunDir, cfg.RunDir = "", ""
	a, err := json.Marshal(was)
	if err != nil {
		return err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("the configuration differs from the one the run started with:\n was %s\n now %s", a, b)
	}
	return nil
}
