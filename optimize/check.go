package optimize

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/rundir"
)

// checkResume checks, before anything is paid, that the run directory of a resumed run can go on as the run it
// was: its checkpoint and pending batch are intact, its evaluation log holds every call the run recorded as paid
// (a log that holds fewer would have the lost molecules paid for again), and an NF-BO run that has made calls
// of its own still has its checkpoint (without it the optimiser would start again, and the run would silently
// differ from an uninterrupted one). info is the saved run.json; paidInit bounds the calls the initial molecules
// pay for. With -restart, a missing or damaged checkpoint (or a damaged pending batch) is set aside instead.
func checkResume(a Args, info rundir.Info, paidInit int, warnf func(string, ...any)) error {
	logPath := filepath.Join(a.Out, rundir.EvalLogFile)
	recs, _, _, err := rundir.ReadLog(logPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("optimize: -resume: %w", err)
	}
	logged := len(recs)
	restartHow := "add -restart to start the optimiser again from the initial molecules: the molecules in the log are " +
		"answered from it, not paid again, but the run will differ from an uninterrupted one"

	st, err := bo.InspectRunDir(a.Out)
	var rde *bo.RunDirError
	damaged := "" // the base name of a damaged file, set aside with -restart
	switch {
	case err == nil:
	case errors.As(err, &rde) && errors.Is(err, rundir.ErrDamaged):
		damaged = filepath.Base(rde.Path)
		if !a.Restart {
			how := restartHow
			if damaged == rundir.PendingFile {
				how = "add -restart to set it aside: the optimiser then proposes the batch again from the intact checkpoint, " +
					"and molecules of it already in the log are answered from it, not paid again"
			}
			return fmt.Errorf("optimize: -resume: %w; the run cannot continue from it, and resuming again will meet the same "+
				"file. The %d paid evaluations in %s are intact. Restore %s from a backup, or %s", err, logged, logPath, damaged, how)
		}
		if damaged == rundir.CheckpointFile {
			st = bo.RunDirState{}
		}
	default:
		return fmt.Errorf("optimize: -resume: %w", err)
	}
	if st.Unchecked {
		warnf("%s was written without a checksum by an earlier nfbo, so damage to it cannot be detected; "+
			"the next checkpoint is written with one", filepath.Join(a.Out, rundir.CheckpointFile))
	}

	// What the run recorded as paid: run.json's count when it was last written, and the checkpoint's.
	want, why := info.Calls, fmt.Sprintf("%s records %d", rundir.InfoFile, info.Calls)
	if st.Checkpoint && info.InitialCalls+st.Calls > want {
		want = info.InitialCalls + st.Calls
		why = fmt.Sprintf("the checkpoint after iteration %d records %d (%d for the initial molecules, %d by the optimiser)",
			st.Iterations, want, info.InitialCalls, st.Calls)
	}
	if logged < want {
		return fmt.Errorf("optimize: -resume: %s holds %d paid calls, but %s: evaluations were lost (the log was cut short, "+
			"emptied or replaced), and resuming would pay for them again. Restore %s from a backup, or start a new run "+
			"with another -out", logPath, logged, why, rundir.EvalLogFile)
	}

	initial := paidInit
	if info.InitialCalls > 0 {
		initial = info.InitialCalls
	}
	// restart sets the damaged files aside, and the pending batch, which belongs to the checkpoint that is now
	// damaged or gone (and may be intact: it is not called damaged).
	restart := func(damaged ...string) error {
		if err := rundir.SetAside(a.Out, restartWarnf(warnf), damaged...); err != nil {
			return err
		}
		if err := rundir.SetAsideUnused(a.Out, restartWarnf(warnf), ", the batch its lost checkpoint was proposing,", rundir.PendingFile); err != nil {
			return err
		}
		warnf("-restart: the optimiser starts again from the initial molecules; the %d molecules already in %s are answered from it",
			logged, logPath)
		return nil
	}
	switch {
	case damaged == rundir.PendingFile:
		return rundir.SetAside(a.Out, restartWarnf(warnf), rundir.PendingFile)
	case damaged == rundir.CheckpointFile:
		return restart(rundir.CheckpointFile)
	case a.Method != "nfbo":
		return nil // the baselines keep no checkpoint: they replay from their seed
	case st.Checkpoint && a.Restart:
		return fmt.Errorf("optimize: -restart: %s is intact; resume without -restart", filepath.Join(a.Out, rundir.CheckpointFile))
	case st.Checkpoint || logged <= initial:
		// Intact, or the run was stopped before the optimiser's first checkpoint, so before its first call.
		return nil
	case !a.Restart:
		return fmt.Errorf("optimize: -resume: %s has no %s, but its log holds %d paid calls, %d more than the initial "+
			"molecules: the checkpoint was deleted or lost, and resuming without it would silently give another run than the "+
			"uninterrupted one. Restore %s from a backup, or %s",
			a.Out, rundir.CheckpointFile, logged, logged-initial, rundir.CheckpointFile, restartHow)
	}
	return restart()
}

// restartWarnf prefixes -restart's messages.
func restartWarnf(warnf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) { warnf("-restart: "+format, args...) }
}

// startedConfig returns the optimiser's configuration for a resumed run: the one the run started with
// (bo.ReadConfig) where cfg, built from this command's flags, is what the run's own flags (args.json) give today,
// so that a run started by an earlier nfbo goes on as it began where nfbo's defaults have changed since. Where the
// flags ask for another configuration, or the run has none saved, it returns cfg, which the optimiser then
// checks against the saved one (and refuses, naming both, if they differ).
func startedConfig(a Args, cfg bo.Config) (bo.Config, error) {
	saved, err := ReadArgs(a.Out)
	if err != nil {
		return cfg, nil // no args.json, or one this nfbo cannot read: the optimiser's own check decides
	}
	preset, err := bo.PresetByName(saved.Preset)
	if err != nil {
		return cfg, nil
	}
	if was, err := saved.Config(preset); err != nil || !reflect.DeepEqual(was, cfg) {
		return cfg, nil
	}
	started, err := bo.ReadConfig(a.Out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cfg, nil // the optimiser had not started: it starts with cfg
	case err != nil:
		return cfg, fmt.Errorf("optimize: -resume: %w", err)
	}
	return started, nil
}
