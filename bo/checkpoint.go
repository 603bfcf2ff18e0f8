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

	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/rundir"
)

// checkpointData is what rundir.CheckpointFile holds, a gob stream sealed by rundir.Seal.
type checkpointData struct {
	Version   int
	State     state
	RNG       []byte
	Surrogate []byte
	Flow      []byte
	// Calls is the optimiser's count of paid objective calls (Optimizer.Calls) when the checkpoint was written:
	// every one of them is in the evaluation log, so a log holding fewer has lost evaluations. Checkpoints
	// written before the count was kept read as 0.
	Calls int
}

const checkpointVersion = 1

// RunDirError reports a file of a run directory that cannot be used: damaged, written by an incompatible
// version of nfbo, or made for another run (another sequence length, say). Resuming again gives the same error.
type RunDirError struct {
	Path string
	Err  error
}

// Error names the file and the problem.
func (e *RunDirError) Error() string { return fmt.Sprintf("bo: %s: %v", e.Path, e.Err) }

// Unwrap returns the problem.
func (e *RunDirError) Unwrap() error { return e.Err }

// decodeCheckpoint checks and decodes the bytes of a rundir.CheckpointFile.
func decodeCheckpoint(data []byte) (c checkpointData, sealed bool, err error) {
	payload, sealed, err := rundir.Unseal(rundir.CheckpointMagic, data)
	if err != nil {
		return c, sealed, err
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&c); err != nil {
		return c, sealed, fmt.Errorf("%w: %v", rundir.ErrDamaged, err)
	}
	if c.Version != checkpointVersion {
		return c, sealed, fmt.Errorf("checkpoint version %d, this nfbo reads version %d", c.Version, checkpointVersion)
	}
	return c, sealed, nil
}

// decodePending checks and decodes the bytes of a rundir.PendingFile.
func decodePending(data []byte) (b batch, sealed bool, err error) {
	payload, sealed, err := rundir.Unseal(rundir.PendingMagic, data)
	if err != nil {
		return b, sealed, err
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&b); err != nil {
		return b, sealed, fmt.Errorf("%w: %v", rundir.ErrDamaged, err)
	}
	if b.Screened == nil {
		b.Screened = legacyScreenedStats(payload)
	}
	return b, sealed, nil
}

// RunDirState is what a run directory holds for the optimiser, as InspectRunDir finds it.
type RunDirState struct {
	// Checkpoint says that rundir.CheckpointFile exists (and is intact: InspectRunDir fails otherwise).
	Checkpoint bool
	// Unchecked says that the checkpoint or the pending batch was written without the envelope (by nfbo before
	// it had one), so that damage to it cannot be detected.
	Unchecked bool
	// Iterations is the number of iterations completed at the checkpoint.
	Iterations int
	// Calls is the optimiser's count of paid calls at the checkpoint (checkpointData.Calls): the evaluation log
	// holds at least these beyond the calls paid before the optimiser started.
	Calls int
	// Pending says that rundir.PendingFile exists (and is intact).
	Pending bool
}

// InspectRunDir checks the checkpoint and the pending batch of the run directory dir, without a Problem: a
// command calls it before it pays for anything, so that a damaged file stops a resumed run before its first
// objective call rather than after it. A missing file is not an error. A damaged one is a *RunDirError
// wrapping rundir.ErrDamaged.
func InspectRunDir(dir string) (RunDirState, error) {
	var st RunDirState
	path := filepath.Join(dir, rundir.CheckpointFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		c, sealed, err := decodeCheckpoint(data)
		if err != nil {
			return st, &RunDirError{path, err}
		}
		st.Checkpoint, st.Unchecked, st.Iterations, st.Calls = true, !sealed, c.State.Iter, c.Calls
	case !errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("bo: %w", err)
	}
	path = filepath.Join(dir, rundir.PendingFile)
	data, err = os.ReadFile(path)
	switch {
	case err == nil:
		_, sealed, err := decodePending(data)
		if err != nil {
			return st, &RunDirError{path, err}
		}
		st.Pending, st.Unchecked = true, st.Unchecked || !sealed
	case !errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("bo: %w", err)
	}
	return st, nil
}

// open prepares the run directory: resume its checkpoint if there is one, else write the config.
func (o *Optimizer) open() error {
	dir := o.cfg.RunDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bo: run directory: %w", err)
	}
	path := filepath.Join(dir, rundir.CheckpointFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfg, err := json.MarshalIndent(o.cfg, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.Write(filepath.Join(dir, rundir.ConfigFile), append(cfg, '\n'))
	case err != nil:
		return fmt.Errorf("bo: read checkpoint: %w", err)
	}
	c, _, err := decodeCheckpoint(data)
	if err != nil {
		return &RunDirError{path, err}
	}
	if c.State.T != o.t || c.State.F != o.f {
		return &RunDirError{path, fmt.Errorf("shape T=%d F=%d, this run has T=%d F=%d (another model or other initial molecules)",
			c.State.T, c.State.F, o.t, o.f)}
	}
	if err := o.src.(encoding.BinaryUnmarshaler).UnmarshalBinary(c.RNG); err != nil {
		return &RunDirError{path, fmt.Errorf("random state: %w", err)}
	}
	if c.Surrogate != nil {
		if err := o.surr.UnmarshalBinary(c.Surrogate); err != nil {
			return &RunDirError{path, fmt.Errorf("surrogate: %w", err)}
		}
	}
	if err := o.prob.Flow.(Checkpointer).UnmarshalBinary(c.Flow); err != nil {
		return &RunDirError{path, fmt.Errorf("flow: %w", err)}
	}
	o.st = c.State
	o.rebuildSeen()
	cfgPath := filepath.Join(dir, rundir.ConfigFile)
	saved, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("bo: resume: %w", err)
	}
	if err := sameConfig(saved, o.cfg); err != nil {
		return &RunDirError{cfgPath, fmt.Errorf("resume: %w", err)}
	}
	// A batch proposed after the checkpoint and possibly (partly) evaluated: evaluate exactly it next.
	pendPath := filepath.Join(dir, rundir.PendingFile)
	pend, err := os.ReadFile(pendPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("bo: resume: %w", err)
	}
	b, _, err := decodePending(pend)
	if err != nil {
		return &RunDirError{pendPath, err}
	}
	if b.Iter == o.st.Iter {
		o.pending = &b
	}
	return nil
}

// savePending writes the batch and the random state to rundir.PendingFile; without a RunDir it does nothing.
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
	return atomicfile.Write(filepath.Join(o.cfg.RunDir, rundir.PendingFile), rundir.Seal(rundir.PendingMagic, buf.Bytes()))
}

func (o *Optimizer) restoreRNG(state []byte) error {
	if err := o.src.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return fmt.Errorf("bo: restore random state: %w", err)
	}
	return nil
}

// checkpoint writes rundir.CheckpointFile atomically; without a RunDir it does nothing.
func (o *Optimizer) checkpoint() error {
	if o.cfg.RunDir == "" {
		return nil
	}
	c := checkpointData{Version: checkpointVersion, State: o.st, Calls: o.Calls()}
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
	return atomicfile.Write(filepath.Join(o.cfg.RunDir, rundir.CheckpointFile), rundir.Seal(rundir.CheckpointMagic, buf.Bytes()))
}

// ReadConfig returns the configuration the run in dir started with (its config.json, as the optimiser wrote it
// when it made the run), with RunDir left as saved. A run resumed with it goes on as it began, even where a later
// nfbo's defaults differ.
func ReadConfig(dir string) (Config, error) {
	var c Config
	path := filepath.Join(dir, rundir.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("bo: %w", err)
	}
	if c, err = parseConfig(b); err != nil {
		return c, &RunDirError{path, err}
	}
	return c, nil
}

// parseConfig reads a config.json as this nfbo reads its settings: a file written before the variants' settings
// were split holds both variants' defaults, of which only its own variant's count (Config.own).
func parseConfig(saved []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(saved, &c); err != nil {
		return c, fmt.Errorf("read saved configuration: %w", err)
	}
	if v, ok := legacyVariant(saved); ok {
		c.Variant = v
	}
	return c.own(), nil
}

// sameConfig reports whether the saved config.json describes cfg. RunDir is left out of the comparison: it is
// where the directory was when the run started, and a run directory may be moved or copied and resumed there.
func sameConfig(saved []byte, cfg Config) error {
	was, err := parseConfig(saved)
	if err != nil {
		return err
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
