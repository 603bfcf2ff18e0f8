package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/bo/bench"
	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/rundir"
)

// optimizeArgs are the flags of "nfbo optimize".
type optimizeArgs struct {
	Task, Init, Preset, Model, Out string
	ObjectiveCmd, Python, Sampler  string
	Update, Backend                string
	InitCount, Budget, Workers     int
	Candidates, Queries, Anchors   int
	Seed                           uint64
	Resume, Restart, NoTACS        bool
	Method, Setting                string
	Variant, Label                 string
	Offspring, FineTuneEvery       int
	TRInit, AnchorTemp             float64
	AnchorRule                     string
	Timeout                        time.Duration

	// ask, set by "nfbo ask", makes the run an ask/tell run: the objective scores nothing (objective.Deferred),
	// and the run stops when it needs scores not yet told, with the molecules it asked for in the ledger.
	ask *askSession
}

// newOptimizeCmd returns "nfbo optimize", which runs NF-BO on a task from initial molecules and a model.
func newOptimizeCmd() *Command {
	fs := flag.NewFlagSet("optimize", flag.ContinueOnError)
	var a optimizeArgs
	a.addFlags(fs)
	fs.StringVar(&a.Out, "out", "", "run `directory` (required); it receives the evaluation log and checkpoints")
	fs.BoolVar(&a.Resume, "resume", false, "continue the run in -out (same flags) after an interruption")
	fs.BoolVar(&a.Restart, "restart", false, "with -resume, when checkpoint.gob is missing or damaged: start the optimiser again from the "+
		"initial molecules (the damaged files are kept as *.damaged); molecules already in the evaluation log are answered "+
		"from it, not paid again, but the run will differ from an uninterrupted one")
	cmd := &Command{
		UsageLine: "optimize -task NAME -init FILE -model DIR -out DIR [-budget N] [-preset NAME] [-seed N] [-resume] [-objective-cmd CMD]",
		Short:     "find molecules with high scores by NF-BO",
		Long: `Optimize runs NF-BO: Bayesian optimisation in the latent space of the SeqFlow
in -model, starting from the molecules of -init, until -budget objective
calls (distinct new molecules) are spent.

-init is either a CSV file with a header that has a "smiles" or "smile"
column, or a file with one SMILES per line (first whitespace-separated
field). When the CSV also has a column named like the task (GuacaMol's
data/guacamol/guacamol_train_data_first_100.csv has med1, adip, ...), those
scores are used as they are and cost nothing. Otherwise the initial molecules
are scored through the objective first and, as in PMO, count as calls: they
are the first lines of the evaluation log and come out of -budget (so the
pmo preset's default, 1,000 initial + 9,000 calls, is -budget 10000).
-init-count N takes the first N rows (default: the preset's, 100 for
guacamol-500). Molecules that cannot be tokenised with the model's
vocabulary are skipped with a message naming the file and line. The run's
sequence length T is 1 + the longest initial SELFIES (at most the model's
max_seq_len).

-preset picks the paper's setting (guacamol-500: 5 trust regions × 10
proposals, flow fine-tuned every 10 calls; guacamol-10k and pmo: 10 × 100,
every 200); -budget, -anchors, -queries, -candidates, -sampler, -no-tacs and
-update change it. -backend chooses who encodes and decodes: ONNX Runtime
(batched, several times faster; library $NFBO_ORT_LIB or
third_party/onnxruntime/lib/libonnxruntime.so.1) or pure Go.

The objective is the RDKit worker pool (task names: "nfbo tasks") or, with
-objective-cmd, an external program (docs/objective-protocol.md). Molecules
are identified by RDKit canonical SMILES (by their SELFIES-canonical SMILES
when RDKit is missing), and each is paid for once.

The run directory -out holds evaluations.jsonl (one line per paid call,
synced before the optimiser sees the score), checkpoint.gob (state, flow and
surrogate after the last iteration), pending.gob (the batch being
evaluated), config.json and run.json. After an interruption (Ctrl-C, kill -9,
a crash) run the same command with -resume: the run continues from the last
checkpoint, replays the evaluations already paid for from the log, and ends
as an uninterrupted run with the same seed would. Ctrl-C stops the run at the
next safe point; the exit status is then 130.

Everything that can be checked without the objective is checked before the
first call and before -out is made: the flags, the model, the initial
molecules (printable ASCII) and their scores (finite), -budget against the
initial molecules it must pay for, the optimiser's settings and the task
name. A resumed run is checked before it pays: a damaged checkpoint.gob or
pending.gob (both carry a CRC-32C), an evaluation log that holds fewer calls
than run.json or the checkpoint records as paid, and an NF-BO run whose
checkpoint is gone while its log holds calls of the optimiser are refused,
with what to do. -restart then goes on without the damaged or lost state: the
optimiser starts again from the initial molecules (from the checkpoint when
only pending.gob is damaged), the molecules in the log are answered from it
and not paid again, but the run differs from an uninterrupted one.

One line per iteration reports the calls used, the best score, the
trust-region length, the new, duplicate and invalid proposals and the seconds
spent per phase. At the end the best molecules and Top-1/10/100 and AUC
Top-10 (PMO) of the evaluation log are printed.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "optimize: unexpected arguments %q", args)
		}
		switch {
		case a.Out == "":
			return Usagef(cmd, "optimize: -out is required")
		case a.Restart && !a.Resume:
			return Usagef(cmd, "optimize: -restart goes with -resume")
		}
		if err := a.check(cmd, "optimize"); err != nil {
			return err
		}
		preset, err := bo.PresetByName(a.Preset)
		if err != nil {
			return Usagef(cmd, "optimize: %v", err)
		}
		return runOptimize(ctx, cmd, a, preset)
	}
	return cmd
}

// addFlags defines the flags that make a run (all of optimize's but -out, -resume and -restart): optimize and
// ask share them.
func (a *optimizeArgs) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&a.Task, "task", "", "task name or alias (see \"nfbo tasks\"); passed through to -objective-cmd (required)")
	fs.StringVar(&a.Init, "init", "", "initial molecules: a CSV `file` with a smiles (or smile) column, or one SMILES per line (required)")
	fs.IntVar(&a.InitCount, "init-count", 0, "use the first `N` initial molecules; 0 means the preset's count")
	fs.IntVar(&a.Budget, "budget", 0, "objective calls (distinct new molecules); 0 means the preset's")
	fs.StringVar(&a.Preset, "preset", "guacamol-500", "optimiser setting: guacamol-500, guacamol-10k or pmo")
	fs.StringVar(&a.Model, "model", "", "model directory or checkpoint `file` (required)")
	fs.Uint64Var(&a.Seed, "seed", 1, "random seed; a run is reproducible given seed, data, model and flags")
	fs.StringVar(&a.ObjectiveCmd, "objective-cmd", "", "external objective program speaking docs/objective-protocol.md, "+
		"e.g. \"python3 oracle.py\" (split at spaces, no shell)")
	fs.IntVar(&a.Workers, "workers", 1, "objective worker processes")
	fs.StringVar(&a.Python, "python", objective.DefaultPython, "Python interpreter that can import RDKit")
	fs.DurationVar(&a.Timeout, "timeout", 5*time.Minute, "longest one request to an objective worker may take")
	fs.StringVar(&a.Sampler, "sampler", "exact", "Thompson sampler: exact (Cholesky, the reference) or pathwise (approximate, faster)")
	fs.StringVar(&a.Method, "method", "nfbo", "optimiser: nfbo, or a baseline in the same harness: prior (random samples from the flow's prior) "+
		"or ga (a genetic algorithm on SELFIES symbols)")
	fs.StringVar(&a.Setting, "setting", "", "the setting the report files this run under; empty means INITIAL+CALLS, e.g. 100+500 "+
		"(bench passes 100+500 for guacamol7's valt, whose initial set holds two added molecules)")
	fs.StringVar(&a.Variant, "variant", bo.DefaultVariant, "NF-BO's rules: screened (decode first; an exact GP on token counts, refitted every iteration, "+
		"picks among decoded candidates and GA offspring) or reference (the official code's rules)")
	fs.IntVar(&a.Offspring, "offspring", 0, "screened variant: GA children of the best molecules added to each trust region's candidates; "+
		"0 means the variant's default, -1 none")
	fs.IntVar(&a.FineTuneEvery, "finetune-every", 0, "fine-tune the flow every `N` new calls; 0 means the preset's (10 for guacamol-500), -1 never")
	fs.Float64Var(&a.TRInit, "tr-init", 0, "initial trust-region length; 0 means 0.8, the reference's")
	fs.StringVar(&a.AnchorRule, "anchor-rule", "minmax", "how anchors are drawn: minmax (the official code's softmax of min-max scaled scores) or raw (the paper's softmax of the scores)")
	fs.Float64Var(&a.AnchorTemp, "anchor-temp", 0, "the anchors' softmax temperature; 0 means the rule's (0.01 for minmax, 0.1 for raw), -1 greedy (the best points)")
	fs.StringVar(&a.Label, "label", "", "the method's name in run.json and reports (bench's -variant sets it); empty means derived from -method, -variant and -no-tacs")
	fs.BoolVar(&a.NoTACS, "no-tacs", false, "perturb every latent dimension with probability 0.1 instead of TACS")
	fs.StringVar(&a.Update, "update", "once", "surrogate training: once (before the loop, the reference code) or every (each iteration, the paper)")
	fs.StringVar(&a.Backend, "backend", "auto", "who runs the flow: auto (ONNX Runtime when its library is found, else pure Go), go or ort")
	fs.IntVar(&a.Candidates, "candidates", 0, "candidates per trust region; 0 means 1000 with -variant screened, min(50000, max(2000, 200·D))/anchors with reference")
	fs.IntVar(&a.Anchors, "anchors", 0, "trust regions per iteration; 0 means the preset's")
	fs.IntVar(&a.Queries, "queries", 0, "Thompson-sampled proposals per trust region; 0 means the preset's")
}

// check checks the flags of a run (addFlags) for the command name.
func (a optimizeArgs) check(cmd *Command, name string) error {
	switch {
	case a.Task == "":
		return Usagef(cmd, "%s: -task is required", name)
	case a.Init == "":
		return Usagef(cmd, "%s: -init is required", name)
	case a.Model == "":
		return Usagef(cmd, "%s: -model is required", name)
	case a.Timeout <= 0:
		return Usagef(cmd, "%s: -timeout must be positive, not %v (a hung worker would block the run for ever)", name, a.Timeout)
	case a.Workers < 1:
		return Usagef(cmd, "%s: -workers must be at least 1, not %d", name, a.Workers)
	case a.Budget < 0 || a.InitCount < 0 || a.Candidates < 0 || a.Anchors < 0 || a.Queries < 0:
		return Usagef(cmd, "%s: -budget, -init-count, -candidates, -anchors and -queries must not be negative", name)
	case a.Sampler != "exact" && a.Sampler != "pathwise":
		return Usagef(cmd, "%s: -sampler %q: want exact or pathwise", name, a.Sampler)
	case a.Update != "once" && a.Update != "every":
		return Usagef(cmd, "%s: -update %q: want once or every", name, a.Update)
	case a.Method != "nfbo" && a.Method != "prior" && a.Method != "ga":
		return Usagef(cmd, "%s: -method %q: want nfbo, prior or ga", name, a.Method)
	case a.AnchorRule != "minmax" && a.AnchorRule != "raw":
		return Usagef(cmd, "%s: -anchor-rule %q: want minmax or raw", name, a.AnchorRule)
	case a.AnchorTemp < 0 && a.AnchorTemp != -1:
		return Usagef(cmd, "%s: -anchor-temp must be positive, 0 (the rule's) or -1 (greedy)", name)
	case a.Offspring < -1 || a.FineTuneEvery < -1 || a.TRInit < 0:
		return Usagef(cmd, "%s: -offspring and -finetune-every must be -1 or more, and -tr-init not negative", name)
	case a.Backend != "auto" && a.Backend != "go" && a.Backend != "ort":
		return Usagef(cmd, "%s: -backend %q: want auto, go or ort", name, a.Backend)
	}
	return nil
}

// initMol is one initial molecule after canonicalisation.
type initMol struct {
	line  int    // 1-based line in the init file
	key   string // the codec's key (SMILES of the canonical SELFIES)
	ids   []int  // canonical ids, padded to the model's MaxT
	n     int    // number of symbols
	score float64
}

func runOptimize(ctx context.Context, cmd *Command, a optimizeArgs, preset bo.Preset) error {
	start := time.Now()
	warnf := func(format string, args ...any) { fmt.Fprintf(cmd.Stderr, "nfbo optimize: "+format+"\n", args...) }
	count := a.InitCount
	if count == 0 {
		count = preset.InitialPoints
	}

	// Everything that can be checked without the objective is checked before the first call, and before the
	// run directory is touched: the model, the initial molecules and their scores, the budget against them, the
	// optimiser's settings, and the objective's task names; then, under the lock, the run directory's state.
	ck, err := model.LoadModelDir(a.Model)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("optimize: vocabulary of %s: %w", a.Model, err)
	}
	rows, hasScores, err := readInit(a.Init, a.Task, count)
	if err != nil {
		return err
	}
	mols, t, err := canonicalInit(cmd.Stderr, a.Init, rows, voc, ck.Params.Config.MaxT)
	if err != nil {
		return err
	}
	// total counts every paid call. Initial molecules without scores are paid for, so the preset's setting
	// (pmo: 1,000 initial + 9,000 calls) is 10,000 calls in all, PMO's budget.
	paidInit := 0
	if !hasScores {
		paidInit = len(mols)
	}
	total := a.Budget
	if total == 0 {
		total = paidInit + preset.Config.Budget
	}
	if total <= paidInit {
		return Usagef(cmd, "optimize: -budget %d leaves no call for the optimiser: the %d initial molecules of %s have no %s scores, "+
			"so they are scored first and count as calls (PMO's accounting); give -budget %d for %d new calls, or fewer molecules "+
			"with -init-count", total, paidInit, a.Init, a.Task, paidInit+preset.Config.Budget, preset.Config.Budget)
	}
	cfg, err := a.optimizerConfig(preset)
	if err != nil {
		return Usagef(cmd, "optimize: %v", err)
	}
	// The initial molecules pay for at most paidInit calls (fewer when some are invalid for the objective or
	// one molecule for it), so the optimiser gets at least total-paidInit.
	cfg.Budget = total - paidInit
	if a.Method == "nfbo" {
		if err := cfg.Check(len(mols), t*ck.Params.Config.F); err != nil {
			return Usagef(cmd, "optimize: %v (from the %d initial molecules of %s; lower -anchors, or give more molecules)",
				err, len(mols), a.Init)
		}
	}
	flow, err := seqflow.New(ck, t, seqflow.Options{Backend: a.Backend, Warn: cmd.Stderr})
	if err != nil {
		return fmt.Errorf("optimize: model %s: %w", a.Model, err)
	}
	defer flow.Close()
	codec, err := molseq.New(voc, t)
	if err != nil {
		return err
	}
	obj, canon, closeObj, err := openObjective(ctx, cmd, a, warnf)
	if err != nil {
		return err
	}
	defer closeObj()

	setting := a.Setting
	if setting == "" {
		setting = bench.Setting(len(mols), total-paidInit)
	}
	want := rundir.Info{Setting: setting, Task: a.Task, Method: a.methodLabel(), Seed: int(a.Seed), Budget: total,
		Objective: a.objectiveID()}
	info, err := rundir.Open(a.Out, want, a.Resume, bench.Setting(count, total-paidInit), warnf)
	if err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	if a.ask == nil || !a.ask.locked {
		unlock, err := rundir.Lock(a.Out)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if a.Resume {
		if err := checkResume(a, info, paidInit, warnf); err != nil {
			return err
		}
	}
	// run.json marks the directory as a run before anything else is written to it, so that a run killed at any
	// moment can be resumed; args.json keeps the flags, so that ask, tell and serve need only the directory.
	if err := rundir.WriteInfo(a.Out, info); err != nil {
		return err
	}
	if err := writeArgs(a); err != nil {
		return err
	}
	budget, err := objective.OpenBudget(filepath.Join(a.Out, rundir.EvalLogFile), obj, canon,
		objective.BudgetOptions{Limit: total, Task: a.Task, Warnf: warnf})
	if err != nil {
		return err
	}
	defer budget.Close()

	// Initial molecules without scores are paid for first (PMO's accounting); after a resume they replay.
	initCalls := 0
	if !hasScores {
		keys := make([]string, len(mols))
		for i, m := range mols {
			keys[i] = m.key
		}
		evs, err := budget.Evaluate(ctx, keys)
		if err != nil {
			if a.ask != nil && errors.Is(err, objective.ErrAwaitingScores) {
				info.Calls = budget.Calls()
				info.Seconds += time.Since(start).Seconds()
				return a.ask.stop(a.Out, info)
			}
			if ctx.Err() != nil {
				info.Calls = budget.Calls()
				info.Seconds += time.Since(start).Seconds()
				warnf("interrupted while scoring the initial molecules, after %d paid calls; continue with the same command and -resume",
					budget.Calls())
				if err := rundir.WriteInfo(a.Out, info); err != nil {
					return errors.Join(ctx.Err(), err)
				}
				return ctx.Err()
			}
			return fmt.Errorf("optimize: scoring the %d initial molecules of %s (budget %d): %w", len(mols), a.Init, total, err)
		}
		calls := map[int]bool{}
		for i, e := range evs {
			mols[i].score = e.Score
			if e.Call > 0 {
				calls[e.Call] = true
			}
		}
		initCalls = len(calls)
	}
	cfg.Budget = total - initCalls
	cfg.RunDir = a.Out
	info.Initial = len(mols)
	info.InitialCalls = initCalls
	info.Calls = budget.Calls()
	if a.Method != "nfbo" {
		return runBaseline(ctx, cmd, baselineRun{args: a, info: info, start: start, budget: budget, initCalls: initCalls,
			mols: mols, voc: voc, flow: flow, t: t, calls: cfg.Budget, hasScores: hasScores,
			offspring: cfg.Anchors * cfg.Queries})
	}
	init := bo.Initial{Tokens: make([]int, 0, len(mols)*t)}
	for _, m := range mols {
		init.Tokens = append(init.Tokens, m.ids[:t]...)
		init.Y = append(init.Y, m.score)
		init.SMILES = append(init.SMILES, m.key)
	}
	rec := &progressPrinter{w: cmd.Stdout}
	opt, err := bo.NewOptimizer(cfg, bo.Problem{Flow: flow, Codec: codec, Objective: budgetObjective{budget, initCalls}, Initial: init,
		Vocab: voc.Len(), Stop: vocab.Stop, Alphabet: mutationAlphabet(voc)},
		rand.NewPCG(a.Seed, 0x6e66626f), rec)
	if err != nil {
		return fmt.Errorf("optimize: %w", err)
	}

	info.InitialScores = nil
	if hasScores {
		info.InitialScores = init.Y
	}
	if err := rundir.WriteInfo(a.Out, info); err != nil {
		return err
	}
	d := t * ck.Params.Config.F
	shown, err := cfg.Resolved(d) // the defaults bo fills in, shown so that the cost of Thompson sampling is visible
	if err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	cand := shown.Candidates
	scored := "scores from the file"
	if !hasScores {
		scored = "scored by the objective"
	}
	fmt.Fprintf(cmd.Stderr, "nfbo optimize: task %s, %d initial molecules (%s), T=%d (D=%d), model %s (%d parameters, %s, fine-tuned on %s); "+
		"preset %s, variant %s: %d anchors × %d queries from %d candidates each (+%d offspring), %s sampler, TACS %v; budget %d new calls (%d in all), "+
		"seed %d, run directory %s\n",
		a.Task, len(mols), scored, t, d, a.Model, ck.Params.NumParams(), flow.Backend(), train.BLAS, a.Preset, a.Variant, cfg.Anchors, cfg.Queries, cand, cfg.Offspring,
		cfg.Sampler, cfg.TACS.Tau > 0, cfg.Budget, total, a.Seed, a.Out)

	res, runErr := opt.Run(ctx)
	info.Seconds += time.Since(start).Seconds()
	info.Finished = res.Status == bo.StatusBudgetSpent || res.Status == bo.StatusConverged
	info.Calls = budget.Calls()
	info.Error = ""
	if a.ask != nil && errors.Is(runErr, objective.ErrAwaitingScores) {
		return a.ask.stop(a.Out, info)
	}
	if runErr != nil && res.Status != bo.StatusCancelled {
		info.Error = runErr.Error()
	}
	if err := rundir.WriteInfo(a.Out, info); err != nil {
		return errors.Join(runErr, err)
	}
	if res.Status == bo.StatusCancelled {
		warnf("interrupted after %d paid calls (%d for the initial molecules, %d by the optimiser); continue with the same command and -resume",
			budget.Calls(), initCalls, res.Calls)
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
		res.Status, res.Iterations, res.Calls, initCalls)
	return printResults(cmd.Stdout, a.Out, status, y, smiles, slices.Max(init.Y))
}

// optimizerConfig returns the preset's configuration with the flags' changes and the variant's rules; Budget and
// RunDir are left to the caller.
func (a optimizeArgs) optimizerConfig(preset bo.Preset) (bo.Config, error) {
	cfg := preset.Config
	if a.Candidates > 0 {
		cfg.Candidates = a.Candidates
	}
	if a.Anchors > 0 {
		cfg.Anchors = a.Anchors
	}
	if a.Queries > 0 {
		cfg.Queries = a.Queries
	}
	if a.Sampler == "pathwise" {
		cfg.Sampler = bo.SamplerPathwise
	}
	if a.NoTACS {
		cfg.TACS.Tau = 0
	}
	if a.Update == "every" {
		cfg.Update = bo.UpdateEveryIteration
	}
	cfg.TRInit = a.TRInit
	rule, err := bo.ParseAnchorRule(a.AnchorRule)
	if err != nil {
		return cfg, err
	}
	cfg.AnchorRule, cfg.Temperature = rule, a.AnchorTemp
	if a.FineTuneEvery != 0 {
		cfg.TrainEvery = a.FineTuneEvery
	}
	cfg, err = cfg.WithVariant(a.Variant)
	if err != nil {
		return cfg, err
	}
	switch {
	case a.Offspring > 0 && cfg.Screen != bo.ScreenTokens:
		return cfg, errors.New("-offspring needs -variant screened")
	case a.Offspring > 0:
		cfg.Offspring = a.Offspring
	case a.Offspring == -1:
		cfg.Offspring = 0
	}
	return cfg, nil
}

// objectiveID is the run's objective as run.json records it.
func (a optimizeArgs) objectiveID() string {
	if a.ask != nil {
		return rundir.ObjectiveTell
	}
	if a.ObjectiveCmd != "" {
		return rundir.ObjectiveCommand(a.ObjectiveCmd)
	}
	return rundir.ObjectiveRDKit
}

// methodLabel names the run's method in run.json and reports.
func (a optimizeArgs) methodLabel() string {
	if a.Label != "" {
		return a.Label
	}
	m := a.Method
	if m == "nfbo" && a.Variant != "" && a.Variant != bo.DefaultVariant {
		m += "-" + a.Variant
	}
	if m != "ga" && m != "prior" && a.NoTACS {
		m += "-no-tacs"
	}
	return m
}

// mutationAlphabet returns the token ids of the semantic-robust SELFIES alphabet that are in voc: the symbols
// the GA and the screened variant's offspring may write.
func mutationAlphabet(voc *vocab.Vocab) []int {
	var ids []int
	for _, s := range selfies.SemanticRobustAlphabet(selfies.DefaultConstraints()) {
		if id, ok := voc.ID(s); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// openObjective returns the objective and the canonicaliser of the budget, and a function that stops their
// worker processes.
func openObjective(ctx context.Context, cmd *Command, a optimizeArgs, warnf func(string, ...any)) (objective.Objective, objective.Canonicalizer, func(), error) {
	stderr := &lockedWriter{w: cmd.Stderr}
	popts := objective.PoolOptions{Workers: a.Workers, Timeout: a.Timeout, Stderr: stderr, Warnf: warnf}
	ropts := objective.RDKitOptions{PoolOptions: popts, Python: a.Python}
	if a.ask != nil {
		return openDeferred(ctx, a, warnf)
	}
	if a.ObjectiveCmd == "" {
		pool, err := objective.NewRDKit(ropts)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := checkTasks(ctx, cmd, pool, []string{a.Task}); err != nil {
			pool.Close()
			return nil, nil, nil, err
		}
		return pool.Objective(a.Task), pool, func() { pool.Close() }, nil
	}
	argv := objective.SplitCommand(a.ObjectiveCmd)
	if len(argv) == 0 {
		return nil, nil, nil, Usagef(cmd, "optimize: -objective-cmd is empty")
	}
	pool, err := objective.NewCommand(argv, popts)
	if err != nil {
		return nil, nil, nil, err
	}
	// Molecules are identified by RDKit canonical SMILES when RDKit is there, as with the RDKit objective.
	ropts.Workers = 1
	rd, err := objective.NewRDKit(ropts)
	if err == nil {
		err = rd.Start(ctx)
	}
	switch {
	case err == nil:
		return pool.Objective(a.Task), rd, func() { pool.Close(); rd.Close() }, nil
	case errors.Is(err, objective.ErrRDKitMissing):
		if rd != nil {
			rd.Close()
		}
		warnf("RDKit is missing: molecules are identified by their SELFIES-canonical SMILES")
		return pool.Objective(a.Task), keyCanonicalizer{}, func() { pool.Close() }, nil
	default:
		pool.Close()
		if rd != nil {
			rd.Close()
		}
		return nil, nil, nil, err
	}
}

// progressPrinter prints one line per iteration.
type progressPrinter struct{ w io.Writer }

// Record implements bo.Recorder.
func (p *progressPrinter) Record(g bo.Progress) error {
	t := g.Times
	s := func(d time.Duration) float64 { return d.Seconds() }
	line := fmt.Sprintf("iter %d calls %d/%d best %.4f tr %.3g new %d dup %d invalid %d",
		g.Iteration, g.Calls, g.Budget, g.Best, g.TRLength, g.New, g.Duplicate, g.Invalid)
	if g.Replayed > 0 {
		line += fmt.Sprintf(" (cached %d)", g.Replayed)
	}
	if !math.IsNaN(g.FitRank) {
		line += fmt.Sprintf(" rho %.2f", g.FitRank)
	}
	if g.FromFlow >= 0 {
		line += fmt.Sprintf(" flow %d ga %d", g.FromFlow, g.New-g.FromFlow)
	}
	line += fmt.Sprintf(" | s: encode %.2f tacs %.2f cand %.2f ts %.2f decode %.2f obj %.2f finetune %.2f surr %.2f ckpt %.2f total %.2f",
		s(t.Encode), s(t.TACS), s(t.Candidates), s(t.Thompson), s(t.Decode), s(t.Objective), s(t.FineTune),
		s(t.Surrogate), s(t.Checkpoint), s(t.Total()))
	_, err := fmt.Fprintln(p.w, line)
	return err
}

// printResults prints the best molecules of the run (scores y of molecules smiles) and the figures of the
// evaluation log.
// initBest is the best initial score, against which the gain is reported.
func printResults(w io.Writer, dir, status string, y []float64, smiles []string, initBest float64) error {
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	fmt.Fprintf(w, "status: %s\n", status)
	fmt.Fprintln(w, "best molecules (score, SMILES):")
	for _, i := range idx[:min(10, len(idx))] {
		fmt.Fprintf(w, "  %.6f  %s\n", y[i], smiles[i])
	}
	run, err := bench.LoadRun(dir)
	if err != nil {
		return fmt.Errorf("optimize: read back %s: %w", dir, err)
	}
	f := run.Figures()
	fmt.Fprintf(w, "Top-1 %.4f  Top-10 %.4f  Top-100 %.4f  AUC Top-10 %.4f  (%d calls in %s)\n",
		f.Top[0], f.Top[1], f.Top[2], f.AUC[1], f.Calls, filepath.Join(dir, rundir.EvalLogFile))
	if len(idx) > 0 {
		best := y[idx[0]]
		verdict := "no molecule better than the best initial one was found"
		if best > initBest {
			verdict = fmt.Sprintf("%+.4f over the best initial molecule", best-initBest)
		}
		fmt.Fprintf(w, "best initial molecule %.4f, best found %.4f: %s\n", initBest, best, verdict)
	}
	return nil
}

// readInit reads the first count molecules of an init file (through gzip when its name ends in ".gz"): a CSV
// with a smiles/smile column (and the task's scores when it has a column named like the task), or one SMILES per
// line. See parseInit.
func readInit(path, task string, count int) (rows []initRow, hasScores bool, err error) {
	r, closeInit, err := openMaybeGzip(path)
	if err != nil {
		return nil, false, fmt.Errorf("optimize: -init: %w", err)
	}
	defer closeInit()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("optimize: -init: read %s: %w", path, err)
	}
	return parseInit(path, b, task, count)
}

// parseInit reads the first count molecules of the init file path, whose bytes are data. A SMILES that holds a
// byte that is not printable ASCII (another encoding, a binary file) is an error naming the line and the byte's
// offset, as is a task score that is not a finite number; both are found before anything is paid.
func parseInit(path string, data []byte, task string, count int) (rows []initRow, hasScores bool, err error) {
	text := strings.TrimPrefix(string(data), "\ufeff") // the byte order mark some editors write
	first, _, _ := strings.Cut(text, "\n")
	if strings.Contains(first, ",") {
		return readInitCSV(path, text, task, count)
	}
	for i, line := range strings.Split(text, "\n") {
		if len(rows) == count {
			break
		}
		f, _ := firstField(line)
		if f == "" || strings.HasPrefix(f, "#") || (i == 0 && strings.EqualFold(f, "smiles")) {
			continue
		}
		if err := smiles.CheckText(f); err != nil {
			return nil, false, fmt.Errorf("optimize: %s:%d: %w", path, i+1, err)
		}
		rows = append(rows, initRow{line: i + 1, smiles: f})
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("optimize: %s: no molecules", path)
	}
	return rows, false, nil
}
