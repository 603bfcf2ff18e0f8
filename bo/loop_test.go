package bo

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/rundir"
)

const toyT, toyV = 6, 8

func toyConfig(dir string) Config {
	return Config{
		Budget: 60, Anchors: 3, Queries: 4, Candidates: 64, TrainEvery: 10, TopK: 20,
		TACS: TACSConfig{Tau: 400},
		ReferenceSettings: ReferenceSettings{
			InitEpochs: 3, BatchSize: 16,
			GP: gp.Config{Hidden: 8, MaxInducing: 16},
		},
		RunDir: dir,
	}
}

// toScreened switches a toy configuration to the screened variant: its own settings, none of the reference's.
func toScreened(c *Config, offspring int) {
	c.Variant, c.ReferenceSettings, c.Offspring = Screened, ReferenceSettings{}, offspring
}

// A variantCase is a named change to the toy Config: a variant and its settings.
type variantCase struct {
	name string
	mod  func(*Config)
}

// bothVariants returns the reference variant and the screened one with 10 GA children an iteration.
func bothVariants() []variantCase {
	return []variantCase{
		{"reference", func(*Config) {}},
		{"screened", func(c *Config) { toScreened(c, 10) }},
	}
}

type recorder struct {
	log    []Progress
	cancel func()
	after  int
}

func (r *recorder) Record(p Progress) error {
	r.log = append(r.log, p)
	if r.cancel != nil && p.Iteration == r.after {
		r.cancel()
	}
	return nil
}

func runToy(t *testing.T, cfg Config, obj Objective, seed uint64, rec Recorder, ctx context.Context) (*Optimizer, Result, error) {
	t.Helper()
	return runToyFlow(t, cfg, obj, seed, rec, ctx, &toyFlow{t: toyT, v: toyV})
}

func runToyFlow(t *testing.T, cfg Config, obj Objective, seed uint64, rec Recorder, ctx context.Context, flow *toyFlow) (*Optimizer, Result, error) {
	t.Helper()
	init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
	prob := Problem{Flow: flow, Codec: toyCodec{}, Objective: obj, Initial: init, Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
	o, err := NewOptimizer(cfg, prob, rand.NewPCG(seed, seed), rec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(ctx)
	return o, res, err
}

func TestLoopEndToEnd(t *testing.T) {
	for _, tc := range []variantCase{
		{"reference", func(*Config) {}},
		{"paper-update+pathwise+turbo+uniform", func(c *Config) {
			c.Update, c.Sampler, c.TRRule, c.Points, c.TACS.Tau = UpdateEveryIteration, SamplerPathwise, TRTuRBO, PointsUniform, 0
		}},
		{"greedy", func(c *Config) { c.Temperature = -1 }},
		{"screened", func(c *Config) { toScreened(c, 10) }},
		{"screened-no-offspring", func(c *Config) { toScreened(c, 0) }},
		{"no-flow", func(c *Config) { toScreened(c, 10); c.NoFlow = true }},
		{"candidate-target", func(c *Config) { toScreened(c, 10); c.CandidateTarget = 8 }},
		{"no-flow-candidate-target", func(c *Config) { toScreened(c, 10); c.NoFlow, c.CandidateTarget = true, 8 }}, // the pmo preset's -no-flow
		{"rank-targets", func(c *Config) { toScreened(c, 10); c.RankTargets = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toyConfig("")
			tc.mod(&cfg)
			sc := &toyScorer{}
			rec := &recorder{}
			o, res, err := runToy(t, cfg, memObjective{sc}, 1, rec, context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusBudgetSpent || res.Calls != cfg.Budget || sc.calls != cfg.Budget {
				t.Fatalf("status %v, calls %d, scorer calls %d; want budget spent and %d", res.Status, res.Calls, sc.calls, cfg.Budget)
			}
			for m, k := range sc.seen {
				if k != 1 {
					t.Errorf("molecule %s evaluated %d times", m, k)
				}
			}
			_, y, smiles := o.Data()
			init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
			seen := map[string]bool{}
			for _, s := range smiles {
				if seen[s] {
					t.Errorf("molecule %s twice in the data", s)
				}
				seen[s] = true
			}
			if res.Best < slices.Max(init.Y) || res.Best != slices.Max(y) {
				t.Errorf("best %v, initial best %v, data max %v", res.Best, slices.Max(init.Y), slices.Max(y))
			}
			t.Logf("%d iterations, best %.3f (initial %.3f), TR length %.3f", res.Iterations, res.Best,
				slices.Max(init.Y), rec.log[len(rec.log)-1].TRLength)
		})
	}
}

func TestLoopDeterministic(t *testing.T) {
	run := func(seed uint64) []float64 {
		o, _, err := runToy(t, toyConfig(""), memObjective{&toyScorer{}}, seed, nil, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, y, _ := o.Data()
		return y
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Error("same seed gave different runs")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave identical runs")
	}
}

// cancelOnSample is a GPSurrogate that cancels the run's context as its first Sample begins and keeps what the
// GP sampler then returned.
type cancelOnSample struct {
	*GPSurrogate
	cancel func()
	calls  int
	err    error
}

func (c *cancelOnSample) Sample(ctx context.Context, dst, z []float64, nSamples int, rng *rand.Rand) error {
	c.calls++
	if c.calls == 1 {
		c.cancel()
		c.err = c.GPSurrogate.Sample(ctx, dst, z, nSamples, rng)
		return c.err
	}
	return c.GPSurrogate.Sample(ctx, dst, z, nSamples, rng)
}

// TestCancelDuringSampling checks that the loop passes its context to Surrogate.Sample and that both GP samplers
// stop on it: a run cancelled inside the first Thompson sampling call ends cancelled, before any iteration
// completes, and the sampler itself returned the cancellation.
func TestCancelDuringSampling(t *testing.T) {
	for _, kind := range []SamplerKind{SamplerExact, SamplerPathwise} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := toyConfig("")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			surr := &cancelOnSample{
				GPSurrogate: &GPSurrogate{Config: cfg.GP, D: toyT * 2, Sampler: kind, BatchSize: cfg.BatchSize},
				cancel:      cancel,
			}
			init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
			prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}}, Initial: init, Surrogate: surr}
			rec := &recorder{}
			o, err := NewOptimizer(cfg, prob, rand.NewPCG(5, 5), rec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := o.Run(ctx)
			if res.Status != StatusCancelled || !errors.Is(err, context.Canceled) {
				t.Fatalf("status %v err %v, want cancelled", res.Status, err)
			}
			if surr.calls != 1 || !errors.Is(surr.err, context.Canceled) {
				t.Errorf("%d Sample calls, first returned %v; want 1, wrapping context.Canceled", surr.calls, surr.err)
			}
			if len(rec.log) != 0 {
				t.Errorf("%d iterations recorded, want none", len(rec.log))
			}
		})
	}
}

// crashing fails after the log has persisted the evaluations of iteration `at`, as a kill -9 between the
// evaluation and the checkpoint would.
type crashing struct {
	log  *EvalLog
	iter *int
	at   int
}

func (c crashing) Evaluate(ctx context.Context, smiles []string) ([]float64, []bool, error) {
	scores, paid, err := c.log.Evaluate(ctx, smiles)
	if err != nil {
		return nil, nil, err
	}
	*c.iter++
	if *c.iter == c.at {
		return nil, nil, errors.New("simulated crash")
	}
	return scores, paid, nil
}

func TestResume(t *testing.T) {
	t.Run("reference", func(t *testing.T) { testResume(t, func(*Config) {}) })
	t.Run("screened", func(t *testing.T) {
		testResume(t, func(c *Config) { toScreened(c, 10) })
	})
	// The toy's scores are whole hundredths, so its data tie and the draws among equals take the run's stream:
	// a resumed run must draw them as the uninterrupted one did.
	t.Run("screened, ties drawn", func(t *testing.T) {
		testResume(t, func(c *Config) { toScreened(c, 10); c.DistinctScores, c.Ties = true, TiesDrawn })
	})
}

// testResume interrupts a run twice (a cancel, a crash after paying) and checks that the resumed run ends as the
// uninterrupted one with the same seed did, every molecule paid once.
func testResume(t *testing.T, mod func(*Config)) {
	cfgOf := func(dir string) Config {
		c := toyConfig(dir)
		mod(&c)
		return c
	}
	// Reference: one uninterrupted run with a run directory.
	refDir := t.TempDir()
	refSc := &toyScorer{}
	refLog, err := OpenEvalLog(filepath.Join(refDir, rundir.EvalLogFile), refSc)
	if err != nil {
		t.Fatal(err)
	}
	ref, refRes, err := runToy(t, cfgOf(refDir), refLog, 3, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	refLog.Close()
	_, refY, refS := ref.Data()

	// Interrupted twice: cancelled after iteration 2, then a crash after paying in iteration 5, then resumed.
	dir := t.TempDir()
	sc := &toyScorer{}
	l1, _ := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), sc)
	ctx, cancel := context.WithCancel(context.Background())
	_, res, err := runToy(t, cfgOf(dir), l1, 3, &recorder{cancel: cancel, after: 2}, ctx)
	cancel()
	if res.Status != StatusCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("first leg: status %v err %v, want cancelled", res.Status, err)
	}
	l1.Close()
	l2, _ := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), sc)
	iter := 0
	_, res, err = runToy(t, cfgOf(dir), crashing{l2, &iter, 3}, 12345, nil, context.Background())
	if res.Status != StatusFailed || err == nil {
		t.Fatalf("second leg: status %v err %v, want the simulated crash", res.Status, err)
	}
	l2.Close()
	paidBefore := sc.calls
	l3, _ := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), sc)
	rec := &recorder{}
	o, res, err := runToy(t, cfgOf(dir), l3, 777, rec, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l3.Close()
	if p := rec.log[0]; p.Unpaid == 0 || p.Unpaid != p.New {
		t.Errorf("the iteration after the crash replayed %d of its %d molecules, want all", p.Unpaid, p.New)
	}
	_, y, s := o.Data()
	if !slices.Equal(y, refY) || !slices.Equal(s, refS) || res.Best != refRes.Best {
		t.Errorf("resumed run differs from the uninterrupted one:\n got %v\nwant %v", s[30:], refS[30:])
	}
	if sc.calls != refSc.calls || sc.calls != toyConfig("").Budget {
		t.Errorf("scorer called %d times (%d before the last leg), uninterrupted %d, budget %d",
			sc.calls, paidBefore, refSc.calls, toyConfig("").Budget)
	}
	for m, k := range sc.seen {
		if k != 1 {
			t.Errorf("molecule %s paid %d times", m, k)
		}
	}
}

// TestResumePendingBatch crashes after paying for a batch and resumes with a flow that decodes differently: the
// resumed iteration must evaluate exactly the pending batch (all replayed, nothing paid twice), in both variants
// (the screened one once lost its batch's iteration number, and so proposed the batch anew after a resume).
func TestResumePendingBatch(t *testing.T) {
	t.Run("latent", func(t *testing.T) { testResumePendingBatch(t, func(*Config) {}) })
	t.Run("screened", func(t *testing.T) {
		testResumePendingBatch(t, func(c *Config) { toScreened(c, 10) })
	})
}

func testResumePendingBatch(t *testing.T, variant func(*Config)) {
	dir := t.TempDir()
	cfg := toyConfig(dir)
	variant(&cfg)
	sc := &toyScorer{}
	l1, _ := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), sc)
	iter := 0
	if _, res, err := runToy(t, cfg, crashing{l1, &iter, 2}, 3, nil, context.Background()); res.Status != StatusFailed || err == nil {
		t.Fatalf("first leg: %v %v, want the simulated crash", res.Status, err)
	}
	l1.Close()
	logged := readLog(t, filepath.Join(dir, rundir.EvalLogFile))
	l2, _ := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), sc)
	defer l2.Close()
	rec := &recorder{}
	o, res, err := runToyFlow(t, cfg, l2, 3, rec, context.Background(), &toyFlow{t: toyT, v: toyV, shift: 1})
	if err != nil || res.Status != StatusBudgetSpent {
		t.Fatalf("resume: %v %v", res.Status, err)
	}
	if p := rec.log[0]; p.Unpaid == 0 || p.Unpaid != p.New {
		t.Errorf("first resumed iteration replayed %d of %d, want all of the pending batch", p.Unpaid, p.New)
	}
	_, _, smiles := o.Data()
	inData := map[string]bool{}
	for _, s := range smiles {
		inData[s] = true
	}
	for _, s := range logged {
		if !inData[s] {
			t.Errorf("paid molecule %s lost", s)
		}
	}
	for m, k := range sc.seen {
		if k != 1 {
			t.Errorf("molecule %s paid %d times", m, k)
		}
	}
}

func TestResumeConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, &recorder{cancel: cancel, after: 1}, ctx)
	cancel()
	cfg := toyConfig(dir)
	cfg.Queries = 5
	if _, _, err := runToy(t, cfg, memObjective{&toyScorer{}}, 1, nil, context.Background()); err == nil {
		t.Error("resuming with a different configuration did not fail")
	}
}

// A run directory can be moved and resumed where it now is.
func TestResumeMovedRunDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a")
	ctx, cancel := context.WithCancel(context.Background())
	runToy(t, toyConfig(dir), memObjective{&toyScorer{}}, 1, &recorder{cancel: cancel, after: 1}, ctx)
	cancel()
	moved := filepath.Join(base, "b")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if _, _, err := runToy(t, toyConfig(moved), memObjective{&toyScorer{}}, 1, rec, context.Background()); err != nil {
		t.Fatalf("resume in the moved directory: %v", err)
	}
	if len(rec.log) == 0 || rec.log[0].Iteration != 2 {
		t.Errorf("resumed run started at iteration %v, want 2", rec.log)
	}
}

// toyRules forbid molecules with token 3 and count how often each molecule is judged.
type toyRules struct{ asked map[string]int }

func (r *toyRules) Check(_ context.Context, why, smiles []string) error {
	for i, s := range smiles {
		r.asked[s]++
		why[i] = ""
		if strings.Contains("."+s, ".3.") {
			why[i] = "token 3"
		}
	}
	return nil
}

// TestRulesNeverPaid: with chemistry rules, no molecule that breaks them is ever evaluated, in both variants; the
// dropped candidates are reported, and each molecule is judged once.
func TestRulesNeverPaid(t *testing.T) {
	for _, tc := range bothVariants() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toyConfig("")
			tc.mod(&cfg)
			sc := &toyScorer{}
			rec := &recorder{}
			rules := &toyRules{asked: map[string]int{}}
			init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
			prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{sc}, Initial: init,
				Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}, Rules: rules}
			o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(sc.seen) == 0 {
				t.Fatal("nothing was evaluated")
			}
			for m := range sc.seen {
				if strings.Contains("."+m, ".3.") {
					t.Errorf("molecule %s breaks the rules and was paid for", m)
				}
			}
			filtered := 0
			for _, p := range rec.log {
				filtered += p.Filtered
			}
			if filtered == 0 {
				t.Error("no candidate was reported filtered")
			}
			for m, k := range rules.asked {
				if k != 1 {
					t.Errorf("molecule %s judged %d times", m, k)
				}
			}
		})
	}
}

// unusableFlow has the toy flow's shape and fails every use: a run that touches the flow fails.
type unusableFlow struct{ *toyFlow }

func (unusableFlow) Encode(context.Context, []float64, []int) error {
	return errors.New("flow used: encode")
}
func (unusableFlow) Decode(context.Context, []int, []float64) error {
	return errors.New("flow used: decode")
}
func (unusableFlow) FineTune(context.Context, []int, *rand.Rand) error {
	return errors.New("flow used: fine-tune")
}

// TestNoFlowNeverTouchesFlow: the no-flow ablation spends its budget on GA children screened by the GP without
// encoding, decoding or fine-tuning anything.
func TestNoFlowNeverTouchesFlow(t *testing.T) {
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	cfg.NoFlow = true
	sc := &toyScorer{}
	init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
	prob := Problem{Flow: unusableFlow{&toyFlow{t: toyT, v: toyV}}, Codec: toyCodec{}, Objective: memObjective{sc},
		Initial: init, Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
	o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background())
	if err != nil || res.Status != StatusBudgetSpent || sc.calls != cfg.Budget {
		t.Fatalf("status %v, %d calls, err %v; want the budget spent", res.Status, sc.calls, err)
	}
	bad := cfg
	bad.Offspring = 0
	if _, err := NewOptimizer(bad, prob, rand.NewPCG(1, 1), nil); err == nil {
		t.Error("NoFlow without offspring was accepted")
	}
}

// runRecorded runs an optimiser of cfg on prob (seed 1) to its end and returns what it recorded.
func runRecorded(t *testing.T, cfg Config, prob Problem) *recorder {
	t.Helper()
	rec := &recorder{}
	o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec
}

// kindRules forbid molecules with token 3 (kind "three") or token 5 (kind "five") and name the kinds.
type kindRules struct{}

func (kindRules) Check(_ context.Context, why, smiles []string) error {
	for i, s := range smiles {
		switch {
		case strings.Contains("."+s, ".3."):
			why[i] = "token 3"
		case strings.Contains("."+s, ".5."):
			why[i] = "token 5"
		default:
			why[i] = ""
		}
	}
	return nil
}

func (kindRules) Kind(why string) string {
	return map[string]string{"token 3": "three", "token 5": "five"}[why]
}

// TestRulesFilteredByKind: rules that name kinds (RuleKinds) have the filtered candidates counted by kind, the
// counts summing to Filtered each iteration, in both variants.
func TestRulesFilteredByKind(t *testing.T) {
	for _, tc := range bothVariants() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toyConfig("")
			tc.mod(&cfg)
			rec := &recorder{}
			init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
			prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}}, Initial: init,
				Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}, Rules: kindRules{}}
			o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			total := map[string]int{}
			for _, p := range rec.log {
				sum := 0
				for k, n := range p.FilteredBy {
					sum += n
					total[k] += n
				}
				if sum != p.Filtered {
					t.Errorf("iteration %d: filtered %d, by kind %v", p.Iteration, p.Filtered, p.FilteredBy)
				}
			}
			if total["three"] == 0 || total["five"] == 0 || total[""] != 0 {
				t.Errorf("filtered by kind over the run: %v, want both kinds and no other", total)
			}
		})
	}
}
