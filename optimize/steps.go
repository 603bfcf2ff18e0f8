package optimize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/internal/buildinfo"
	"github.com/nfbo/nfbo/internal/cpuclock"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/rundir"
)

// runState is a run between the steps of run: what each step found or opened for the next.
//
// A run counts objective calls three ways. total is every call the run may pay, the initial molecules' and
// the optimiser's (-budget, run.json's Budget, the evaluation log's limit). paidInit is the most the initial
// molecules can pay: all of them when the file has no scores for the task, else none. initCalls is what they
// did pay (fewer than paidInit when some are invalid for the objective, or one molecule for it); the
// optimiser's budget, bo.Config.Budget, is what is left: total-initCalls.
type runState struct {
	s       Streams
	a       Args
	preset  bo.Preset
	start   time.Time
	cpu0    time.Duration // the process's CPU time at start (internal/cpuclock)
	warnf   func(format string, args ...any)
	count   int      // initial molecules to read (-init-count, or the preset's)
	closers []func() // run in reverse order when run returns

	// loadInputs
	ck        *model.Checkpoint
	voc       *vocab.Vocab
	mols      []molfile.Molecule
	t         int  // the run's sequence length
	hasScores bool // the init file has the task's scores: the initial molecules cost nothing
	paysFewer bool // NF-BO pays for fewer initial molecules than the preset's count, by the preset's choice

	// plan
	paidInit, total int
	cfg             bo.Config // without Budget and RunDir until payInitial
	chemRules       rules.Rules

	// openEngines
	flow  *seqflow.Flow
	codec *molseq.Codec
	obj   objective.Objective
	canon objective.Canonicalizer

	// openRun
	info   rundir.Info
	ruler  bo.Rules
	budget *objective.Budget

	// payInitial
	initCalls int
}

// run makes or resumes the run of a in steps. Everything that can be checked without the objective is checked
// before the first call, and before the run directory is touched: the model, the initial molecules and their
// scores, the budget against them, the optimiser's settings, and the objective's task names (loadInputs, plan,
// openEngines); then, under the lock, the run directory's state (openRun).
func run(ctx context.Context, s Streams, a Args, preset bo.Preset) error {
	r := newRunState(s, a, preset)
	defer func() {
		for i := len(r.closers) - 1; i >= 0; i-- {
			r.closers[i]()
		}
	}()
	for _, step := range []func(context.Context) error{r.loadInputs, r.plan, r.openEngines, r.openRun} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if stop, err := r.payInitial(ctx); stop {
		return err
	}
	if a.Method != "nfbo" {
		return runBaseline(ctx, s, baselineRun{args: a, info: r.info, start: r.start, cpu0: r.cpu0, budget: r.budget, initCalls: r.initCalls,
			mols: r.mols, voc: r.voc, flow: r.flow, t: r.t, calls: r.cfg.Budget, hasScores: r.hasScores, canon: r.canon,
			offspring: r.cfg.Anchors * r.cfg.Queries})
	}
	return r.runOptimiser(ctx)
}

// newRunState returns the state of a run of a under preset before its first step.
func newRunState(s Streams, a Args, preset bo.Preset) *runState {
	cpu0, _ := cpuclock.Process()
	return &runState{s: s, a: a, preset: preset, start: time.Now(), cpu0: cpu0, count: cmp.Or(a.InitCount, preset.InitialPoints),
		warnf: func(format string, args ...any) { fmt.Fprintf(s.Stderr, a.command()+": "+format+"\n", args...) }}
}

// loadInputs reads the model and the initial molecules (standardised, canonicalised with the model's vocabulary).
func (r *runState) loadInputs(ctx context.Context) error {
	a := r.a
	var err error
	if r.ck, err = model.LoadModelDir(a.Model); err != nil {
		return err
	}
	if r.voc, err = vocab.New(r.ck.Vocab); err != nil {
		return fmt.Errorf("optimize: vocabulary of %s: %w", a.Model, err)
	}
	column := a.ScoreColumn
	if column == "" {
		column = a.Task
	}
	rows, hasScores, err := readInit(a.Init, column, r.count)
	if err != nil {
		return err
	}
	if !hasScores {
		if err := r.checkScoreColumn(); err != nil {
			return err
		}
	}
	if r.paysFewer = r.presetPaysFewer(hasScores); r.paysFewer {
		rows = rows[:min(len(rows), r.preset.PaidInitial(a.Variant))]
	}
	if rows, err = standardizeInit(ctx, a.Python, a.Init, rows, r.warnf); err != nil {
		return err
	}
	r.hasScores = hasScores
	warn := func(msg string) { r.warnf("%s", msg) }
	skips := molfile.NewSkips("", warn)
	if r.mols, r.t, err = molfile.Canonicalize(rows, a.Init, r.voc, r.ck.Params.Config.MaxT, skips); err != nil {
		return fmt.Errorf("optimize: -init: %w", err)
	}
	if line := skips.Summary(len(rows), "the model's vocabulary", r.ck.Params.Config.MaxT); line != "" {
		warn(fmt.Sprintf("-init %s: %s; the run starts from the other %d", a.Init, line, len(r.mols)))
	}
	if a.ask != nil {
		a.ask.names = initialNames(r.mols) // the names go with the molecules into the ledger
	}
	return nil
}

// presetPaysFewer says whether NF-BO's variant pays for fewer initial molecules than the preset's count, by the
// preset's choice (bo.ScreenedPreset.PaidInitial): they have no scores in the init file, -init-count is not given,
// and a resumed run began so (one begun by an nfbo whose preset paid for them all goes on as it began, as its
// configuration does: startedConfig).
func (r *runState) presetPaysFewer(hasScores bool) bool {
	a := r.a
	n := r.preset.PaidInitial(a.Variant)
	if hasScores || a.InitCount != 0 || a.Method != "nfbo" || n >= r.preset.InitialPoints {
		return false
	}
	if a.Resume {
		if info, err := rundir.ReadInfo(a.Out); err == nil && info.Initial > n {
			return false
		}
	}
	return true
}

// initialNames returns the names the initial file gives its molecules mols, by the optimiser's key.
func initialNames(mols []molfile.Molecule) map[string]string {
	names := map[string]string{}
	for _, m := range mols {
		if m.Name != "" {
			names[m.Key] = m.Name
		}
	}
	return names
}

// plan sets the run's call counts, the optimiser's configuration and the chemistry rules, and checks them.
func (r *runState) plan(context.Context) error {
	a := r.a
	// Initial molecules without scores are paid for, so the preset's setting (pmo: 1,000 initial + 9,000
	// calls) is 10,000 calls in all, PMO's budget.
	if !r.hasScores {
		r.paidInit = len(r.mols)
	}
	r.total = a.Budget
	if r.total == 0 {
		r.total = r.paidInit + r.preset.Config.Budget
		if r.paysFewer {
			r.total = r.paidInit + r.preset.PaidBudget(a.Variant)
		}
	}
	if r.total <= r.paidInit {
		want := a.Budget // most likely meant as new calls
		if want <= 0 {
			want = r.preset.Config.Budget
		}
		return argErrorf("-budget %d leaves no call for the optimiser: the %d initial molecules of %s have no %s scores, "+
			"so they are scored first and count as calls (-budget counts every objective call, PMO's accounting); "+
			"give -budget %d for %d new calls, or fewer molecules with -init-count, or scores in the initial file",
			r.total, r.paidInit, a.Init, a.Task, r.paidInit+want, want)
	}
	var err error
	if r.cfg, err = a.Config(r.preset); err != nil {
		return argErrorf("%v", err)
	}
	if a.Resume {
		if r.cfg, err = startedConfig(a, r.cfg); err != nil {
			return err
		}
	}
	if r.chemRules, err = rules.Load(a.Rules); err != nil {
		return &ArgError{err}
	}
	if a.Method != "nfbo" {
		r.chemRules = rules.Rules{} // the baselines propose as published
	}
	if a.Method == "nfbo" && !a.Resume {
		r.warnFewRounds()
	}
	if a.Method == "nfbo" {
		// The optimiser's budget is known once the initial molecules are paid; the settings are checked with
		// the least it can be, all of paidInit paid.
		least := r.cfg
		least.Budget = r.total - r.paidInit
		if err := least.Check(len(r.mols), r.t*r.ck.Params.Config.F); err != nil {
			return argErrorf("%v (from the %d initial molecules of %s; lower -anchors, or give more molecules)",
				err, len(r.mols), a.Init)
		}
	}
	return nil
}

// checkScoreColumn refuses a -score-column that -init lacks, and warns when -init has columns besides its
// molecules' (one may hold scores under another name than the task's): its molecules are about to be paid for.
func (r *runState) checkScoreColumn() error {
	a := r.a
	others := molfile.ScoreColumns(a.Init)
	if a.ScoreColumn != "" {
		return argErrorf("-score-column %s: %s has no column (or SDF data item on every record) of that name; its columns: %s",
			a.ScoreColumn, a.Init, strings.Join(others, ", "))
	}
	if len(others) > 0 && !a.Resume {
		r.warnf("warning: %s has no column named %s, so its molecules are scored by the objective and count as calls; "+
			"its other columns (%s) are not read as scores: give -score-column NAME to use one", a.Init, a.Task, strings.Join(others, ", "))
	}
	return nil
}

// minRounds is the fewest batches worth optimising with: the optimiser learns only from the scores of the
// batches before, so one batch is a random draw around the initial molecules.
const minRounds = 3

// warnFewRounds warns when the optimiser's calls (-budget less the initial molecules paid for) fill fewer
// than minRounds batches, naming the -budget that gives minRounds.
func (r *runState) warnFewRounds() {
	batch := max(r.cfg.Anchors, 1) * max(r.cfg.Queries, 1)
	calls := r.total - r.paidInit
	if rounds := (calls + batch - 1) / batch; rounds < minRounds {
		r.warnf("warning: -budget %d leaves %d new calls after the %d initial molecules it pays for: %d batch(es) of %d "+
			"(%d trust regions x %d), %d round(s) of feedback; give -budget %d or more for %d rounds",
			r.total, calls, r.paidInit, rounds, batch, r.cfg.Anchors, r.cfg.Queries, rounds, r.paidInit+minRounds*batch, minRounds)
	}
}

// openEngines opens the flow, the codec and the objective.
func (r *runState) openEngines(ctx context.Context) error {
	a := r.a
	var err error
	r.flow, err = seqflow.New(r.ck, r.t, seqflow.Options{Backend: a.Backend, Warn: r.s.Stderr,
		Train: train.Options{FreezeEmbeddings: a.FrozenEmbeddings()}})
	if err != nil {
		return fmt.Errorf("optimize: model %s: %w", a.Model, err)
	}
	r.closers = append(r.closers, func() { r.flow.Close() })
	if r.codec, err = molseq.New(r.voc, r.t); err != nil {
		return err
	}
	obj, canon, closeObj, err := openObjective(ctx, r.s, a, r.warnf)
	if err != nil {
		return err
	}
	r.obj, r.canon = obj, canon
	r.closers = append(r.closers, closeObj)
	return nil
}

// openRun makes or resumes the run directory under its lock: run.json checked against the settings, a
// resume's state checked before anything is paid, run.json, args.json and the rules written, and the
// evaluation log opened as the run's budget.
func (r *runState) openRun(ctx context.Context) error {
	a := r.a
	setting := a.Setting
	if setting == "" {
		setting = bench.Setting(len(r.mols), r.total-r.paidInit)
	}
	want := rundir.Info{Setting: setting, Task: a.Task, Method: a.methodLabel(), Seed: int(a.Seed), Budget: r.total,
		Objective: a.objectiveID(), Version: buildinfo.Version(), Minimize: a.Minimize,
		Kernels: r.flow.Backend() + "; " + train.BLASKernels()}
	var err error
	if r.info, err = rundir.Open(a.Out, want, a.Resume, bench.Setting(r.count, r.total-r.paidInit), r.warnf); err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	if a.ask == nil || !a.ask.locked {
		unlock, err := rundir.Lock(a.Out)
		if err != nil {
			return err
		}
		r.closers = append(r.closers, unlock)
	}
	if a.Resume {
		if err := checkResume(a, r.info, r.paidInit, r.warnf); err != nil {
			return err
		}
	}
	// run.json marks the directory as a run before anything else is written to it, so that a run killed at any
	// moment can be resumed; args.json keeps the flags, so that ask, tell and serve need only the directory.
	if err := rundir.WriteInfo(a.Out, r.info); err != nil {
		return err
	}
	if err := WriteArgs(a); err != nil {
		return err
	}
	if r.chemRules, err = runRules(a, r.chemRules, r.warnf); err != nil {
		return err
	}
	initial := make([]string, len(r.mols))
	for i, m := range r.mols {
		initial[i] = m.Key
	}
	if r.ruler, err = newRuleChecker(ctx, r.chemRules, r.canon, initial, !a.Resume, r.warnf); err != nil {
		return err
	}
	r.budget, err = objective.OpenBudget(filepath.Join(a.Out, rundir.EvalLogFile), r.obj, r.canon,
		objective.BudgetOptions{Limit: r.total, Task: a.Task, Warnf: r.warnf})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { r.budget.Close() })
	return nil
}

// payInitial pays for the initial molecules without scores first (PMO's accounting; after a resume they
// replay from the log) and gives the optimiser what is left of the budget. stop says the run ends here with
// err: interrupted, failed, or, in an ask/tell run, waiting for their scores.
func (r *runState) payInitial(ctx context.Context) (stop bool, err error) {
	a := r.a
	if !r.hasScores {
		keys := make([]string, len(r.mols))
		for i, m := range r.mols {
			keys[i] = m.Key
		}
		evs, err := r.budget.Evaluate(ctx, keys)
		if err != nil {
			return true, r.initialFailed(ctx, err)
		}
		calls := map[int]bool{}
		for i, e := range evs {
			r.mols[i].Score = e.Score
			if e.Call > 0 {
				calls[e.Call] = true
			}
		}
		r.initCalls = len(calls)
	}
	if a.Resume && r.info.InitialCalls > 0 && r.info.InitialCalls != r.initCalls {
		// The optimiser's budget was fixed when the run first paid for its initial molecules (run.json's
		// InitialCalls, in its config.json too). A molecule the objective gave up on then is sent again on a
		// resume and may be paid now: its call comes out of the optimiser's share, so the run goes on as the
		// run it was, and its log still ends with total calls.
		r.warnf("%d initial molecules are paid for now against %d when the run began (one the objective gave up on was "+
			"answered this time); the optimiser's budget stays %d", r.initCalls, r.info.InitialCalls, r.total-r.info.InitialCalls)
		r.initCalls = r.info.InitialCalls
	}
	r.cfg.Budget = r.total - r.initCalls // the optimiser's new calls: what the initial molecules left of total
	r.cfg.RunDir = a.Out
	r.info.Initial = len(r.mols)
	r.info.InitialCalls = r.initCalls
	r.info.Calls = r.budget.Calls()
	return false, nil
}

// initialFailed returns the run's answer to err from paying for the initial molecules, recording the calls
// paid when the run stops for scores (ask/tell) or is interrupted.
func (r *runState) initialFailed(ctx context.Context, err error) error {
	a := r.a
	if a.ask != nil && errors.Is(err, objective.ErrAwaitingScores) {
		r.info = r.infoNow()
		return a.ask.stop(a.Out, r.info)
	}
	if ctx.Err() != nil {
		r.info = r.infoNow()
		r.warnf("interrupted while scoring the initial molecules, after %d paid calls; continue with the same command and -resume",
			r.budget.Calls())
		if err := rundir.WriteInfo(a.Out, r.info); err != nil {
			return errors.Join(ctx.Err(), err)
		}
		return ctx.Err()
	}
	return fmt.Errorf("optimize: scoring the %d initial molecules of %s (budget %d): %w", len(r.mols), a.Init, r.total, err)
}

// runOptimiser runs NF-BO from the initial molecules to the end of its budget, then records and prints how
// it ended.
func (r *runState) runOptimiser(ctx context.Context) error {
	a := r.a
	init := bo.Initial{Tokens: make([]int, 0, len(r.mols)*r.t)}
	for _, m := range r.mols {
		init.Tokens = append(init.Tokens, m.IDs[:r.t]...)
		init.Y = append(init.Y, r.info.Gain(m.Score)) // what the optimiser maximises
		init.SMILES = append(init.SMILES, m.Key)
	}
	rec := &progressPrinter{w: r.s.Stdout, health: flowHealth(r.flow, r.voc, a.FrozenEmbeddings()), warnf: r.warnf,
		saved: r.saveProgress}
	if msg := rec.health(); msg != "" {
		rec.warned = true
		r.warnf("warning: the flow of model %s %s", a.Model, msg)
	}
	opt, err := bo.NewOptimizer(r.cfg, bo.Problem{Flow: r.flow, Codec: r.codec, Objective: newBudgetObjective(r.budget, r.initCalls, r.info, initScores(r.mols, r.hasScores)),
		Initial: init, Vocab: r.voc.Len(), Stop: vocab.Stop, Alphabet: mutationAlphabet(r.voc), Rules: r.ruler,
		Features: surrogateFeatures(surrogateInputs(r.cfg, a), r.t, r.voc.Len(), vocab.Stop)},
		rand.NewPCG(a.Seed, 0x6e66626f), rec)
	if err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	r.info.InitialScores = nil
	if r.hasScores {
		r.info.InitialScores = initScores(r.mols, true)
	}
	if err := rundir.WriteInfo(a.Out, r.info); err != nil {
		return err
	}
	if err := r.printHeader(); err != nil {
		return err
	}
	stopWatch := rec.watch()
	res, runErr := opt.Run(ctx)
	stopWatch()
	return r.finish(ctx, opt, res, runErr, slices.Max(init.Y))
}

// printHeader prints the line that says what the run does, with the defaults bo fills in, so that the cost of
// Thompson sampling is visible.
func (r *runState) printHeader() error {
	a, cfg := r.a, r.cfg
	d := r.t * r.ck.Params.Config.F
	shown, err := cfg.Resolved(d)
	if err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	scored := "scores from the file"
	if !r.hasScores {
		scored = "scored by the objective"
	}
	decoded, kids := describeProposals(cfg, surrogateInputs(cfg, a))
	fmt.Fprintf(r.s.Stderr, "%s: task %s, %d initial molecules (%s), T=%d (D=%d), model %s (%d parameters, %s, fine-tuned on %s); "+
		"preset %s, variant %s: %d anchors × %d queries from %d candidates each%s (+%d offspring%s), %s sampler, TACS %v, "+
		"trust regions shrink below %g and grow above %g stale; budget %d new calls (%d in all), seed %d, chemistry rules: %s, run directory %s\n",
		a.command(), a.Task, len(r.mols), scored, r.t, d, a.Model, r.ck.Params.NumParams(), r.flow.Engine(), train.BLASName(), a.Preset, a.Variant,
		cfg.Anchors, cfg.Queries, shown.Candidates, decoded, cfg.Offspring, kids, cfg.Sampler, cfg.TACS.Tau > 0,
		shown.NoveltyBand.Resolved().Shrink, shown.NoveltyBand.Resolved().Grow, cfg.Budget, r.total, a.Seed, r.chemRules, a.Out)
	return nil
}

// infoNow returns run.json as of now: r.info (which holds the seconds of the run's earlier legs) with this leg's
// wall and CPU seconds added and the calls paid so far.
func (r *runState) infoNow() rundir.Info {
	info := r.info
	info.Seconds += time.Since(r.start).Seconds()
	info.CPUSeconds += cpuclock.Since(r.cpu0).Seconds()
	info.Calls = r.budget.Calls()
	return info
}

// saveProgress brings run.json's calls and wall time up to date after an iteration's checkpoint, so that a run
// killed without the chance to write it (SIGKILL, a machine taken away) still records what it paid and how long
// it ran.
func (r *runState) saveProgress() error { return rundir.WriteInfo(r.a.Out, r.infoNow()) }

// finish records how the optimiser's run ended in run.json and prints the results; initBest is the best
// initial score.
func (r *runState) finish(ctx context.Context, opt *bo.Optimizer, res bo.Result, runErr error, initBest float64) error {
	r.info = r.infoNow()
	a, info := r.a, &r.info
	info.Finished = res.Status == bo.StatusBudgetSpent || res.Status == bo.StatusConverged
	info.Error = ""
	if a.ask != nil && errors.Is(runErr, objective.ErrAwaitingScores) {
		return a.ask.stop(a.Out, *info)
	}
	if runErr != nil && res.Status != bo.StatusCancelled {
		info.Error = runErr.Error()
	}
	if err := rundir.WriteInfo(a.Out, *info); err != nil {
		return errors.Join(runErr, err)
	}
	if res.Status == bo.StatusCancelled {
		r.warnf("interrupted after %d paid calls (%d for the initial molecules, %d by the optimiser); continue with the same command and -resume",
			r.budget.Calls(), r.initCalls, res.Calls)
		return runErr
	}
	if runErr != nil {
		var rde *bo.RunDirError
		if errors.As(runErr, &rde) {
			// Resuming again would meet the same file.
			return fmt.Errorf("optimize: %w", runErr)
		}
		return fmt.Errorf("optimize: %w (the run directory %s can be resumed with -resume)", runErr, a.Out)
	}
	_, y, smiles := opt.Data()
	status := fmt.Sprintf("%s after %d iterations, %d new molecules evaluated (+%d initial calls)",
		res.Status, res.Iterations, res.Calls, r.initCalls)
	return printResults(ctx, r.s.Stdout, r.canon, a.Out, *info, status, y, smiles, initialNames(r.mols), initBest)
}
