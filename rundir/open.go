package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Open prepares dir for the run that want describes (Setting, Task, Method, Seed, Budget, Objective) and returns
// its Info: want itself for a new run, whose directory it makes; the saved run.json for a resumed one (resume
// true), which must have been started with the same task, seed, method, setting and budget. A directory that
// holds a run is refused without resume, and one that holds none with it; a run.json left by a run stopped
// before its first evaluation holds nothing to keep and is started afresh. The objective may change between
// programs (with a warning), and between ask/tell and a program, but not between the RDKit tasks and a program;
// the Kernels may change (with a warning), and the saved Info then records the new ones.
// legacySetting is the setting label an earlier nfbo wrote for the same run, accepted as setting.
func Open(dir string, want Info, resume bool, legacySetting string, warnf func(string, ...any)) (Info, error) {
	path := filepath.Join(dir, InfoFile)
	b, err := os.ReadFile(path)
	if err == nil && !resume && !Exists(filepath.Join(dir, EvalLogFile)) && !Exists(filepath.Join(dir, CheckpointFile)) {
		// A run that stopped before its first evaluation holds nothing to keep.
		err = fs.ErrNotExist
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if resume {
			return want, fmt.Errorf("-resume: %s holds no run (no %s)", dir, InfoFile)
		}
		// A directory without run.json may still hold a log or checkpoint written by something else.
		for _, name := range []string{EvalLogFile, CheckpointFile} {
			if Exists(filepath.Join(dir, name)) {
				return want, fmt.Errorf("%s already holds %s; choose another -out", dir, name)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return want, fmt.Errorf("rundir: %w", err)
		}
		return want, nil
	case err != nil:
		return want, fmt.Errorf("rundir: %w", err)
	}
	if !resume {
		return want, fmt.Errorf("%s already holds a run; pass -resume to continue it or choose another -out", dir)
	}
	saved, err := ParseInfo(b)
	if err != nil {
		return rebuildInfo(dir, want, err, warnf)
	}
	if saved.Setting == legacySetting {
		saved.Setting = want.Setting
	}
	if saved.Task != want.Task || saved.Seed != want.Seed || saved.Setting != want.Setting || saved.Budget != want.Budget ||
		saved.Method != want.Method || saved.Minimize != want.Minimize {
		return want, fmt.Errorf("-resume: %s was started with -task %s -seed %d, method %s, setting %s (initial+budget), "+
			"budget %d, minimize %t; resume with the same flags", path, saved.Task, saved.Seed, saved.Method, saved.Setting,
			saved.Budget, saved.Minimize)
	}
	switch {
	case saved.Objective == "":
		// Written before nfbo recorded the objective.
		saved.Objective = want.Objective
	case saved.Objective == want.Objective:
	case saved.Objective == ObjectiveTell || want.Objective == ObjectiveTell:
		// A run may switch between ask/tell and an objective that nfbo calls: the scores are in the log either way.
		saved.Objective = want.Objective
	case (saved.Objective == ObjectiveRDKit) != (want.Objective == ObjectiveRDKit):
		return want, fmt.Errorf("-resume: %s was started with objective %q, not %q; resume with the same objective",
			path, saved.Objective, want.Objective)
	default:
		warnf("%s was started with objective %q; resuming with %q", path, saved.Objective, want.Objective)
		saved.Objective = want.Objective
	}
	if want.Version != "" {
		saved.Version = want.Version // the nfbo that goes on with the run
	}
	if want.Kernels != "" {
		if saved.Kernels != "" && saved.Kernels != want.Kernels {
			warnf("%s ran on %s and goes on on %s: the run continues, but from here it buys other molecules than "+
				"it would have on its own kernels (docs/USAGE.md, \"Repeating a run\")", path, saved.Kernels, want.Kernels)
		}
		saved.Kernels = want.Kernels
	}
	return saved, nil
}

// rebuildInfo replaces dir's run.json, which does not parse (bad), with want, the Info of the flags a resume is
// given (which must be the run's own), and the count of paid calls in the evaluation log: all that a resume
// needs of it. The damaged file is set aside; the wall time of the earlier legs, which only it held, is lost.
func rebuildInfo(dir string, want Info, bad error, warnf func(string, ...any)) (Info, error) {
	path := filepath.Join(dir, InfoFile)
	logPath := filepath.Join(dir, EvalLogFile)
	var recs []Record
	if Exists(logPath) {
		var err error
		if recs, _, _, err = ReadLog(logPath); err != nil {
			return want, fmt.Errorf("-resume: %s is damaged (%v), and it cannot be rebuilt from the log: %w", path, bad, err)
		}
	}
	for i, r := range recs {
		if r.Task != "" && r.Task != want.Task {
			return want, fmt.Errorf("-resume: %s is damaged (%v), and %s:%d is for task %q, not -task %s: resume with the run's own flags",
				path, bad, logPath, i+1, r.Task, want.Task)
		}
	}
	info := want
	info.Calls = 0
	for _, r := range recs {
		if !r.NoAnswer() {
			info.Calls++
		}
	}
	if err := SetAside(dir, warnf, InfoFile); err != nil {
		return want, err
	}
	if err := WriteInfo(dir, info); err != nil {
		return want, err
	}
	warnf("%s did not read (%v); rebuilt from this command's flags, which must be the run's own, and the %d paid calls "+
		"of %s (the checkpoint is checked against them next); the wall time of the earlier legs is not known and "+
		"counts from 0", path, bad, info.Calls, logPath)
	return info, nil
}

// SetAside renames the named files of dir that exist to NAME.damaged, so that a restarted run neither reads nor
// destroys them, and says so through warnf.
func SetAside(dir string, warnf func(string, ...any), names ...string) error {
	return setAside(dir, ".damaged", func(path, to string) { warnf("%s set aside as %s", path, to) }, names)
}

// SetAsideUnused renames the named files of dir that exist to NAME.unused: files a restarted run cannot use,
// though nothing says they are damaged (the pending batch of a checkpoint that is damaged or gone), and says so
// through warnf with why (", the batch of the damaged checkpoint,").
func SetAsideUnused(dir string, warnf func(string, ...any), why string, names ...string) error {
	return setAside(dir, ".unused", func(path, to string) { warnf("%s%s set aside as %s", path, why, to) }, names)
}

func setAside(dir, suffix string, said func(path, to string), names []string) error {
	for _, name := range names {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(path, path+suffix); err != nil {
			return fmt.Errorf("rundir: %w", err)
		}
		said(path, path+suffix)
	}
	return nil
}
