// Package bench runs suites of (task, method, seed) optimisation runs under
// one harness and reports them: Markdown tables of Top-k and AUC Top-k per
// task beside the published NF-BO figures, and plots of the best score
// against objective calls.
//
// A suite directory holds one run directory per run, at
// TASK/METHOD/seedN/, each with the evaluation log (evaluations.jsonl) and
// run.json (rundir.Info). Reports are regenerated from these files alone.
package bench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/chem/objective/metrics"
	"github.com/nfbo/nfbo/rundir"
)

// Run is one run's record for the report.
type Run struct {
	Info rundir.Info
	Dir  string
	// Scores are the paid evaluations in call order as the run ranks them (rundir.Info.Gain): the scores, or
	// for a minimising run −score, its molecules without a score at its worst gain.
	Scores []float64
	// Records are the evaluation log's records in call order (the molecules behind Scores).
	Records []rundir.Record
	// NoLog says the run directory has no evaluation log: a run that
	// stopped before its first paid call, or one whose log was lost.
	NoLog bool
	// Torn is the length in bytes of a last log line without its newline (a
	// write cut short, or one under way), which is not a record; 0 if none.
	Torn int
	// Names are the names the user's initial file gave molecules (an SDF
	// title, a name column), by SMILES and canonical SMILES, as the ask/tell
	// ledger keeps them; nil when the run has none.
	Names map[string]string
	// row holds the figures of a run read from a runs.tsv row (ReadRunsTSV),
	// which has no log to compute them from; nil for a run directory.
	row *Figures
}

// Suite is the runs under a directory, as LoadSuite finds them.
type Suite struct {
	Runs []Run
	// Warnings name what was left out or read in part, one sentence each
	// naming the file: a run.json or log that cannot be read, a run that
	// repeats another's setting, task, objective, method and seed, a torn
	// last log line, a log that holds fewer calls than run.json records.
	Warnings []string
}

// runKey identifies a run in a report: two runs with one key would be
// averaged as two seeds.
type runKey struct {
	setting, task, objective, method string
	seed                             int
}

func keyOf(i rundir.Info) runKey {
	return runKey{i.Setting, i.Task, i.ObjectiveID(), i.Method, i.Seed}
}

// LoadSuite reads every run under dir (any directory holding run.json). A
// run whose run.json or log cannot be read is left out with a warning, so
// that one damaged run does not hide the others. Of two runs with the same
// setting, task, objective, method and seed (a copied run directory, say),
// the one with more paid calls is kept (the first in path order on a tie)
// and the other left out with a warning: they are not two seeds.
func LoadSuite(dir string) (Suite, error) {
	s, err := loadDir(dir)
	if err != nil {
		return s, err
	}
	s.pool()
	return s, nil
}

// LoadPaths reads the runs of several places into one suite, as LoadSuite reads one directory: each path is a
// directory of runs or a runs.tsv file (ReadRunsTSV), so that runs made on several machines, or kept as rows
// after their directories were removed, are reported together. A run found twice (one key) counts once, the one
// with more paid calls.
func LoadPaths(paths []string) (Suite, error) {
	var all Suite
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return all, fmt.Errorf("bench: %w", err)
		}
		var s Suite
		if fi.IsDir() {
			if s, err = loadDir(p); err != nil {
				return all, err
			}
		} else if s.Runs, err = readRowsFile(p); err != nil {
			return all, err
		}
		all.Runs = append(all.Runs, s.Runs...)
		all.Warnings = append(all.Warnings, s.Warnings...)
	}
	all.pool()
	return all, nil
}

// loadDir reads every run under dir, with a warning for each that cannot be read or is read in part.
func loadDir(dir string) (Suite, error) {
	var s Suite
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != rundir.InfoFile {
			return nil
		}
		r, err := LoadRun(filepath.Dir(path))
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("left out %s: %v", filepath.Dir(path), err))
			return nil
		}
		if r.Torn > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: the last line (%d bytes) has no newline: a write cut short "+
				"or still under way; the %d complete records are used", filepath.Join(r.Dir, rundir.EvalLogFile), r.Torn, len(r.Scores)))
		}
		if !r.NoLog && len(r.Scores) < r.Info.Calls {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s holds %d calls, but %s records %d paid: evaluations were lost",
				filepath.Join(r.Dir, rundir.EvalLogFile), len(r.Scores), filepath.Join(r.Dir, rundir.InfoFile), r.Info.Calls))
		}
		s.Runs = append(s.Runs, r)
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("bench: load runs under %s: %w", dir, err)
	}
	return s, nil
}

// pool keeps one run of each key, the one with more paid calls (the first on a tie), with a warning naming the
// one left out, and sorts the runs by key.
func (s *Suite) pool() {
	byKey := map[runKey]int{}
	kept := s.Runs[:0]
	for _, r := range s.Runs {
		k := keyOf(r.Info)
		i, dup := byKey[k]
		if !dup {
			byKey[k] = len(kept)
			kept = append(kept, r)
			continue
		}
		drop := r
		if r.calls() > kept[i].calls() {
			drop, kept[i] = kept[i], r
		}
		s.Warnings = append(s.Warnings, fmt.Sprintf("left out %s: it repeats setting %s, task %s (objective %s), method %s, seed %d "+
			"of %s, which has %d calls", drop.Dir, k.setting, k.task, k.objective, k.method, k.seed, kept[i].Dir, kept[i].calls()))
	}
	s.Runs = kept
	sort.SliceStable(s.Runs, func(i, j int) bool {
		a, b := keyOf(s.Runs[i].Info), keyOf(s.Runs[j].Info)
		return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%09d", a.setting, a.task, a.objective, a.method, a.seed) <
			fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%09d", b.setting, b.task, b.objective, b.method, b.seed)
	})
}

// IsRow reports whether the run was read from a runs.tsv row (ReadRunsTSV): figures without a log.
func (r Run) IsRow() bool { return r.row != nil }

// calls returns the run's paid calls: its log's, or its row's.
func (r Run) calls() int {
	if r.row != nil {
		return r.row.Calls
	}
	return len(r.Scores)
}

// LoadRun reads one run directory: its run.json, which must be there, and
// its evaluation log, which may be missing (Run.NoLog) or end in a torn
// line (Run.Torn).
func LoadRun(dir string) (Run, error) {
	path := filepath.Join(dir, rundir.InfoFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	info, err := rundir.ParseInfo(b)
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	r := Run{Info: info, Dir: dir}
	recs, _, torn, err := rundir.ReadLog(filepath.Join(dir, rundir.EvalLogFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.NoLog = true
	case err != nil:
		return Run{}, err
	}
	r.Torn = torn
	slices.SortFunc(recs, func(a, b rundir.Record) int { return a.Call - b.Call })
	worst := math.Inf(1)
	for _, rec := range recs {
		g := info.Gain(rec.Score)
		if rec.Error == "" {
			worst = min(worst, g)
		}
		r.Scores = append(r.Scores, g)
	}
	if info.Minimize {
		// A failed molecule scores 0, which for a minimised objective can be the best value there is.
		if math.IsInf(worst, 1) {
			worst = 0
		}
		for i, rec := range recs {
			if rec.Error != "" {
				r.Scores[i] = worst
			}
		}
	}
	r.Records = recs
	r.Names = ledgerNames(dir)
	return r, nil
}

// ledgerNames returns the names in dir's ask/tell ledger by SMILES and canonical SMILES, or nil. A ledger that
// cannot be read costs the report its names only: ask and tell say what is wrong with it.
func ledgerNames(dir string) map[string]string {
	l, err := rundir.ReadLedger(dir)
	if err != nil {
		return nil
	}
	var names map[string]string
	for _, a := range l.Items {
		if a.Name == "" {
			continue
		}
		if names == nil {
			names = map[string]string{}
		}
		names[a.SMILES] = a.Name
		if a.Canonical != "" {
			names[a.Canonical] = a.Name
		}
	}
	return names
}

// Figures are one run's headline numbers.
type Figures struct {
	Top    [3]float64 // Top-1, Top-10, Top-100 over initial + paid scores
	AUC    [3]float64 // AUC Top-1, Top-10, Top-100 over paid calls (PMO)
	Calls  int
	Budget int
}

var topKs = [3]int{1, 10, 100}

// Figures computes the run's Top-k over everything it knows (initial scores
// included) and PMO's AUC Top-k over its paid calls.
func (r Run) Figures() Figures {
	if r.row != nil {
		return *r.row
	}
	all := append(r.initialGains(), r.Scores...)
	var f Figures
	f.Calls, f.Budget = len(r.Scores), r.Info.Budget
	budget := max(r.Info.Budget, len(r.Scores))
	for i, k := range topKs {
		f.Top[i] = metrics.TopK(all, k)
		f.AUC[i] = metrics.AUCTopK(r.Scores, k, metrics.DefaultFreq, budget, r.Info.Finished)
	}
	return f
}

// BestCurve returns the best score after each paid call, starting from the
// best initial score (0 when there is none): element i is after i calls.
func (r Run) BestCurve() []float64 {
	best := 0.0
	for _, s := range r.initialGains() {
		best = math.Max(best, s)
	}
	out := make([]float64, len(r.Scores)+1)
	out[0] = best
	for i, s := range r.Scores {
		best = math.Max(best, s)
		out[i+1] = best
	}
	return out
}

// score3 is a score or figure of the tables to three places: in e-notation from 1e9 on (metrics.FormatScore), so
// that an objective's 1e308 prints as 1.000e+308, not as 309 digits.
func score3(v float64) string { return metrics.FormatScore(v, 3) }

// meanStd returns the mean and the sample standard deviation (0 for one value), each through
// metrics.FiniteScale, so that scores near ±1e308 give finite figures.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	mean = metrics.FiniteScale(xs, func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	})
	if len(xs) == 1 {
		return mean, 0
	}
	std = metrics.FiniteScale(xs, func(xs []float64) float64 {
		var m, s float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			s += (x - m) * (x - m)
		}
		return math.Sqrt(s / float64(len(xs)-1))
	})
	return mean, std
}

type groupKey struct{ setting, task, method string }

// taskLabel is the task column of a run: the task name for the RDKit
// objective, else the name and the objective's identity, so that an external
// objective never shares a row (or a sum) with an RDKit task of that name.
func taskLabel(i rundir.Info) string {
	label := i.Task
	if id := i.ObjectiveID(); id != rundir.ObjectiveRDKit {
		label = fmt.Sprintf("%s [%s]", i.Task, id)
	}
	if i.Minimize {
		label += " (−score)"
	}
	return label
}

// parseTaskLabel reads taskLabel's column back: the task, the objective (as run.json records one whose
// ObjectiveID is the label's) and whether the run minimised.
func parseTaskLabel(label string) (task, objective string, minimize bool) {
	label, minimize = strings.CutSuffix(label, " (−score)")
	task, id, ok := strings.Cut(label, " [")
	if !ok || !strings.HasSuffix(id, "]") {
		return label, "", minimize
	}
	id = strings.TrimSuffix(id, "]")
	if id == rundir.ObjectiveTell {
		return task, id, minimize
	}
	return task, rundir.ObjectiveCommand(id), minimize
}

// initialGains returns the initial scores as the run ranks them (rundir.Info.Gain).
func (r Run) initialGains() []float64 {
	out := make([]float64, len(r.Info.InitialScores))
	for i, s := range r.Info.InitialScores {
		out[i] = r.Info.Gain(s)
	}
	return out
}

// WriteMarkdown writes one table per setting: per task and method, the mean
// ± standard deviation over seeds of Top-1/10/100 and AUC Top-1/10/100,
// the number of seeds and mean wall time, the published NF-BO figure where
// one exists, and per method the sum over tasks.
func WriteMarkdown(w io.Writer, runs []Run) error {
	groups := map[groupKey][]Run{}
	settings := map[string]bool{}
	for _, r := range runs {
		k := groupKey{r.Info.Setting, taskLabel(r.Info), r.Info.Method}
		groups[k] = append(groups[k], r)
		settings[r.Info.Setting] = true
	}
	var b strings.Builder
	for _, setting := range sortedKeys(settings) {
		fmt.Fprintf(&b, "### Setting %s\n\n", setting)
		b.WriteString("| task | method | seeds | calls | Top-1 | Top-10 | Top-100 | AUC Top-1 | AUC Top-10 | AUC Top-100 | s/run | published NF-BO |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		sums := map[string]*[6]float64{}
		sumTasks := map[string]int{}
		added := map[string]int{} // task -> initial molecules, where they differ from the setting's
		// method -> the initial molecules it paid for, where fewer than the setting's (their calls its own)
		paidFewer := map[string]map[int]bool{}
		aucTop10 := map[[2]string]aucCell{}
		// (task, method) → seed → the setting's headline figure (pairedFigure), finished runs only
		bySeed := map[[2]string]map[int]float64{}
		kernels := map[[2]string]map[int]string{} // the same runs' kernels (rundir.Info.Kernels), "" where unknown
		pmo := setting == pmoSetting || setting == PMORandomSetting || setting == ZINCScoredSetting
		tasks, methods := map[string]bool{}, map[string]bool{}
		for k := range groups {
			if k.setting == setting {
				tasks[k.task], methods[k.method] = true, true
			}
		}
		for _, task := range sortedKeys(tasks) {
			for _, method := range sortedKeys(methods) {
				rs := groups[groupKey{setting, task, method}]
				if len(rs) == 0 {
					continue
				}
				var cols [6][]float64
				var secs, cpu []float64
				calls, unfinished, noLog := 0, 0, 0
				for _, r := range rs {
					switch {
					case r.NoLog:
						noLog++
					case !r.Info.Finished:
						unfinished++
					}
					switch n := r.Info.Initial; {
					case n > 0 && n < settingInitial(setting) && r.Info.InitialCalls > 0:
						if paidFewer[method] == nil {
							paidFewer[method] = map[int]bool{}
						}
						paidFewer[method][n] = true
					case n > 0 && n != settingInitial(setting):
						added[task] = n
					}
					f := r.Figures()
					for i := 0; i < 3; i++ {
						cols[i] = append(cols[i], f.Top[i])
						cols[3+i] = append(cols[3+i], f.AUC[i])
					}
					if !r.NoLog && r.Info.Finished {
						k := [2]string{task, method}
						if bySeed[k] == nil {
							bySeed[k] = map[int]float64{}
						}
						bySeed[k][r.Info.Seed] = f.Top[1]
						if pmo {
							bySeed[k][r.Info.Seed] = f.AUC[1]
						}
						if kernels[k] == nil {
							kernels[k] = map[int]string{}
						}
						kernels[k][r.Info.Seed] = r.Info.Kernels
					}
					secs = append(secs, r.Info.Seconds)
					if r.Info.CPUSeconds > 0 {
						cpu = append(cpu, r.Info.CPUSeconds)
					}
					calls += f.Calls
				}
				seeds := strconv.Itoa(len(rs))
				if unfinished > 0 {
					// AUC is normalised by the whole budget, so an unfinished run's figures are not final.
					seeds += fmt.Sprintf(" (%d unfinished)", unfinished)
				}
				if noLog > 0 {
					// Its 0 calls are not a result: the run never paid, or its log is gone.
					seeds += fmt.Sprintf(" (%d without a log)", noLog)
				}
				unfinished += noLog
				fmt.Fprintf(&b, "| %s | %s | %s | %d |", task, method, seeds, calls/len(rs))
				var means [6]float64
				for i := range cols {
					m, s := meanStd(cols[i])
					means[i] = m
					if len(cols[i]) > 1 {
						fmt.Fprintf(&b, " %s ± %s |", score3(m), score3(s))
					} else {
						fmt.Fprintf(&b, " %s |", score3(m)) // one seed has no spread to show
					}
				}
				_, sd := meanStd(cols[4])
				aucTop10[[2]string{task, method}] = aucCell{means[4], sd, len(rs), unfinished == 0}
				if unfinished == 0 {
					if sums[method] == nil {
						sums[method] = new([6]float64)
					}
					for i, m := range means {
						sums[method][i] += m
					}
					sumTasks[method]++
				}
				ms, _ := meanStd(secs)
				pub := "—"
				if rs[0].Info.ObjectiveID() == rundir.ObjectiveRDKit {
					pub = published(task, setting, method, means, unfinished == 0)
				}
				fmt.Fprintf(&b, " %s | %s |\n", secondsCell(ms, cpu, len(rs)), pub)
			}
		}
		writeInitialNotes(&b, setting, added, paidFewer)
		writeSums(&b, sortedKeys(methods), sums, sumTasks)
		if pmo {
			if setting == PMORandomSetting {
				b.WriteString("PMO's protocol: every run starts from 1,000 molecules drawn at random from ZINC250k, a draw " +
					"per seed shared by every method (a method may pay for fewer of them: the first of the draw); PMO reports 5 runs.\n\n")
			}
			if setting == ZINCScoredSetting {
				b.WriteString("GenMol's and f-RAG's start, not PMO's protocol: all 249,455 molecules of ZINC250k scored by the task's " +
					"objective outside the budget; every run is given the best 1,000 with their scores and makes 10,000 calls " +
					"of its own, and AUC Top-10 counts those calls alone.\n\n")
			}
			writePMOSideBySide(&b, sortedKeys(tasks), sortedKeys(methods), aucTop10)
		}
		figure := "Top-10"
		if pmo {
			figure = "AUC Top-10"
		}
		writePaired(&b, "nfbo", figure, sortedKeys(tasks), sortedKeys(methods), bySeed, kernels)
		inSetting := map[[2]string][]Run{}
		for k, rs := range groups {
			if k.setting == setting {
				inSetting[[2]string{k.task, k.method}] = rs
			}
		}
		writeMoves(&b, sortedKeys(tasks), sortedKeys(methods), inSetting)
	}
	writeVersions(&b, runs)
	_, err := io.WriteString(w, b.String())
	return err
}

// writePaired writes ref's figure (named figure: AUC Top-10 at PMO's budget, Top-10 at a lab's) against each
// other method's on the same seeds (under PMO's protocol the same draws, so that the draw's luck cancels): per task
// the mean paired difference ± its sd, the pairs, and how many of them ref leads; the sum of the tasks' mean
// differences; the tasks where the mean difference is beyond its sd either way (issue #59's "by more than the
// seeds' spread"); the sums over all tasks seed by seed, for the seeds where both methods finished every task ref
// ran; and how many pairs ran on other kernels. bySeed maps (task, method) to each seed's figure, kernels to its
// run's kernels ("" where unknown). Methods with fewer than two pairs in all are left out; nothing is written
// without ref or another method.
func writePaired(b *strings.Builder, ref, figure string, tasks, methods []string, bySeed map[[2]string]map[int]float64,
	kernels map[[2]string]map[int]string) {
	type pairs struct {
		diff  [][]float64 // per task, ref − method per seed, in seed order
		n     int
		mixed int // pairs whose runs name different kernels
	}
	var others []string
	per := map[string]*pairs{}
	for _, m := range methods {
		if m == ref {
			continue
		}
		p := &pairs{diff: make([][]float64, len(tasks))}
		for i, task := range tasks {
			r, o := bySeed[[2]string{task, ref}], bySeed[[2]string{task, m}]
			for _, seed := range slices.Sorted(maps.Keys(r)) {
				if v, ok := o[seed]; ok {
					p.diff[i] = append(p.diff[i], r[seed]-v)
					p.n++
					kr, km := kernels[[2]string{task, ref}][seed], kernels[[2]string{task, m}][seed]
					if kr != "" && km != "" && kr != km {
						p.mixed++
					}
				}
			}
		}
		if p.n >= 2 {
			others = append(others, m)
			per[m] = p
		}
	}
	if len(others) == 0 {
		return
	}
	fmt.Fprintf(b, "%s against each method on the same seeds (%s, %s − method: the mean of the paired differences ± "+
		"their sd, the pairs in brackets, and how many pairs %s leads):\n\n| task |", ref, figure, ref, ref)
	for _, m := range others {
		fmt.Fprintf(b, " %s |", m)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(others)) + "\n")
	sums := make([]float64, len(others))
	counted, ahead, behind := make([]int, len(others)), make([]int, len(others)), make([]int, len(others))
	for i, task := range tasks {
		fmt.Fprintf(b, "| %s |", task)
		for j, m := range others {
			d := per[m].diff[i]
			if len(d) == 0 {
				b.WriteString(" — |")
				continue
			}
			mean, sd := meanStd(d)
			leads := 0
			for _, v := range d {
				if v > 0 {
					leads++
				}
			}
			sums[j] += mean
			counted[j]++
			if len(d) > 1 {
				switch {
				case mean > sd:
					ahead[j]++
				case -mean > sd:
					behind[j]++
				}
				fmt.Fprintf(b, " %+.3f ± %.3f (%d), %d of %d |", mean, sd, len(d), leads, len(d))
			} else {
				fmt.Fprintf(b, " %+.3f (1), %d of 1 |", mean, leads)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| **sum of the means** |")
	for j := range others {
		fmt.Fprintf(b, " **%+.3f** (%d tasks) |", sums[j], counted[j])
	}
	b.WriteString("\n| tasks ahead, behind by more than the sd (two pairs or more) |")
	for j := range others {
		fmt.Fprintf(b, " %d, %d |", ahead[j], behind[j])
	}
	b.WriteString("\n\n")
	// The seeds where ref and each method finished every task ref ran: their sums over the tasks, seed by seed.
	for _, m := range others {
		var cells []string
		for _, seed := range seedsOf(bySeed, ref, tasks) {
			var rs, ms float64
			whole := true
			for _, task := range tasks {
				r, rok := bySeed[[2]string{task, ref}]
				if !rok || len(r) == 0 {
					continue // a task ref never ran
				}
				rv, ok1 := r[seed]
				mv, ok2 := bySeed[[2]string{task, m}][seed]
				if !ok1 || !ok2 {
					whole = false
					break
				}
				rs, ms = rs+rv, ms+mv
			}
			if whole {
				cells = append(cells, fmt.Sprintf("seed %d %s against %s (%+.3f)", seed, score3(rs), score3(ms), rs-ms))
			}
		}
		if len(cells) > 0 {
			fmt.Fprintf(b, "Summed over every task %s ran, %s against %s: %s.\n\n", ref, ref, m, strings.Join(cells, "; "))
		}
	}
	// A run with the flow buys other molecules on other BLAS kernels: such a pair's difference is not the
	// methods' alone (docs/USAGE.md, "Repeating a run").
	for _, m := range others {
		if n := per[m].mixed; n > 0 {
			fmt.Fprintf(b, "%d of the %d pairs of %s and %s ran on different kernels: their differences hold the kernels' "+
				"as well as the methods' (docs/USAGE.md, \"Repeating a run\").\n\n", n, per[m].n, ref, m)
		}
	}
}

// seedsOf returns the seeds of method's finished runs over tasks, in order.
func seedsOf(bySeed map[[2]string]map[int]float64, method string, tasks []string) []int {
	seen := map[int]bool{}
	for _, task := range tasks {
		for seed := range bySeed[[2]string{task, method}] {
			seen[seed] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// secondsCell is a report's s/run: the mean wall seconds, and nfbo's mean CPU seconds beside them when each of
// the n runs has them ("1234 (CPU 456)"; on a shared machine the CPU seconds are the run's own cost).
func secondsCell(wall float64, cpu []float64, n int) string {
	if len(cpu) < n {
		return fmt.Sprintf("%.0f", wall)
	}
	m, _ := meanStd(cpu)
	return fmt.Sprintf("%.0f (CPU %.0f)", wall, m)
}

// writeInitialNotes says which tasks of a setting start from another number of initial molecules (added: task →
// molecules) and which methods pay for fewer of them (paidFewer: method → the numbers).
func writeInitialNotes(b *strings.Builder, setting string, added map[string]int, paidFewer map[string]map[int]bool) {
	for _, task := range slices.Sorted(maps.Keys(added)) {
		fmt.Fprintf(b, "\n%s starts from %d initial molecules, not %d: its initial set holds added molecules "+
			"(the suite's description says which).\n", task, added[task], settingInitial(setting))
	}
	for _, method := range slices.Sorted(maps.Keys(paidFewer)) {
		var ns []string
		for _, n := range slices.Sorted(maps.Keys(paidFewer[method])) {
			ns = append(ns, strconv.Itoa(n))
		}
		fmt.Fprintf(b, "\n%s pays for %s initial molecules, not %d: the same calls in all, the rest its own.\n",
			method, strings.Join(ns, " or "), settingInitial(setting))
	}
}

// writeSums writes the table of each method's figures summed over its tasks (sums; sumTasks: how many).
func writeSums(b *strings.Builder, methods []string, sums map[string]*[6]float64, sumTasks map[string]int) {
	b.WriteString("\nSum over tasks (mean over seeds per task, then summed; tasks with an unfinished run or one without a log are left out):\n\n")
	b.WriteString("| method | tasks | Top-1 | Top-10 | Top-100 | AUC Top-1 | AUC Top-10 | AUC Top-100 |\n|---|---|---|---|---|---|---|---|\n")
	for _, method := range methods {
		s := sums[method]
		if s == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", method, sumTasks[method], score3(s[0]), score3(s[1]), score3(s[2]), score3(s[3]), score3(s[4]), score3(s[5]))
	}
	b.WriteString("\n")
}

// writeVersions says which nfbo versions wrote the runs, with their numbers of runs.
func writeVersions(b *strings.Builder, runs []Run) {
	versions := map[string]int{}
	for _, r := range runs {
		if v := r.Info.Version; v != "" {
			versions[v]++
		}
	}
	if len(versions) == 0 {
		return
	}
	var vs []string
	for _, v := range sortedKeys(versions) {
		vs = append(vs, fmt.Sprintf("%s (%d runs)", v, versions[v]))
	}
	fmt.Fprintf(b, "Written by nfbo %s.\n\n", strings.Join(vs, "; "))
}

// pmoSetting is PMO's setting, 1,000 initial ZINC molecules + 9,000 calls, every run from the first 1,000 of
// ZINC250k (pmo20-fixed; PMORandomSetting draws them per seed), under which the report sets the
// methods' AUC Top-10 beside the published figures.
var pmoSetting = Setting(1000, 9000)

// aucCell is one task and method's AUC Top-10 over seeds.
type aucCell struct {
	mean, sd float64
	seeds    int
	final    bool // every run finished with a log
}

// writePMOSideBySide writes PMO's metric, AUC Top-10, one column per method beside published NF-BO and Genetic
// GFN, and the sums over the tasks where every method's runs are final, so that the sums compare like with like.
func writePMOSideBySide(b *strings.Builder, tasks, methods []string, cells map[[2]string]aucCell) {
	b.WriteString("AUC Top-10 side by side (PMO's metric; mean ± sd over seeds, the seeds in brackets; published: ")
	b.WriteString("NF-BO, Lee et al. 2025; Genetic GFN, Kim et al. 2024, as the GenMol paper collects it):\n\n")
	b.WriteString("| task |")
	for _, m := range methods {
		fmt.Fprintf(b, " %s |", m)
	}
	b.WriteString(" published NF-BO | Genetic GFN |\n|---|")
	b.WriteString(strings.Repeat("---|", len(methods)+2) + "\n")
	// A method run on fewer than half the tasks is a probe: its columns are shown, but counting it in "every
	// method finished" would leave the campaign's sums empty.
	summed := make([]bool, len(methods))
	var probes []string
	for i, m := range methods {
		n := 0
		for _, task := range tasks {
			if _, ok := cells[[2]string{task, m}]; ok {
				n++
			}
		}
		summed[i] = 2*n >= len(tasks)
		if !summed[i] {
			probes = append(probes, fmt.Sprintf("%s (%d of %d)", m, n, len(tasks)))
		}
	}
	sums := make([]float64, len(methods)+2)
	common := 0
	for _, task := range tasks {
		fmt.Fprintf(b, "| %s |", task)
		all := true
		for i, m := range methods {
			c, ok := cells[[2]string{task, m}]
			switch {
			case !ok:
				b.WriteString(" — |")
			case !c.final:
				b.WriteString(" unfinished |")
			case c.seeds > 1:
				fmt.Fprintf(b, " %s ± %s (%d) |", score3(c.mean), score3(c.sd), c.seeds)
			default:
				fmt.Fprintf(b, " %s (1) |", score3(c.mean))
			}
			all = all && (c.final || !summed[i])
		}
		pub, okPub := PublishedPMO[task]
		gfn, okGFN := PublishedGeneticGFNPMO[task]
		for _, p := range []struct {
			v  float64
			ok bool
		}{{pub[4], okPub}, {gfn, okGFN}} {
			if p.ok {
				fmt.Fprintf(b, " %.3f |", p.v)
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
		if all && okPub && okGFN {
			common++
			for i, m := range methods {
				if summed[i] {
					sums[i] += cells[[2]string{task, m}].mean
				}
			}
			sums[len(methods)] += pub[4]
			sums[len(methods)+1] += gfn
		}
	}
	fmt.Fprintf(b, "| **sum, %d tasks** |", common)
	for i, v := range sums {
		if i < len(methods) && !summed[i] {
			b.WriteString(" — |")
			continue
		}
		fmt.Fprintf(b, " **%s** |", score3(v))
	}
	b.WriteString("\n\nThe sums cover the tasks where every method's runs finished and both published figures exist")
	if len(probes) > 0 {
		fmt.Fprintf(b, ", among the methods run on half the tasks or more (left out, with the tasks they ran: %s)", strings.Join(probes, ", "))
	}
	b.WriteString(". ")
	b.WriteString("Published sums over the 20 tasks (AUC Top-10, the GenMol paper's collection):")
	sep := " "
	for _, p := range PublishedPMO20Sums {
		mark := ""
		if p.ZINCScored {
			mark = "*"
		}
		fmt.Fprintf(b, "%s%s %s%s", sep, p.Method, score3(p.Sum), mark)
		sep = ", "
	}
	fmt.Fprintf(b, " (%s).\n\n", ZINCScoredNote)
}

// published returns the published NF-BO figure for a task and setting and
// how far ours (means: Top-1/10/100, AUC Top-1/10/100 over seeds) is from
// it, or "—": AUC Top-10 and Top-1 for PMO's 1000+9000 setting, the best
// score (Top-1) for GuacaMol's 10000+10000 setting. Unfinished runs get no
// comparison: their figures are not final.
func published(task, setting, method string, means [6]float64, finished bool) string {
	if !strings.HasPrefix(method, "nfbo") {
		return "—"
	}
	switch setting {
	case pmoSetting, PMORandomSetting:
		if p, ok := PublishedPMO[task]; ok {
			if !finished {
				return fmt.Sprintf("AUC Top-10 %.3f, Top-1 %.3f (ours: unfinished)", p[4], p[0])
			}
			return fmt.Sprintf("AUC Top-10 %.3f (ours %+.3f), Top-1 %.3f (ours %+.3f)", p[4], means[4]-p[4], p[0], means[0]-p[0])
		}
	case "10000+10000":
		if p, ok := PublishedGuacaMol10k[task]; ok {
			if !finished {
				return fmt.Sprintf("best %.3f ± %.3f (ours: unfinished)", p[0], p[1])
			}
			return fmt.Sprintf("best %.3f ± %.3f (ours %+.3f)", p[0], p[1], means[0]-p[0])
		}
	}
	return "—"
}

// Setting returns the label of a setting, "INITIAL+CALLS" (e.g. "100+500"),
// under which the report files a run; settingInitial reads it back.
func Setting(initial, calls int) string {
	return fmt.Sprintf("%d+%d", initial, calls)
}

// settingInitial returns the initial count of a setting "INITIAL+CALLS", or
// -1 when the setting is not of that form.
func settingInitial(setting string) int {
	head, _, ok := strings.Cut(setting, "+")
	n, err := strconv.Atoi(head)
	if !ok || err != nil {
		return -1
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteRunsTSV writes one tab-separated row per run, after a header: setting, task, method, seed, calls, budget,
// finished, Top-1/10/100, AUC Top-1/10/100 (full float64 precision), seconds, the nfbo version, the initial
// molecules, the calls that scored them (0 when their scores came with the data), nfbo's CPU seconds (0 when
// unknown: rundir.Info.CPUSeconds) and the kernels the run ran on (empty when unknown: rundir.Info.Kernels).
func WriteRunsTSV(w io.Writer, runs []Run) error {
	var b strings.Builder
	b.WriteString(runsTSVHeader + "\n")
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range runs {
		f, i := r.Figures(), r.Info
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%d\t%d\t%t\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%d\t%d\t%.0f\t%s\n", i.Setting, taskLabel(i), i.Method,
			i.Seed, f.Calls, f.Budget, i.Finished, g(f.Top[0]), g(f.Top[1]), g(f.Top[2]), g(f.AUC[0]), g(f.AUC[1]), g(f.AUC[2]),
			i.Seconds, strings.ReplaceAll(i.Version, "\t", " "), i.Initial, i.InitialCalls, i.CPUSeconds,
			strings.ReplaceAll(i.Kernels, "\t", " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// runsTSVHeader is the first line of a runs.tsv (WriteRunsTSV, ReadRunsTSV). ReadRunsTSV reads the files of
// earlier nfbo too: formerTSVHeader's, written before the initial counts had columns, initialTSVHeader's, before
// the CPU seconds had one, and cpuTSVHeader's, before the kernels had one (what they lack is unknown: 0, "").
const (
	formerTSVHeader  = "setting\ttask\tmethod\tseed\tcalls\tbudget\tfinished\ttop1\ttop10\ttop100\tauc_top1\tauc_top10\tauc_top100\tseconds\tversion"
	initialTSVHeader = formerTSVHeader + "\tinitial\tinitial_calls"
	cpuTSVHeader     = initialTSVHeader + "\tcpu_seconds"
	runsTSVHeader    = cpuTSVHeader + "\tkernels"
)

// ReadRunsTSV reads the rows of a runs.tsv as WriteRunsTSV writes them (path names the file in errors): runs
// with their figures and no log, so that runs made elsewhere, or kept as rows after their directories were
// removed, join a report's tables. Each run's Dir is "PATH:LINE". They have no curve and no molecules: plots
// and run pages leave them out. A row that cannot be read is an error naming the file, line and column.
func ReadRunsTSV(path string, r io.Reader) ([]Run, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	header := strings.TrimSuffix(lines[0], "\r")
	if header != runsTSVHeader && header != cpuTSVHeader && header != initialTSVHeader && header != formerTSVHeader {
		return nil, fmt.Errorf("bench: %s:1: not a runs.tsv: want the header %q", path, runsTSVHeader)
	}
	cols := strings.Split(header, "\t")
	var runs []Run
	for n, line := range lines[1:] {
		at := fmt.Sprintf("%s:%d", path, n+2)
		f := strings.Split(strings.TrimSuffix(line, "\r"), "\t")
		if len(f) != len(cols) {
			return nil, fmt.Errorf("bench: %s: %d columns, want %d (%s)", at, len(f), len(cols), strings.Join(cols, ", "))
		}
		var bad error
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil && bad == nil {
				bad = fmt.Errorf("bench: %s: column %s: %q is not a number", at, cols[i], f[i])
			}
			return v
		}
		whole := func(i int) int {
			v, err := strconv.Atoi(f[i])
			if err != nil && bad == nil {
				bad = fmt.Errorf("bench: %s: column %s: %q is not a whole number", at, cols[i], f[i])
			}
			return v
		}
		fig := &Figures{Calls: whole(4), Budget: whole(5)}
		for k := range 3 {
			fig.Top[k], fig.AUC[k] = num(7+k), num(10+k)
		}
		finished, err := strconv.ParseBool(f[6])
		if err != nil && bad == nil {
			bad = fmt.Errorf("bench: %s: column finished: %q is not true or false", at, f[6])
		}
		info := rundir.Info{Setting: f[0], Method: f[2], Seed: whole(3), Budget: fig.Budget, Finished: finished,
			Seconds: num(13), Version: f[14], Calls: fig.Calls}
		if header != formerTSVHeader {
			info.Initial, info.InitialCalls = whole(15), whole(16)
		}
		if header == runsTSVHeader || header == cpuTSVHeader {
			info.CPUSeconds = num(17)
		}
		if header == runsTSVHeader {
			info.Kernels = f[18]
		}
		info.Task, info.Objective, info.Minimize = parseTaskLabel(f[1])
		if bad != nil {
			return nil, bad
		}
		if info.Setting == "" || info.Task == "" || info.Method == "" {
			return nil, fmt.Errorf("bench: %s: a row without its setting, task or method", at)
		}
		runs = append(runs, Run{Info: info, Dir: at, row: fig})
	}
	return runs, nil
}
