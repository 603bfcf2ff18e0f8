// Package optimize runs nfbo on a task: it reads the model and the initial molecules, opens the objective and
// the run directory, and runs the optimiser (NF-BO, or a baseline in the same harness) to its budget, resumably;
// or, for ask/tell, until it needs scores that have not been told. The CLI's optimize, ask and serve are flags
// around Run and Ask.
package optimize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/objective/metrics"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/queue"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/rundir"
)

// Streams are where a run writes: progress lines and results to Stdout, messages to Stderr.
type Streams struct {
	Stdout, Stderr io.Writer
}

// ArgError is a setting that cannot work (a flag out of range, a budget that leaves no call, too few initial
// molecules for the anchors): the CLI exits 2 with it.
type ArgError struct{ Err error }

// Error returns the problem.
func (e *ArgError) Error() string { return e.Err.Error() }

// Unwrap returns the problem.
func (e *ArgError) Unwrap() error { return e.Err }

func argErrorf(format string, args ...any) error { return &ArgError{fmt.Errorf(format, args...)} }

// Args are the settings of a run: the flags of "nfbo optimize" and "nfbo ask" (args.json keeps them, one flat
// object), in three parts: the run's (RunArgs), the objective's (ObjectiveArgs) and the optimiser's
// (OptimiserArgs). AddFlags defines them on a FlagSet.
type Args struct {
	RunArgs
	ObjectiveArgs
	OptimiserArgs

	// ask, set by "nfbo ask", makes the run an ask/tell run: the objective scores nothing (objective.Deferred),
	// and the run stops when it needs scores not yet told, with the molecules it asked for in the ledger.
	ask *askSession
}

// RunArgs say what a run starts from, where it goes, and how it is filed.
type RunArgs struct {
	Init, Model, Out string
	// ScoreColumn names the column (or SDF data item) of -init that holds the initial scores; "" means the
	// column named like the task.
	ScoreColumn string `json:",omitempty"`
	InitCount   int
	Budget      int
	Seed        uint64
	Resume      bool
	Restart     bool
	Backend     string
	// Label names the method in run.json and reports; Setting files the run under a setting (both set by nfbo
	// bench).
	Label, Setting string
}

// ObjectiveArgs say what scores the molecules and how it is run.
type ObjectiveArgs struct {
	Task, ObjectiveCmd, Python string
	Workers                    int
	Timeout                    time.Duration
	// Minimize makes lower scores better (a docking energy): the optimiser maximises −score.
	Minimize bool `json:",omitempty"`
	// RequestSize is the most molecules in one request to an objective worker (-request-size). args.json files
	// written before it lack it (0): ask and serve take it from their flags, as they take Workers.
	RequestSize int
	// Queue is the NATS server (-queue URL, without credentials) whose workers score the molecules ("nfbo
	// worker"); empty means the objective runs here.
	Queue string `json:",omitempty"`
	// QueueCredentials are those of the NATS server; never written to args.json.
	QueueCredentials queue.Credentials `json:"-"`
	// QueueWait is how long to wait for the NATS server when none answers at the start (-connect-wait,
	// queue.ConnectWaiting); never written to args.json.
	QueueWait time.Duration `json:"-"`
}

// OptimiserArgs say how molecules are proposed: the method, the preset, the variant and the settings that change
// the preset's, each variant's own in its part (ReferenceArgs, ScreenedArgs, optimize/variants.go).
type OptimiserArgs struct {
	Method, Preset, Variant      string
	Candidates, Queries, Anchors int
	NoTACS                       bool
	// FreezeEmbed keeps the flow's token embeddings fixed while it is fine-tuned; nil means the variant's
	// choice (Args.FrozenEmbeddings).
	FreezeEmbed   *bool `json:",omitempty"`
	FineTuneEvery int
	// FineTuneTop is how many of the best molecules the flow is fine-tuned on, beside the newest
	// (bo.Config.TopK); 0 keeps the preset's (bo.ScreenedPreset.TopK, else 1,000).
	FineTuneTop        int `json:",omitempty"`
	TRInit, AnchorTemp float64
	// TRNovelty is the novelty rule's band on the stale fraction of the candidates, "SHRINK,GROW" (bo.NoveltyBand);
	// "" means the reference's 0.8,0.95.
	TRNovelty  string `json:",omitempty"`
	AnchorRule string
	// Rules names the chemistry rules (chem/rules.Load: "default", "none" or a JSON file); "" means default.
	Rules string `json:",omitempty"`
	// DistinctScores, when set, draws anchors and GA parents one per distinct score, or not
	// (bo.Config.DistinctScores); nil keeps the preset's.
	DistinctScores *bool `json:",omitempty"`
	// Ties names the rule for points of equal score under DistinctScores (bo.ParseTieRule: first or draw;
	// bo.Config.Ties); "" keeps the preset's.
	Ties string `json:",omitempty"`
	// Crossover is how GA children start from two parents, those of -method ga and the screened variant's:
	// "selfies" (one-point crossover of the symbols), "graph" (chem/graphga: fragments of the two molecules
	// joined; bo.ScreenedSettings.GraphCrossover) or, for -method ga only, "graph+rings" (half of them ring
	// crossovers where both parents have a ring to cut); "" means the method's default: the preset's for NF-BO
	// (graph with guacamol-500 and pmo), selfies for -method ga (our GA of the tables).
	Crossover string `json:",omitempty"`
	// Mutation is how GA children mutate, those of -method ga and the screened variant's: "selfies" (one symbol
	// replaced, inserted or deleted) or "graph" (chem/graphga: an atom or bond inserted, deleted or changed, or a
	// ring closed; bo.ScreenedSettings.GraphMutation), which may be followed by "+fused" (ring closures onto the
	// molecule's rings too; bo.ScreenedSettings.FusedRings) and, for the screened variant only, "+selfies:P" (a
	// share P of the children mutated as symbols; bo.ScreenedSettings.SymbolMutations) (parseMutation); "" means
	// the method's default: the preset's for NF-BO (graph with guacamol-500 and pmo), selfies for -method ga (our GA
	// of the tables).
	Mutation string `json:",omitempty"`
	ReferenceArgs
	ScreenedArgs
}

// crossoverGraph reads a -crossover name that crossoverKnown accepts: whether GA children cross as molecular
// graphs, and whether ring crossovers are among them.
func crossoverGraph(name string) (graph, rings bool) {
	return name == "graph" || name == "graph+rings", name == "graph+rings"
}

// mutation is a -mutation value read: how GA children mutate.
type mutation struct {
	graph   bool    // as molecular graphs (chem/graphga), not as SELFIES symbols
	fused   bool    // ring closures fused to the molecule's rings too ("+fused"; chem/graphga.Mutator.Fuse)
	symbols float64 // the share of the children mutated as symbols instead ("+selfies:P"; NF-BO's only)
}

// parseMutation reads a -mutation value: "" (the method's default) or selfies, or graph followed by any of
// +fused and +selfies:P (0 < P < 1), each at most once; ok is false for anything else.
func parseMutation(name string) (m mutation, ok bool) {
	switch name {
	case "", "selfies":
		return mutation{}, true
	}
	parts := strings.Split(name, "+")
	if parts[0] != "graph" {
		return mutation{}, false
	}
	m.graph = true
	for _, p := range parts[1:] {
		switch share, found := strings.CutPrefix(p, "selfies:"); {
		case p == "fused" && !m.fused:
			m.fused = true
		case found && m.symbols == 0:
			v, err := strconv.ParseFloat(share, 64)
			if err != nil || !(v > 0 && v < 1) {
				return mutation{}, false
			}
			m.symbols = v
		default:
			return mutation{}, false
		}
	}
	return m, true
}

// crossoverKnown reports whether name is a -crossover value: "" (the method's default), selfies, graph or
// graph+rings.
func crossoverKnown(name string) bool {
	return name == "" || name == "selfies" || name == "graph" || name == "graph+rings"
}

// Check checks the settings that need neither the model nor the data; a bad one is an *ArgError.
func (a Args) Check() error {
	switch {
	case a.Task == "":
		return argErrorf("-task is required")
	case a.Init == "":
		return argErrorf("-init is required")
	case a.Model == "":
		return argErrorf("-model is required")
	case a.Timeout <= 0:
		return argErrorf("-timeout must be positive, not %v (a hung worker would block the run for ever)", a.Timeout)
	case a.Workers < 1:
		return argErrorf("-workers must be at least 1, not %d", a.Workers)
	case a.RequestSize < 1:
		return argErrorf("-request-size must be at least 1, not %d", a.RequestSize)
	case a.Budget < 0 || a.InitCount < 0 || a.Candidates < 0 || a.Anchors < 0 || a.Queries < 0:
		return argErrorf("-budget, -init-count, -candidates, -anchors and -queries must not be negative")
	case a.Method != "nfbo" && a.Method != "prior" && a.Method != "ga" && a.Method != "graph-ga":
		return argErrorf("-method %q: want nfbo, prior, ga or graph-ga", a.Method)
	case a.AnchorRule != "minmax" && a.AnchorRule != "raw":
		return argErrorf("-anchor-rule %q: want minmax or raw", a.AnchorRule)
	case a.AnchorTemp < 0 && a.AnchorTemp != -1:
		return argErrorf("-anchor-temp must be positive, 0 (the rule's) or -1 (greedy)")
	case a.TRNovelty != "" && parseBand(a.TRNovelty) == nil:
		return argErrorf("-tr-novelty %q: want SHRINK,GROW, two stale fractions with 0 ≤ SHRINK < GROW ≤ 1, e.g. 0.4,0.6", a.TRNovelty)
	case a.FineTuneEvery < -1 || a.TRInit < 0:
		return argErrorf("-finetune-every must be -1 or more, and -tr-init not negative")
	case a.FineTuneTop < 0:
		return argErrorf("-finetune-top must not be negative, not %d", a.FineTuneTop)
	case seqflow.CheckBackend(a.Backend) != nil:
		return argErrorf("-%v", seqflow.CheckBackend(a.Backend))
	case !crossoverKnown(a.Crossover):
		return argErrorf("-crossover %q: want selfies, graph or graph+rings", a.Crossover)
	}
	switch m, ok := parseMutation(a.Mutation); {
	case !ok:
		return argErrorf("-mutation %q: want selfies, or graph with any of +fused and +selfies:P (0 < P < 1), e.g. graph+fused+selfies:0.1", a.Mutation)
	case a.Method != "nfbo" && m.symbols > 0:
		return argErrorf("-mutation %s: +selfies:P is NF-BO's (the screened variant's GA children); -method %s takes selfies, graph or graph+fused", a.Mutation, a.Method)
	}
	if err := a.ReferenceArgs.check(); err != nil {
		return err
	}
	return a.ScreenedArgs.check()
}

// Run makes or resumes (a.Resume) the run in a.Out and runs it until its budget is spent, ctx is done or it
// fails, writing its progress and results to s. A setting that cannot work is an *ArgError.
func Run(ctx context.Context, s Streams, a Args) error {
	if err := a.Check(); err != nil {
		return err
	}
	preset, err := bo.PresetByName(a.Preset)
	if err != nil {
		return &ArgError{err}
	}
	return run(ctx, s, a, preset)
}

// Config returns the preset's configuration with the variant's rules and then the flags' changes; Budget and
// RunDir are left to the caller.
func (a Args) Config(preset bo.Preset) (bo.Config, error) {
	cfg, err := preset.VariantConfig(a.Variant)
	if err != nil {
		return cfg, err
	}
	if a.Candidates > 0 {
		cfg.Candidates = a.Candidates
	}
	if a.Anchors > 0 {
		cfg.Anchors = a.Anchors
	}
	if a.Queries > 0 {
		cfg.Queries = a.Queries
	}
	if a.NoTACS {
		cfg.TACS.Tau = 0
	}
	cfg.TRInit = a.TRInit
	if b := parseBand(a.TRNovelty); b != nil {
		cfg.NoveltyBand = *b
	}
	rule, err := bo.ParseAnchorRule(a.AnchorRule)
	if err != nil {
		return cfg, err
	}
	cfg.AnchorRule, cfg.Temperature = rule, a.AnchorTemp
	if a.DistinctScores != nil {
		cfg.DistinctScores = *a.DistinctScores
		if !cfg.DistinctScores {
			cfg.Ties = bo.TiesFirst // the preset's tie rule goes with its one point per score (-ties may still name one)
		}
	}
	if a.Ties != "" {
		if cfg.Ties, err = bo.ParseTieRule(a.Ties); err != nil {
			return cfg, err
		}
	}
	if a.FineTuneEvery != 0 {
		cfg.TrainEvery = a.FineTuneEvery
	}
	if a.FineTuneTop > 0 {
		cfg.TopK = a.FineTuneTop
	}
	if err := a.ReferenceArgs.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := a.ScreenedArgs.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := a.applyChildren(&cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// objectiveID is the run's objective as run.json records it.
func (a Args) objectiveID() string {
	if a.ask != nil {
		return rundir.ObjectiveTell
	}
	if a.ObjectiveCmd != "" {
		return rundir.ObjectiveCommand(a.ObjectiveCmd)
	}
	return rundir.ObjectiveRDKit
}

// methodLabel names the run's method in run.json and reports.
func (a Args) methodLabel() string {
	if a.Label != "" {
		return a.Label
	}
	m := a.Method
	if m == "nfbo" && a.Variant != "" && a.Variant != bo.DefaultVariant {
		m += "-" + a.Variant
	}
	if a.Method == "nfbo" && a.NoTACS { // the baselines have neither TACS nor a flow to drop
		m += "-no-tacs"
	}
	if a.Method == "nfbo" && a.NoFlow {
		m += "-no-flow"
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
func openObjective(ctx context.Context, s Streams, a Args, warnf func(string, ...any)) (objective.Objective, objective.Canonicalizer, func(), error) {
	stderr := &objective.LockedWriter{W: s.Stderr}
	popts := objective.PoolOptions{Workers: a.Workers, Timeout: a.Timeout, ChunkSize: a.RequestSize, Stderr: stderr, Warnf: warnf}
	ropts := objective.RDKitOptions{PoolOptions: popts, Python: a.Python}
	if a.ask != nil {
		return openDeferred(ctx, a, warnf)
	}
	if a.Queue != "" {
		q, canon, closeQ, err := openQueue(ctx, a, ropts, a.ObjectiveCmd == "", warnf)
		if err != nil {
			return nil, nil, nil, err
		}
		return q, canon, closeQ, nil
	}
	if a.ObjectiveCmd == "" {
		pool, err := objective.NewRDKit(ropts)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := pool.CheckTasks(ctx, []string{a.Task}); err != nil {
			var ut *objective.UnknownTaskError
			if errors.As(err, &ut) {
				err = &ArgError{err}
			}
			pool.Close()
			return nil, nil, nil, err
		}
		return pool.Objective(a.Task), pool, func() { pool.Close() }, nil
	}
	argv := objective.SplitCommand(a.ObjectiveCmd)
	if len(argv) == 0 {
		return nil, nil, nil, argErrorf("-objective-cmd is empty")
	}
	pool, err := objective.NewCommand(argv, popts)
	if err != nil {
		return nil, nil, nil, err
	}
	// Molecules are identified by RDKit canonical SMILES when RDKit is there, as with the RDKit objective.
	// -timeout and -request-size are the user's program's; the canonicaliser keeps its own defaults, so that a
	// program answering in a second does not get an RDKit worker killed while it imports RDKit on a busy machine.
	ropts.Workers, ropts.Timeout, ropts.ChunkSize = 1, 0, 0
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

// progressPrinter prints one line per iteration, and while a phase runs long (watch), a line every
// progressEvery saying which.
type progressPrinter struct {
	w io.Writer
	// health, if set, is called after every iteration; a non-empty answer is printed once, as a warning.
	health func() string
	// saved, if set, is called after every iteration's line (the iteration's checkpoint is written by then).
	saved  func() error
	warnf  func(string, ...any)
	warned bool

	every time.Duration // the longest silence; 0 means progressEvery

	mu         sync.Mutex // guards w and the fields below, shared with watch's goroutine
	last       time.Time  // when a line was last printed
	iter       int        // the iteration running
	phase      string     // its phase, since phaseStart
	phaseStart time.Time
}

// progressEvery is the longest a run stays silent while it works.
const progressEvery = 10 * time.Second

// Phase implements bo.PhaseRecorder.
func (p *progressPrinter) Phase(iter int, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.iter, p.phase, p.phaseStart = iter, name, time.Now()
}

// watch prints, until stop is called, a line whenever progressEvery has passed without one: the phase running
// and for how long.
func (p *progressPrinter) watch() (stop func()) {
	done := make(chan struct{})
	every := p.every
	if every == 0 {
		every = progressEvery
	}
	p.mu.Lock()
	p.last = time.Now()
	p.mu.Unlock()
	go func() {
		t := time.NewTicker(every / 5)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p.mu.Lock()
				if p.phase != "" && now.Sub(p.last) >= every {
					fmt.Fprintf(p.w, "iter %d: %s (%.0f s)\n", p.iter+1, p.phase, now.Sub(p.phaseStart).Seconds())
					p.last = now
				}
				p.mu.Unlock()
			}
		}
	}()
	return func() { close(done) }
}

func (p *progressPrinter) Record(g bo.Progress) error {
	t := g.Times
	s := func(d time.Duration) float64 { return d.Seconds() }
	line := fmt.Sprintf("iter %d calls %d/%d best %s tr %.3g new %d dup %d invalid %d",
		g.Iteration, g.Calls, g.Budget, metrics.FormatScore(g.Best, 4), g.TRLength, g.New, g.Duplicate, g.Invalid)
	if g.Unpaid > 0 {
		line += fmt.Sprintf(" (unpaid %d)", g.Unpaid)
	}
	if !math.IsNaN(g.FitRank) {
		line += fmt.Sprintf(" rho %.2f", g.FitRank)
	}
	if !math.IsNaN(g.Weight) {
		line += fmt.Sprintf(" fp %.2f", g.Weight) // the surrogate's weight on the fingerprints
	}
	if st := g.Screened; st != nil && st.FromFlow >= 0 {
		// and how many of each scored above the tenth best before the batch
		line += fmt.Sprintf(" flow %d ga %d (top-10 %d, %d)", st.FromFlow, g.New-st.FromFlow, st.FlowTop, st.OffspringTop)
	}
	if g.Filtered > 0 {
		line += fmt.Sprintf(" filtered %d", g.Filtered)
		if g.FilteredBy != nil {
			line += fmt.Sprintf(": alerts %d, unseen environments %d", g.FilteredBy[rules.KindAlerts], g.FilteredBy[rules.KindUnseen])
			if n := g.FilteredBy[""]; n > 0 {
				line += fmt.Sprintf(", other %d", n)
			}
			line += ";"
		}
	}
	if st := g.Screened; st != nil && st.Decoded > 0 {
		line += fmt.Sprintf(" decoded %d (%d new)", st.Decoded, st.Novel)
		if st.Spare > 0 {
			line += fmt.Sprintf(" spare %d", st.Spare)
		}
	}
	line += fmt.Sprintf(" | s: encode %.2f tacs %.2f cand %.2f ts %.2f decode %.2f obj %.2f finetune %.2f surr %.2f ckpt %.2f total %.2f",
		s(t.Encode), s(t.TACS), s(t.Candidates), s(t.Thompson), s(t.Decode), s(t.Objective), s(t.FineTune),
		s(t.Surrogate), s(t.Checkpoint), s(t.Total()))
	p.mu.Lock()
	_, err := fmt.Fprintln(p.w, line)
	p.last = time.Now()
	p.mu.Unlock()
	if p.health != nil && !p.warned {
		if msg := p.health(); msg != "" {
			p.warned = true
			p.warnf("warning: after iteration %d the fine-tuned flow %s", g.Iteration, msg)
		}
	}
	if err == nil && p.saved != nil {
		err = p.saved()
	}
	return err
}

// flowHealth returns a check, for progressPrinter.health, that the flow can still tell every token from the
// others: BO's fine-tuning, like pretraining, can merge two tokens' embeddings (BENCHMARKS.md), after which
// molecules with one of them are proposed as molecules with the other. The answer, if any, follows "the flow".
func flowHealth(flow *seqflow.Flow, voc *vocab.Vocab, frozen bool) func() string {
	return func() string {
		cos, a, b := train.ClosestEmbeddings(flow.Params())
		tok, as := flow.ConfusedToken()
		if tok < 0 && cos < train.MergedCos {
			return ""
		}
		if tok < 0 {
			tok, as = b, a
		}
		msg := fmt.Sprintf("cannot tell the tokens %s and %s apart (their embeddings have merged, cosine %.8f): "+
			"molecules with %s are not reconstructed, and proposals with one hold the other", voc.Token(tok), voc.Token(as), cos, voc.Token(tok))
		if !frozen {
			msg += "; -freeze-embed keeps the embeddings fixed while fine-tuning"
		}
		return msg
	}
}

// printResults prints the best molecules of the run (scores y of molecules smiles, the optimiser's keys, shown as
// canonicalSMILES gives them with canon, with their names in the initial file, names by key) and the figures
// of the evaluation log. y and initBest, the best initial score against which the gain is reported, are gains
// (rundir.Info.Gain), shown as the objective's scores.
func printResults(ctx context.Context, w io.Writer, canon objective.Canonicalizer, dir string, info rundir.Info, status string, y []float64, smiles []string, names map[string]string, initBest float64) error {
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	fmt.Fprintf(w, "status: %s\n", status)
	fmt.Fprintln(w, "best molecules (score, SMILES):")
	shown := idx[:min(10, len(idx))]
	keys := make([]string, len(shown))
	for k, i := range shown {
		keys[k] = smiles[i]
	}
	for k, shownAs := range canonicalSMILES(ctx, canon, dir, keys) {
		if name := names[keys[k]]; name != "" {
			shownAs += "  (" + name + ")"
		}
		fmt.Fprintf(w, "  %s  %s\n", metrics.FormatScore(info.Gain(y[shown[k]]), 6), shownAs)
	}
	run, err := bench.LoadRun(dir)
	if err != nil {
		return fmt.Errorf("optimize: read back %s: %w", dir, err)
	}
	f := run.Figures()
	of := ""
	if info.Minimize {
		of = " of −score"
	}
	fmt.Fprintf(w, "Top-1 %s  Top-10 %s  Top-100 %s  AUC Top-10 %s%s  (%d calls in %s)\n",
		metrics.FormatScore(f.Top[0], 4), metrics.FormatScore(f.Top[1], 4), metrics.FormatScore(f.Top[2], 4), metrics.FormatScore(f.AUC[1], 4), of, f.Calls, filepath.Join(dir, rundir.EvalLogFile))
	if len(idx) > 0 {
		best := y[idx[0]]
		verdict := "no molecule better than the best initial one was found"
		if best > initBest {
			verdict = "better than the best initial molecule by more than a float64 holds" // (1e308) − (−1e308)
			if d := info.Gain(best) - info.Gain(initBest); !math.IsInf(d, 0) {
				verdict = fmt.Sprintf("%s over the best initial molecule", plus(metrics.FormatScore(d, 4)))
			}
		}
		fmt.Fprintf(w, "best initial molecule %s, best found %s: %s\n", metrics.FormatScore(info.Gain(initBest), 4), metrics.FormatScore(info.Gain(best), 4), verdict)
	}
	return nil
}

// readInit reads the first count molecules of the -init file (molfile.Read).
func readInit(path, task string, count int) (rows []molfile.Row, hasScores bool, err error) {
	rows, hasScores, err = molfile.Read(path, task, count)
	if err != nil {
		return nil, false, fmt.Errorf("optimize: -init: %w", err)
	}
	return rows, hasScores, nil
}

// initScores returns the initial molecules' scores from the file, or nil when it had none (they are paid for
// through the log).
func initScores(mols []molfile.Molecule, hasScores bool) []float64 {
	if !hasScores {
		return nil
	}
	out := make([]float64, len(mols))
	for i, m := range mols {
		out[i] = m.Score
	}
	return out
}

// parseBand returns the band of -tr-novelty "SHRINK,GROW", or nil when s is not one.
func parseBand(s string) *bo.NoveltyBand {
	lo, hi, ok := strings.Cut(s, ",")
	if !ok {
		return nil
	}
	shrink, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	grow, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if err1 != nil || err2 != nil || !(0 <= shrink && shrink < grow && grow <= 1) {
		return nil
	}
	return &bo.NoveltyBand{Shrink: shrink, Grow: grow}
}

// plus prefixes a formatted non-negative figure with +, as %+f would.
func plus(s string) string {
	if strings.HasPrefix(s, "-") {
		return s
	}
	return "+" + s
}
