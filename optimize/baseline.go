package optimize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/objective/metrics"

	"github.com/nfbo/nfbo/baseline"
	"github.com/nfbo/nfbo/chem/graphga"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/internal/cpuclock"
	"github.com/nfbo/nfbo/rundir"
)

// baselineRun is what "nfbo optimize -method prior|ga" shares with the NF-BO
// path: the same initial molecules, the same budgeted objective and log,
// the same flow (for the prior) and the same run directory.
type baselineRun struct {
	args      Args
	info      rundir.Info
	start     time.Time
	cpu0      time.Duration // the process's CPU time at start (internal/cpuclock)
	budget    *objective.Budget
	initCalls int
	mols      []molfile.Molecule
	voc       *vocab.Vocab
	flow      *seqflow.Flow
	t         int // sequence length of the run
	calls     int // paid calls left for the method after the initial molecules
	hasScores bool
	offspring int // molecules per generation (GA) or batch (prior): anchors × queries
	canon     objective.Canonicalizer
}

// runBaseline runs a baseline to the end of its budget. Baselines keep no
// state but their random stream: a resumed run replays from the start, and
// every molecule it already paid for is answered from the budget's cache.
func runBaseline(ctx context.Context, s Streams, r baselineRun) error {
	a := r.args
	codec := selfiesCodec{enc: selfies.NewEncoder(selfies.DefaultConstraints()), dec: selfies.NewDecoder(selfies.DefaultConstraints())}
	init := make([]baseline.Scored, 0, len(r.mols))
	for _, m := range r.mols {
		init = append(init, baseline.Scored{SELFIES: r.voc.DecodeString(m.IDs[:r.t]), SMILES: m.Key, Score: r.info.Gain(m.Score)})
	}
	rng := rand.New(rand.NewPCG(a.Seed, 0x62617365))
	rec := baselinePrinter{w: s.Stdout, total: r.calls}
	obj := newBudgetObjective(r.budget, r.initCalls, r.info, initScores(r.mols, r.hasScores))
	batch := max(r.offspring, 1)
	var pool []baseline.Scored
	var err error
	switch a.Method {
	case "ga", "graph-ga":
		ga, line := newGA(a, batch, codec, rng, rec)
		fmt.Fprintf(s.Stderr, "%s: task %s, %s, %d initial molecules, budget %d new calls, seed %d, run directory %s\n",
			a.command(), a.Task, line, len(init), r.calls, a.Seed, a.Out)
		pool, err = ga.Run(ctx, obj, init, r.calls)
	case "prior":
		ps := &priorSampler{flow: r.flow, voc: r.voc, rng: rng}
		p := &baseline.Prior{Sampler: ps, Codec: codec, Batch: batch, Recorder: rec}
		fmt.Fprintf(s.Stderr, "%s: task %s, random samples from the flow's prior (batches of %d, T=%d), "+
			"%d initial molecules, budget %d new calls, seed %d, run directory %s\n",
			a.command(), a.Task, batch, r.t, len(init), r.calls, a.Seed, a.Out)
		pool, err = p.Run(ctx, obj, init, r.calls)
	default:
		return fmt.Errorf("optimize: unknown method %q", a.Method)
	}
	info := r.info
	info.Initial = len(r.mols)
	info.InitialScores = nil // a resumed run's run.json holds them already
	if r.hasScores {
		for _, m := range r.mols {
			info.InitialScores = append(info.InitialScores, m.Score)
		}
	}
	info.Seconds += time.Since(r.start).Seconds()
	info.CPUSeconds += cpuclock.Since(r.cpu0).Seconds()
	info.Calls = r.budget.Calls()
	info.Finished = err == nil || errors.Is(err, baseline.ErrNoProgress)
	info.Error = ""
	if a.ask != nil && errors.Is(err, objective.ErrAwaitingScores) {
		// The baselines keep no checkpoint: the next ask replays them from their seed to the same batch.
		return a.ask.stop(a.Out, info)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		info.Error = err.Error()
	}
	if werr := rundir.WriteInfo(a.Out, info); werr != nil {
		return errors.Join(err, werr)
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(s.Stderr, "%s: interrupted after %d paid calls (%d for the initial molecules, %d by %s); "+
			"continue with the same command and -resume\n", a.command(), r.budget.Calls(), r.initCalls, obj.Calls(), a.Method)
		return err
	}
	if err != nil && !errors.Is(err, baseline.ErrNoProgress) {
		return fmt.Errorf("optimize: %s: %w (the run directory %s can be resumed with -resume)", a.Method, err, a.Out)
	}
	y, smiles := make([]float64, len(pool)), make([]string, len(pool))
	for i, m := range pool {
		y[i], smiles[i] = m.Score, m.SMILES
	}
	status := fmt.Sprintf("%s finished, %d new molecules evaluated (+%d initial calls)", a.Method, obj.Calls(), r.initCalls)
	if err != nil {
		status = fmt.Sprintf("%s stopped early: %v; %d new molecules evaluated", a.Method, err, obj.Calls())
	}
	initBest := math.Inf(-1)
	for _, m := range r.mols {
		initBest = max(initBest, info.Gain(m.Score))
	}
	return printResults(ctx, s.Stdout, r.canon, a.Out, info, status, y, smiles, initialNames(r.mols), initBest)
}

// newGA returns the GA of -method ga (our GA of the tables: population 100, min(batch, 100) children, SELFIES
// moves unless -crossover or -mutation say otherwise) or -method graph-ga (baseline.MolOptGraphGA with the graph
// moves, half the crossovers ring crossovers and every child of ZINC's sizes, graphga.ZINCSize, as in mol_opt's
// graph GA), and the line that describes it.
func newGA(a Args, batch int, codec selfiesCodec, rng *rand.Rand, rec baseline.Recorder) (*baseline.GA, string) {
	ga := &baseline.GA{
		Config:   baseline.GAConfig{Population: 100, Offspring: min(batch, 100)},
		Alphabet: selfies.SemanticRobustAlphabet(selfies.DefaultConstraints()),
		Codec:    codec,
		Rand:     rng,
		Recorder: rec,
	}
	cross, mutation := cmp.Or(a.Crossover, "selfies"), cmp.Or(a.Mutation, "selfies")
	what := "GA on SELFIES"
	var size *graphga.SizeRule // the graph GA's children keep ZINC's sizes, as mol_opt's do
	if a.Method == "graph-ga" {
		ga.Config = baseline.MolOptGraphGA()
		cross, mutation = cmp.Or(a.Crossover, "graph+rings"), cmp.Or(a.Mutation, "graph")
		size = graphga.ZINCSize()
		what = fmt.Sprintf("graph GA with mol_opt's settings (mutation rate %g, parents by score, children of %g ± %g heavy atoms)",
			ga.Config.MutationRate, size.Mean, size.SD)
	}
	if graph, rings := crossoverGraph(cross); graph {
		ga.Crosser = &graphga.Crosser{Rings: rings, Size: size}
	}
	if m, _ := parseMutation(mutation); m.graph {
		ga.Mutator = &graphga.Mutator{Size: size, Fuse: m.fused}
	}
	return ga, fmt.Sprintf("%s (population %d, %d children per generation, robust alphabet, %s crossover, %s mutation)",
		what, ga.Config.Population, ga.Config.Offspring, cross, mutation)
}

// selfiesCodec is baseline.Codec over one reused selfies encoder and decoder.
type selfiesCodec struct {
	enc *selfies.Encoder
	dec *selfies.Decoder
}

func (c selfiesCodec) Decode(s string) (string, error) { return c.dec.Decode(s) }
func (c selfiesCodec) Encode(s string) (string, error) { return c.enc.Encode(s) }
func (selfiesCodec) Split(s string) ([]string, error)  { return selfies.Split(s) }

// priorSampler decodes latents z ~ N(0, I) of size T·F with the flow.
type priorSampler struct {
	flow *seqflow.Flow
	voc  *vocab.Vocab
	rng  *rand.Rand
}

// SamplePrior implements baseline.PriorSampler.
func (s *priorSampler) SamplePrior(ctx context.Context, n int) ([]string, error) {
	t, f := s.flow.Shape()
	z := make([]float64, n*t*f)
	for i := range z {
		z[i] = s.rng.NormFloat64()
	}
	ids := make([]int, n*t)
	if err := s.flow.Decode(ctx, ids, z); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = s.voc.DecodeString(ids[i*t : (i+1)*t])
	}
	return out, nil
}

// baselinePrinter prints one progress line per generation or batch.
type baselinePrinter struct {
	w     io.Writer
	total int
}

// Record implements baseline.Recorder.
func (p baselinePrinter) Record(g baseline.Progress) {
	fmt.Fprintf(p.w, "iter %d calls %d/%d best %s proposed %d new %d dup %d invalid %d\n",
		g.Iteration, g.Calls, p.total, metrics.FormatScore(g.Best, 4), g.Proposed, g.New, g.Duplicate, g.Invalid)
}
