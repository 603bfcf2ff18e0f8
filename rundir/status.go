package rundir

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
)

// Status is a run directory as a user asks about it: run.json, the calls paid, the molecules handed out by ask
// and not told yet, and the best molecules found.
type Status struct {
	Info Info
	// Calls is the number of paid calls in the evaluation log.
	Calls int
	// Awaiting are the molecules of the ledger without a score in the log.
	Awaiting []Asked
	// Best are the best records of the log, best first (at most the number asked for).
	Best []Record
	// Torn says that the log ends in an incomplete line (a write in progress, or a crash).
	Torn bool
}

// ReadStatus reads dir's run.json, evaluation log and ledger; best is the number of best records to return.
// It takes no lock: a log or ledger being appended to reads as it was before the append.
func ReadStatus(dir string, best int) (Status, error) {
	var st Status
	info, err := ReadInfo(dir)
	if err != nil {
		return st, err
	}
	st.Info = info
	recs, _, torn, err := ReadLog(filepath.Join(dir, EvalLogFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	st.Calls, st.Torn = len(recs), torn > 0
	ledger, err := ReadLedger(dir)
	if err != nil {
		return st, err
	}
	paid := make(map[string]bool, len(recs))
	for _, r := range recs {
		paid[r.Canonical] = true
		paid[r.SMILES] = true
	}
	for _, a := range ledger.Items {
		if !paid[a.Canonical] && !paid[a.SMILES] {
			st.Awaiting = append(st.Awaiting, a)
		}
	}
	SortByGain(recs, st.Info)
	st.Best = recs[:min(best, len(recs))]
	return st, nil
}

// SortByGain sorts records best first by the run's Info.Gain (highest score first, or lowest when the run
// minimises), keeping the call order among equal scores. A minimising run's molecules without a score (an
// error, scored 0) come last.
func SortByGain(recs []Record, info Info) {
	slices.SortStableFunc(recs, func(a, b Record) int {
		ga, gb := info.Gain(a.Score), info.Gain(b.Score)
		if info.Minimize && (a.Error != "") != (b.Error != "") {
			if a.Error != "" {
				return 1
			}
			return -1
		}
		switch {
		case ga > gb:
			return -1
		case ga < gb:
			return 1
		}
		return 0
	})
}

// Finished reports whether the run has nothing left to do: run.json says so, or every call of the budget is
// paid and no molecule awaits a score (an ask/tell run after its last tell, before an ask closes it).
func (s Status) Finished() bool {
	return s.Info.Finished || (s.Info.Budget > 0 && s.Calls >= s.Info.Budget && len(s.Awaiting) == 0)
}
