// Package rundir owns the run directory: the names of its files, its lock,
// run.json (Info), the evaluation log's format (Record, ReadLog) and the
// ledger of molecules asked for by ask/tell (Asked). Its files are written
// through internal/atomicfile.
//
// A run directory holds
//
//	run.json           Info: task, method, seed, setting, budget, counts; written first, so a directory with it is a run
//	args.json          the optimize flags the run was made with (ask, tell and serve read them back)
//	config.json        the optimiser's resolved configuration
//	evaluations.jsonl  one Record per paid call, appended and synced before anyone sees the score
//	checkpoint.gob     the optimiser's state after its last completed iteration (bo)
//	pending.gob        the batch being evaluated (bo)
//	asked.jsonl        molecules handed out by "nfbo ask" and their ids (Asked)
//	rules.json         the chemistry rules the run proposes under (chem/rules)
//	lock               held (flock) by the one process that writes the directory
//	run.log            the output of a bench run (package bench)
//
// Every package that reads or writes one of these files takes its name
// from here. The checkpoint and the pending batch are sealed in rundir's
// envelope (Seal, Unseal: magic, length, CRC-32C); their payload is the
// optimiser's, which bo encodes and decodes.
//
// run.json has two writers, both through WriteInfo and with the directory's
// lock held: optimize, which makes it and updates it as a run (or an ask)
// goes on, and asktell.TellRun, which brings its count of calls up to the
// evaluation log's after a tell (nfbo tell, nfbo serve). The command writes
// no run file itself.
package rundir

import (
	"os"
	"path/filepath"
	"strings"
)

// Files of a run directory.
const (
	InfoFile       = "run.json"
	ArgsFile       = "args.json"
	ConfigFile     = "config.json"
	EvalLogFile    = "evaluations.jsonl"
	CheckpointFile = "checkpoint.gob"
	PendingFile    = "pending.gob"
	AskedFile      = "asked.jsonl"
	LockFile       = "lock"
	RunLogFile     = "run.log"
	RulesFile      = "rules.json"
)

// files are the names above, for IsRunFile.
var files = []string{InfoFile, ArgsFile, ConfigFile, EvalLogFile, CheckpointFile, PendingFile, AskedFile, LockFile, RunLogFile, RulesFile}

// IsRunFile reports whether writing path would overwrite a file of the run directory dir: one of its files
// (or their temporary and set-aside copies, which share the name as a prefix), reached by any path, a symbolic
// or hard link included. A user's output file (say, ask's -o) must not be one: it would destroy paid data.
func IsRunFile(dir, path string) bool {
	absDir, err1 := filepath.Abs(dir)
	absPath, err2 := filepath.Abs(path)
	if err1 == nil && err2 == nil {
		if d, err := filepath.EvalSymlinks(absDir); err == nil {
			absDir = d
		}
		if d, err := filepath.EvalSymlinks(filepath.Dir(absPath)); err == nil {
			absPath = filepath.Join(d, filepath.Base(absPath))
		}
		if filepath.Dir(absPath) == absDir {
			base := filepath.Base(absPath)
			for _, f := range files {
				if base == f || strings.HasPrefix(base, f+".") {
					return true
				}
			}
		}
	}
	target, err := os.Stat(path)
	if err != nil {
		return false
	}
	for _, f := range files {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil && os.SameFile(fi, target) {
			return true
		}
	}
	return false
}

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
