package bo

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/nfbo/nfbo/bo/sobol"
	"github.com/nfbo/nfbo/rundir"
)

// Status says why a run ended.
type Status int

const (
	// StatusBudgetSpent: the budget of new objective calls is used up.
	StatusBudgetSpent Status = iota + 1
	// StatusCancelled: the context was cancelled; the last checkpoint can be resumed.
	StatusCancelled
	// StatusConverged: MaxStale iterations in a row proposed no new molecule.
	StatusConverged
	// StatusFailed: an error stopped the run.
	StatusFailed
)

// String returns the status in words.
func (s Status) String() string {
	switch s {
	case StatusBudgetSpent:
		return "budget spent"
	case StatusCancelled:
		return "cancelled"
	case StatusConverged:
		return "converged (no new molecules)"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Initial is the labelled data a run starts from.
type Initial struct {
	Tokens []int     // N×T canonical token sequences
	Y      []float64 // N scores
	SMILES []string  // N molecule keys, as Codec.Canonical returns them
}

// Problem gathers the optimiser's collaborators.
type Problem struct {
	Flow      Flow
	Codec     Codec
	Objective Objective
	Initial   Initial
	// Surrogate is the model to use; if nil, the variant's: a GPSurrogate with ReferenceSettings' GP, Sampler and
	// BatchSize (Reference) or an ExactGPSurrogate with ScreenedSettings.Exact on TokenFeatures (Screened).
	Surrogate Surrogate
	// Vocab is the number of token ids and Stop the stop (padding) id; the screened variant needs them. With Vocab
	// set, TACS decodes no copy that changes the anchor only after its stop (Flow.Decode, Codec.Canonical).
	Vocab, Stop int
	// Alphabet holds the token ids that ScreenedSettings.Offspring's mutations may write; required when Offspring > 0.
	Alphabet []int
	// Features, if not nil, gives the screened variant's surrogate its inputs in place of TokenFeatures; the
	// surrogate's kernel should suit them (ScreenedSettings.Exact.Kernel: gp.Tanimoto for count fingerprints).
	Features Featurizer
	// Rules, if not nil, decide which molecules may be proposed (chem/rules: what a chemist would make): a
	// candidate that breaks them is dropped before Thompson sampling and never paid for.
	Rules Rules
}

// Rules decide which molecules may be proposed.
type Rules interface {
	// Check writes into why[i] "" when the molecule smiles[i] (a Codec key) may be proposed, else the rule it
	// breaks. It must be deterministic: its answers are not checkpointed.
	Check(ctx context.Context, why, smiles []string) error
}

// RuleKinds, when Problem.Rules implement it, name the kind of rule a verdict of Check breaks (e.g. "alerts",
// "unseen environments"; "" for any other), so that the progress counts the filtered candidates by kind.
type RuleKinds interface {
	Kind(why string) string
}

// Progress is reported to the Recorder after every iteration.
type Progress struct {
	Iteration  int     // iterations completed
	Calls      int     // new molecules evaluated so far (the budget counts these)
	Budget     int     // total budget
	Proposed   int     // N·q proposals this iteration
	New        int     // new valid molecules evaluated this iteration
	Duplicate  int     // valid proposals already in the data or earlier in this batch
	Invalid    int     // proposals that decode to no valid molecule (Codec.Canonical's ok = false)
	Unpaid     int     // of New, molecules that cost no call: the objective had their scores (a batch replayed after a resume, a molecule paid under another key) or could not read them (free, PMO's rule)
	Best       float64 // best score so far, initial data included
	BestSMILES string  // its molecule
	TRLength   float64 // trust-region length after the update
	// FitRank is the Spearman rank correlation between the surrogate's posterior mean and the scores of this
	// iteration's new molecules, predicted before the surrogate learnt them: how well it steers. NaN when the
	// surrogate cannot predict or fewer than 3 new molecules came.
	FitRank float64
	// Weight is, with InputsMorganTokens, the surrogate's weight on the fingerprints (the rest on the token
	// counts) as last fitted: which inputs the marginal likelihood trusts. NaN for other surrogates.
	Weight float64
	// Filtered counts the new valid candidates dropped because they break Problem.Rules.
	Filtered int
	// FilteredBy counts Filtered by the kind of rule broken, when Problem.Rules implement RuleKinds ("" for the
	// rest); nil otherwise.
	FilteredBy map[string]int
	// Screened holds the screened variant's own counts (New of them from the flow, decoding not wasted); nil
	// with the reference variant.
	Screened *ScreenedStats
	Times    Phases // wall time of this iteration, by phase
}

// Phases is the wall time of one iteration split by phase. Proposals past the end of the budget are not
// examined, so New + Duplicate + Invalid may be less than Proposed in the last iteration. With the screened variant,
// Duplicate and Invalid count the decoded candidates (and offspring) rather than the picks. An iteration that
// replays a pending batch after a resume spends no time on the proposal phases.
type Phases struct {
	Encode     time.Duration // re-encoding the anchors with the current flow
	TACS       time.Duration // token-level perturbation probabilities
	Candidates time.Duration // Sobol or uniform points and perturbation in the trust-region boxes
	Thompson   time.Duration // joint posterior samples and Thompson selection
	Decode     time.Duration // decoding the chosen latents and canonicalising the molecules
	Objective  time.Duration // the objective, including the log's sync
	FineTune   time.Duration // fine-tuning the flow
	// Surrogate is the surrogate's refit (screened) or update (reference with UpdateEveryIteration); a refit run
	// beside a fine-tune counts only where it ran past it, so that the phases still sum to the iteration's time.
	Surrogate  time.Duration
	Checkpoint time.Duration // writing the run directory's checkpoint (flow, surrogate, state)
}

// Total returns the sum of the phases.
func (p Phases) Total() time.Duration {
	return p.Encode + p.TACS + p.Candidates + p.Thompson + p.Decode + p.Objective + p.FineTune + p.Surrogate +
		p.Checkpoint
}

// Result is the outcome of Run.
type Result struct {
	Status     Status
	Iterations int
	Calls      int
	Best       float64
	BestSMILES string
}

// state is everything that changes during a run; with the RNG, the surrogate and the flow it is the checkpoint.
type state struct {
	Iter    int
	T, F    int
	Tokens  []int     // all data, initial first (n×T)
	Y       []float64 // n
	SMILES  []string  // n
	NInit   int
	Counter int // new calls since the last fine-tune, minus TrainEvery
	Stale   int // iterations in a row without a new molecule
	TR      TrustRegion
	Fitted  bool // initial surrogate fit done
}

// Optimizer runs NF-BO. Create it with NewOptimizer; it is not safe for concurrent use.
type Optimizer struct {
	cfg     Config
	prob    Problem
	src     rand.Source
	rng     *rand.Rand
	rec     Recorder
	surr    Surrogate
	prop    proposer // the variant's: Config.Variant's, chosen once
	st      state
	pending *batch                  // batch found in rundir.PendingFile on resume, evaluated by the next iteration
	dirs    *sobol.Directions       // Sobol direction numbers for D, computed once
	seen    map[string]struct{}     // the data's molecules: keys and, with ident, identities (has, remember)
	ident   func(key string) string // the Codec's Identity in the screened variant, else nil
	allowed map[string]bool         // Problem.Rules' verdicts so far, by molecule
	why     map[string]string       // the rule each disallowed molecule breaks, when Problem.Rules name kinds
	times   Phases                  // of the current iteration
	t, f, d int
}

// NewOptimizer checks the configuration and the initial data. All randomness comes from src; with a RunDir, src
// must also implement encoding.BinaryMarshaler and BinaryUnmarshaler (rand.PCG and rand.ChaCha8 do) and the flow
// must implement Checkpointer. rec may be nil.
func NewOptimizer(cfg Config, prob Problem, src rand.Source, rec Recorder) (*Optimizer, error) {
	if prob.Flow == nil || prob.Codec == nil || prob.Objective == nil {
		return nil, errors.New("bo: Problem needs a Flow, a Codec and an Objective")
	}
	t, f := prob.Flow.Shape()
	d := t * f
	cfg, err := cfg.resolved(d)
	if err != nil {
		return nil, err
	}
	in := prob.Initial
	n := len(in.Y)
	if n == 0 || len(in.Tokens) != n*t || len(in.SMILES) != n {
		return nil, fmt.Errorf("bo: initial data: %d scores, %d tokens (want %d×T=%d), %d SMILES",
			n, len(in.Tokens), n, t, len(in.SMILES))
	}
	if cfg.Anchors > n {
		return nil, fmt.Errorf("bo: config: %d anchors but only %d initial points", cfg.Anchors, n)
	}
	if cfg.RunDir != "" {
		if _, ok := src.(encoding.BinaryMarshaler); !ok {
			return nil, errors.New("bo: a run directory needs a rand.Source that implements encoding.BinaryMarshaler")
		}
		if _, ok := prob.Flow.(Checkpointer); !ok {
			return nil, errors.New("bo: a run directory needs a Flow that implements bo.Checkpointer")
		}
	}
	o := &Optimizer{cfg: cfg, prob: prob, src: src, rng: rand.New(src), rec: rec, t: t, f: f, d: d}
	surr, err := o.choose()
	if err != nil {
		return nil, err
	}
	if prob.Surrogate == nil {
		o.prob.Surrogate = surr
	}
	o.surr = o.prob.Surrogate
	o.st = state{
		T: t, F: f, NInit: n,
		Tokens: append([]int(nil), in.Tokens...), Y: append([]float64(nil), in.Y...),
		SMILES:  append([]string(nil), in.SMILES...),
		Counter: -cfg.TrainEvery,
		TR:      NewTrustRegion(maxOf(in.Y)),
	}
	o.st.TR.Length = cfg.TRInit
	o.rebuildSeen()
	return o, nil
}

func maxOf(y []float64) float64 {
	m := math.Inf(-1)
	for _, v := range y {
		m = max(m, v)
	}
	return m
}

// rebuildSeen rebuilds from the data the molecules seen.
func (o *Optimizer) rebuildSeen() {
	o.seen = make(map[string]struct{}, len(o.st.SMILES))
	for _, s := range o.st.SMILES {
		remember(o.seen, s, o.identity(s))
	}
}

// Calls returns the number of objective calls spent so far: the Objective's count if it is a CallCounter, else
// the number of new molecules evaluated.
func (o *Optimizer) Calls() int {
	if cc, ok := o.prob.Objective.(CallCounter); ok {
		return cc.Calls()
	}
	return len(o.st.Y) - o.st.NInit
}

// Data returns the run's data so far (initial first): tokens (n×T), scores and molecules. The slices alias the
// optimiser's state and must not be modified.
func (o *Optimizer) Data() (tokens []int, y []float64, smiles []string) {
	return o.st.Tokens, o.st.Y, o.st.SMILES
}

func (o *Optimizer) result(s Status) Result {
	r := Result{Status: s, Iterations: o.st.Iter, Calls: o.Calls(), Best: math.Inf(-1)}
	for i, v := range o.st.Y {
		if v > r.Best {
			r.Best, r.BestSMILES = v, o.st.SMILES[i]
		}
	}
	return r
}

// Run optimises until the budget is spent, ctx is cancelled, no new molecules come for MaxStale iterations, or an
// error occurs. With a RunDir it first resumes the checkpoint there, if any, and writes one after the initial
// surrogate fit and after every iteration.
func (o *Optimizer) Run(ctx context.Context) (Result, error) {
	fail := func(err error) (Result, error) {
		if ctx.Err() != nil {
			return o.result(StatusCancelled), ctx.Err()
		}
		return o.result(StatusFailed), err
	}
	if o.cfg.RunDir != "" {
		if err := o.open(); err != nil {
			return fail(err)
		}
	}
	if !o.st.Fitted {
		if err := o.fitInitial(ctx); err != nil {
			return fail(err)
		}
	}
	for {
		switch {
		case o.pending != nil:
			// A batch proposed before an interruption is completed first: its evaluations may be in the
			// objective's log (and count as calls) already.
		case o.Calls() >= o.cfg.Budget:
			return o.result(StatusBudgetSpent), nil
		case o.st.Stale >= o.cfg.MaxStale:
			return o.result(StatusConverged), nil
		case ctx.Err() != nil:
			return o.result(StatusCancelled), ctx.Err()
		}
		if err := o.iterate(ctx); err != nil {
			return fail(err)
		}
	}
}

// fitInitial trains the surrogate on the initial data and writes the first checkpoint.
func (o *Optimizer) fitInitial(ctx context.Context) error {
	o.phase("fitting the surrogate to the initial molecules")
	if err := o.prop.fitInitial(ctx); err != nil {
		return err
	}
	o.st.Fitted = true
	return o.checkpoint()
}

// batch is an iteration's filtered proposals. With a RunDir it is written to rundir.PendingFile before the objective is
// called, so that a resumed run evaluates exactly this batch (replayed from the evaluation log) even if the flow
// or the surrogate were not bit-reproducible.
type batch struct {
	Iter       int
	Proposed   int            // N·q proposals before filtering
	Duplicate  int            // valid proposals dropped as already seen
	Invalid    int            // proposals that are not valid molecules
	Filtered   int            // new valid candidates dropped by Problem.Rules
	FilteredBy map[string]int // Filtered by kind of rule (RuleKinds)
	Screened   *ScreenedStats // the screened variant's counts; nil with the reference
	Tokens     []int          // B×T canonical sequences of the new molecules
	SMILES     []string       // B molecule keys
	// FromFlow marks, with the screened variant's offspring, the picks decoded from latent candidates (the
	// rest are GA children); nil otherwise, and in a pending batch written before it was kept.
	FromFlow []bool
	// Origins are, with the screened variant, how each molecule was proposed (the evaluation log keeps them
	// through a Tracer); nil otherwise, and in a pending batch of an nfbo that kept none.
	Origins []rundir.Origin
	RNG     []byte // random state after proposing (RunDir only)
}

// iterate is one iteration of Algorithm 1: propose a batch, then evaluate it and update the state.
func (o *Optimizer) iterate(ctx context.Context) error {
	b := o.pending
	o.pending = nil
	o.times = Phases{}
	if b != nil {
		if err := o.restoreRNG(b.RNG); err != nil {
			return err
		}
	} else {
		var err error
		if b, err = o.proposeBatch(ctx); err != nil {
			return err
		}
		// The iteration the batch belongs to: a resumed run replays the pending batch only at the same one.
		b.Iter = o.st.Iter
		if err := o.savePending(b); err != nil {
			return err
		}
	}
	return o.complete(ctx, b)
}

// proposeBatch selects the iteration's anchors and lets the variant's proposer turn them into a batch.
func (o *Optimizer) proposeBatch(ctx context.Context) (*batch, error) {
	anchors := make([]int, o.cfg.Anchors)
	o.selectAnchors(anchors)
	return o.prop.propose(ctx, anchors)
}

// selectAnchors draws len(dst) anchors by the configured rule; with DistinctScores, among the first point of
// each distinct score, unless there are fewer distinct scores than anchors.
func (o *Optimizer) selectAnchors(dst []int) {
	temp := max(o.cfg.Temperature, 0)
	if !o.cfg.DistinctScores {
		SelectAnchorsRule(dst, o.st.Y, o.cfg.AnchorRule, temp, o.rng)
		return
	}
	idx := o.distinctScores()
	if len(idx) < len(dst) {
		SelectAnchorsRule(dst, o.st.Y, o.cfg.AnchorRule, temp, o.rng)
		return
	}
	y := make([]float64, len(idx))
	for k, i := range idx {
		y[k] = o.st.Y[i]
	}
	SelectAnchorsRule(dst, y, o.cfg.AnchorRule, temp, o.rng)
	for k, j := range dst {
		dst[k] = idx[j]
	}
}

// complete evaluates the batch, adds it to the data, updates the trust region, fine-tunes the flow every
// TrainEvery new calls, optionally updates the surrogate, and writes a checkpoint.
func (o *Optimizer) complete(ctx context.Context, b *batch) error {
	cfg := o.cfg
	var scores []float64
	var paid []bool
	if len(b.SMILES) > 0 {
		var err error
		o.phase("the objective")
		start := time.Now()
		if tr, ok := o.prob.Objective.(Tracer); ok && b.Origins != nil {
			scores, paid, err = tr.EvaluateFrom(ctx, b.SMILES, b.Origins)
		} else {
			scores, paid, err = o.prob.Objective.Evaluate(ctx, b.SMILES)
		}
		o.times.Objective += time.Since(start)
		if err != nil {
			return fmt.Errorf("bo: objective: %w", err)
		}
		if len(scores) != len(b.SMILES) || len(paid) != len(b.SMILES) {
			return fmt.Errorf("bo: objective returned %d scores and %d flags for %d molecules", len(scores), len(paid), len(b.SMILES))
		}
	}
	fitRank := math.NaN()
	if len(scores) >= 3 {
		var err error
		if fitRank, err = o.fitRank(ctx, b.Tokens, b.SMILES, scores); err != nil {
			return err
		}
	}
	if st := b.Screened; st != nil && len(b.FromFlow) == len(scores) {
		st.countTop(b.FromFlow, scores, o.st.Y)
	}
	// The evaluations are on disk: update the state.
	o.st.Tokens = append(o.st.Tokens, b.Tokens...)
	o.st.Y = append(o.st.Y, scores...)
	o.st.SMILES = append(o.st.SMILES, b.SMILES...)
	for _, s := range b.SMILES {
		remember(o.seen, s, o.identity(s))
	}
	fresh := len(b.SMILES)
	o.st.Counter += fresh
	o.st.Stale++
	if fresh > 0 {
		o.st.Stale = 0
	}
	out := Outcome{BestNew: maxOf(scores), D: o.d}
	out.Proposed, out.New = o.prop.novelty(b)
	o.st.TR = UpdateTrustRegion(o.st.TR, cfg.TRRule, cfg.NoveltyBand, out)
	// The reference fine-tunes at the start of the iteration after the counter reaches 0; doing it here is the
	// same sequence, and keeps the flow fixed between a checkpoint and the next batch. After the batch that
	// spends the budget there is no next iteration, so neither the flow nor the surrogate learns from it.
	last := o.Calls() >= cfg.Budget
	fineTune := cfg.TrainEvery > 0 && o.st.Counter >= 0 && !last && o.prop.trainsFlow()
	if err := o.fineTuneAndLearn(ctx, fineTune, !last && fresh > 0, fresh); err != nil {
		return err
	}
	o.phase("writing the checkpoint") // of this iteration, before Iter counts it
	o.st.Iter++
	start := time.Now()
	if err := o.checkpoint(); err != nil {
		return err
	}
	o.times.Checkpoint += time.Since(start)
	return o.record(b, countTrue(paid), fitRank)
}

// fineTuneAndLearn fine-tunes the flow when fineTune (the newest and the best sequences, fineTuneSet) and then
// lets the proposer learn from the batch's fresh new molecules when learn. A proposer whose learning reads
// neither the flow nor o.rng (learnsBeside) learns on another goroutine while the flow trains: the same
// results in the time of the longer of the two, where there is a core to spare (the fine-tune's products use
// both cores for part of a step only). The surrogate's time is then the part that ran past the fine-tune.
func (o *Optimizer) fineTuneAndLearn(ctx context.Context, fineTune, learn bool, fresh int) error {
	if !fineTune {
		if learn {
			return o.learn(ctx, fresh)
		}
		return nil
	}
	var beside chan error
	if learn && o.prop.learnsBeside() {
		beside = make(chan error, 1)
		go func() { beside <- o.prop.learn(ctx, fresh) }()
		learn = false
		o.phase("fine-tuning the flow, refitting the surrogate")
	} else {
		o.phase("fine-tuning the flow")
	}
	start := time.Now()
	err := o.prob.Flow.FineTune(ctx, o.gather(o.fineTuneSet(0)), o.rng)
	o.times.FineTune += time.Since(start)
	if beside != nil {
		start = time.Now()
		if berr := <-beside; err == nil && berr != nil {
			return berr
		}
		o.times.Surrogate += time.Since(start)
	}
	if err != nil {
		return fmt.Errorf("bo: fine-tune flow: %w", err)
	}
	o.st.Counter -= o.cfg.TrainEvery
	if learn {
		return o.learn(ctx, fresh)
	}
	return nil
}

// learn lets the proposer learn from the batch's fresh new molecules (proposer.learn), timed as the surrogate's.
func (o *Optimizer) learn(ctx context.Context, fresh int) error {
	o.phase("updating the surrogate")
	start := time.Now()
	err := o.prop.learn(ctx, fresh)
	o.times.Surrogate += time.Since(start)
	return err
}

// pointDrawer returns the iteration's source of unit-cube points: draw(dst, k) writes k points (k×D).
func (o *Optimizer) pointDrawer() func(dst []float64, k int) {
	if o.cfg.Points == PointsUniform {
		return func(dst []float64, _ int) {
			for i := range dst {
				dst[i] = o.rng.Float64()
			}
		}
	}
	return o.sobolPoints().Draw
}

// sobolPoints returns the iteration's scrambled Sobol engine, seeded from the run's stream.
func (o *Optimizer) sobolPoints() *sobol.Sobol {
	if o.dirs == nil {
		o.dirs = sobol.NewDirections(o.d)
	}
	return sobol.NewFrom(o.dirs, rand.NewPCG(o.rng.Uint64(), o.rng.Uint64())) // one scrambled engine per iteration
}

// filter canonicalises decoded sequences (B×T) and keeps valid molecules that are new to the data and to this
// batch and allowed by the rules (judged before), at most the budget left, in proposal order. It counts the invalid and duplicate proposals it examined.
func (o *Optimizer) filter(decoded []int) *batch {
	t := o.t
	left := o.cfg.Budget - o.Calls()
	canon := make([]int, t)
	inBatch := make(map[string]struct{})
	b := &batch{}
	for i := 0; i < len(decoded)/t && len(b.SMILES) < left; i++ {
		s, ok := o.prob.Codec.Canonical(canon, decoded[i*t:(i+1)*t])
		if !ok {
			b.Invalid++
			continue
		}
		if _, dup := o.seen[s]; dup {
			b.Duplicate++
			continue
		}
		if _, dup := inBatch[s]; dup {
			b.Duplicate++
			continue
		}
		if !o.isAllowed(s) {
			b.filtered(o, s)
			continue
		}
		inBatch[s] = struct{}{}
		b.Tokens = append(b.Tokens, canon...)
		b.SMILES = append(b.SMILES, s)
	}
	return b
}

// topK returns the indices of the k best points, best first (ties to the lower index).
func (o *Optimizer) topK(k int) []int {
	idx := make([]int, len(o.st.Y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return o.st.Y[idx[a]] > o.st.Y[idx[b]] })
	return idx[:min(k, len(idx))]
}

// parentSet returns the GA children's candidate parents, best first: the k best points, or with
// DistinctScores the point of each of the k best distinct scores (distinctScores). Where there are fewer than
// k/2 distinct scores, too few parents to breed from, the other points follow up to k as topK orders them (best first, the
// oldest first among equals): on a plateau that holds most of the data (an objective that scores every molecule
// 0 until one holds a substructure) the parents are then the first k molecules, the initial ones, as the graph
// GA's population stays its first molecules while every score is 0, not one molecule whose children are soon all
// known (valsartan_smarts from a random start; the newest instead, tried, drift into charged and boron-laden
// molecules the flow decodes: BENCHMARKS.md, "A plateau of zeros"). Data with k/2 or more distinct scores get
// the parents they got before the rule. plateau reports a filled set.
func (o *Optimizer) parentSet(k int) (idx []int, plateau bool) {
	if !o.cfg.DistinctScores {
		return o.topK(k), false
	}
	y := o.st.Y
	idx = o.distinctScores()
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	if 2*len(idx) >= k || len(idx) == len(y) {
		return idx[:min(k, len(idx))], false
	}
	first := make([]bool, len(y))
	for _, i := range idx {
		first[i] = true
	}
	for _, i := range o.topK(len(y)) {
		if len(idx) == k {
			break
		}
		if !first[i] {
			idx = append(idx, i)
		}
	}
	return idx, true
}

// fineTuneSet returns the newest max(newest, FineTuneNewest) points followed by the top TopK (the reference
// concatenates the two sets, so a point may appear twice).
func (o *Optimizer) fineTuneSet(newest int) []int {
	n := len(o.st.Y)
	k := min(max(newest, o.cfg.FineTuneNewest), n)
	idx := make([]int, 0, k+o.cfg.TopK)
	for i := n - k; i < n; i++ {
		idx = append(idx, i)
	}
	return append(idx, o.topK(o.cfg.TopK)...)
}

func (o *Optimizer) gather(idx []int) []int {
	t := o.t
	out := make([]int, len(idx)*t)
	for k, i := range idx {
		copy(out[k*t:(k+1)*t], o.st.Tokens[i*t:(i+1)*t])
	}
	return out
}

func (o *Optimizer) record(b *batch, paid int, fitRank float64) error {
	if o.rec == nil {
		return nil
	}
	r := o.result(0)
	fresh := len(b.SMILES)
	weight := math.NaN()
	if ws, ok := o.surr.(interface{ Weight() (float64, bool) }); ok {
		if w, ok := ws.Weight(); ok {
			weight = w
		}
	}
	return o.rec.Record(Progress{
		Iteration: o.st.Iter, Calls: r.Calls, Budget: o.cfg.Budget, Proposed: b.Proposed, New: fresh,
		Duplicate: b.Duplicate, Invalid: b.Invalid, Unpaid: fresh - paid, Best: r.Best, BestSMILES: r.BestSMILES,
		TRLength: o.st.TR.Length, FitRank: fitRank, Weight: weight, Filtered: b.Filtered, FilteredBy: b.FilteredBy,
		Screened: b.Screened, Times: o.times,
	})
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// judge asks Problem.Rules about the molecules of keys not judged before and records the verdicts in
// o.allowed; without rules it does nothing.
func (o *Optimizer) judge(ctx context.Context, keys []string) error {
	if o.prob.Rules == nil {
		return nil
	}
	if o.allowed == nil {
		o.allowed = make(map[string]bool)
	}
	var ask []string
	asked := make(map[string]bool)
	for _, k := range keys {
		if _, ok := o.allowed[k]; !ok && !asked[k] {
			asked[k] = true
			ask = append(ask, k)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	why := make([]string, len(ask))
	if err := o.prob.Rules.Check(ctx, why, ask); err != nil {
		return fmt.Errorf("bo: chemistry rules: %w", err)
	}
	_, kinds := o.prob.Rules.(RuleKinds)
	for i, k := range ask {
		o.allowed[k] = why[i] == ""
		if why[i] != "" && kinds {
			if o.why == nil {
				o.why = make(map[string]string)
			}
			o.why[k] = why[i]
		}
	}
	return nil
}

// filtered counts the disallowed molecule key in b.Filtered, and by the kind of rule it breaks when the rules
// name kinds.
func (b *batch) filtered(o *Optimizer, key string) {
	b.Filtered++
	if k, ok := o.prob.Rules.(RuleKinds); ok {
		if b.FilteredBy == nil {
			b.FilteredBy = make(map[string]int)
		}
		b.FilteredBy[k.Kind(o.why[key])]++
	}
}

// judged reports whether the rules have judged the molecule (always true without rules).
func (o *Optimizer) judged(key string) bool {
	if o.prob.Rules == nil {
		return true
	}
	_, ok := o.allowed[key]
	return ok
}

// isAllowed reports whether a judged molecule may be proposed (always, without rules).
func (o *Optimizer) isAllowed(key string) bool {
	return o.prob.Rules == nil || o.allowed[key]
}

// PhaseRecorder is a Recorder told when each phase of an iteration begins, so that it can show long phases
// while they run (a pmo iteration decodes for tens of seconds).
type PhaseRecorder interface {
	Recorder
	// Phase says that the iteration (0-based: the one after Progress.Iteration iterations) enters the named
	// phase, e.g. "decoding the candidates".
	Phase(iteration int, name string)
}

// phase tells a PhaseRecorder that a phase begins.
func (o *Optimizer) phase(name string) {
	if p, ok := o.rec.(PhaseRecorder); ok {
		p.Phase(o.st.Iter, name)
	}
}
