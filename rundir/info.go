package rundir

import (
	"encoding/json"
	"fmt"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Info describes one run; the harness writes it when the run starts and
// again when it ends.
type Info struct {
	Suite    string  `json:"suite"`
	Setting  string  `json:"setting"` // e.g. "100+500"
	Task     string  `json:"task"`
	Method   string  `json:"method"`
	Seed     int     `json:"seed"`
	Budget   int     `json:"budget"`   // paid calls allowed
	Initial  int     `json:"initial"`  // initial molecules, scored before the budget
	Finished bool    `json:"finished"` // the run spent its budget or stopped for good
	Seconds  float64 `json:"seconds"`  // wall time of the run so far
	// CPUSeconds is the CPU time (user and system, all threads) nfbo's own process used during the run's legs
	// so far, not its objective's workers: what the optimiser costs, whatever else shares the machine (under
	// nfbo serve, whatever the server did during an ask counts too). 0 where unknown (runs of nfbo before it
	// was recorded, platforms without a process clock).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	Error      string  `json:"error,omitempty"`
	// InitialScores are the scores of the initial molecules when they were
	// not paid for through the evaluation log (GuacaMol's 100 + 500 setting
	// reads them from the data file); they count toward Top-k, not calls.
	InitialScores []float64 `json:"initial_scores,omitempty"`
	// Objective identifies the objective: ObjectiveRDKit, or "cmd: " and
	// the -objective-cmd command line. Runs written before it was recorded
	// have none and are taken as RDKit runs (see ObjectiveID).
	Objective string `json:"objective,omitempty"`
	// Calls is the number of paid calls in the evaluation log when run.json
	// was last written: a log that holds fewer has lost evaluations, and a
	// run resumed from it would pay for them again.
	Calls int `json:"calls,omitempty"`
	// InitialCalls is the number of paid calls that scored the initial
	// molecules, written once they are scored (0 when the scores came from
	// the data file).
	InitialCalls int `json:"initial_calls,omitempty"`
	// Version is the nfbo that last wrote the run (internal/buildinfo.Version).
	Version string `json:"version,omitempty"`
	// Kernels names the arithmetic the run's leg ran on, beside its seed, data and flags: who ran the flow and
	// the BLAS kernels (optimize writes "go; OpenBLAS (netlib), Haswell kernels"). A run goes on after a resume
	// on other kernels, but buys other molecules than it would have: sums round differently, and fine-tuning
	// carries the difference on (Open warns).
	Kernels string `json:"kernels,omitempty"`
	// Minimize says that lower scores are better (a docking energy): the log and the reports keep the
	// objective's scores, and everything that ranks them ranks by Gain.
	Minimize bool `json:"minimize,omitempty"`
}

// Gain returns score as the run ranks it, higher better: the score, or −score when the run minimises. The
// optimiser maximises it, and Top-k and AUC Top-k of a minimising run are of −score.
func (i Info) Gain(score float64) float64 {
	if i.Minimize {
		return -score
	}
	return score
}

// ObjectiveRDKit is Info.Objective for the RDKit worker's tasks.
const ObjectiveRDKit = "rdkit"

// ObjectiveTell is Info.Objective for a run whose scores are told by "nfbo tell" (ask/tell).
const ObjectiveTell = "tell"

// ObjectiveCommand returns Info.Objective for an -objective-cmd run.
func ObjectiveCommand(cmdline string) string { return "cmd: " + cmdline }

// ObjectiveID returns the identity under which the report files the run's
// objective: "rdkit" for the RDKit worker (and for runs that recorded no
// objective), else the command with each word reduced to its last path
// element ("python3 oracle.py"), so that the runs of one program filed
// from different directories stay together while an external objective
// is never merged with an RDKit task of the same name.
func (i Info) ObjectiveID() string {
	cmdline, ok := strings.CutPrefix(i.Objective, "cmd: ")
	if !ok {
		if i.Objective == "" {
			return ObjectiveRDKit
		}
		return i.Objective
	}
	words := strings.Fields(cmdline)
	for k, w := range words {
		words[k] = filepath.Base(w)
	}
	return strings.Join(words, " ")
}

// ParseInfo decodes the bytes of a run.json and checks what the report
// relies on: a task, method and setting, and counts that are not negative.
// Unknown fields are allowed, so that a newer nfbo's run.json reads.
func ParseInfo(data []byte) (Info, error) {
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return info, err
	}
	switch {
	case info.Task == "" || info.Method == "" || info.Setting == "":
		return info, fmt.Errorf("task %q, method %q, setting %q: none may be empty", info.Task, info.Method, info.Setting)
	case info.Seed < 0 || info.Budget < 0 || info.Initial < 0 || info.Calls < 0 || info.InitialCalls < 0:
		return info, fmt.Errorf("seed %d, budget %d, initial %d, calls %d, initial calls %d: none may be negative",
			info.Seed, info.Budget, info.Initial, info.Calls, info.InitialCalls)
	case info.Seconds < 0 || math.IsNaN(info.Seconds):
		return info, fmt.Errorf("seconds %v", info.Seconds)
	case info.CPUSeconds < 0 || math.IsNaN(info.CPUSeconds):
		return info, fmt.Errorf("cpu_seconds %v", info.CPUSeconds)
	}
	return info, nil
}

// ReadInfo reads and checks dir's run.json. A missing file is an error wrapping fs.ErrNotExist.
func ReadInfo(dir string) (Info, error) {
	path := filepath.Join(dir, InfoFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Info{}, fmt.Errorf("rundir: %w", err)
	}
	info, err := ParseInfo(b)
	if err != nil {
		return info, fmt.Errorf("rundir: %s: %w; nfbo ask -run %s (an ask/tell run) or nfbo optimize -resume with the run's "+
			"flags rebuilds it from the evaluation log", path, err, dir)
	}
	return info, nil
}

// WriteInfo writes dir's run.json atomically.
func WriteInfo(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("rundir: encode %s: %w", InfoFile, err)
	}
	return atomicfile.Write(filepath.Join(dir, InfoFile), append(b, '\n'))
}
