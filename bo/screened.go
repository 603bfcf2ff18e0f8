package bo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/rundir"
)

// ScreenedSettings are the screened variant's own settings: an exact GP on the molecules' features, refitted
// after every iteration, choosing among decoded candidates and GA children.
type ScreenedSettings struct {
	Offspring int // children of the best molecules added to each anchor's candidates
	// NoFlow (with Offspring) proposes no latent candidates: the GP picks among the GA children alone, and the
	// flow is neither encoded, decoded nor fine-tuned. An ablation: what the flow adds.
	NoFlow bool `json:",omitempty"`
	// CandidateTarget, if positive, decodes each anchor's candidates a chunk at a time and stops once this many
	// were new molecules; 0 decodes all Candidates. A lever against decoding thousands of molecules already
	// seen (issue #32); the guacamol-500 and pmo presets' screened variant decodes until 100 are new (Preset.Screened).
	CandidateTarget int `json:",omitempty"`
	// GraphCrossover makes the GA children's crossovers join fragments of the two parent molecules' graphs
	// (Crosser, which the Codec must implement: chem/graphga's cut at a single bond outside rings) rather than
	// cut and join their token sequences, whose tails change meaning in another context. The guacamol-500 and
	// pmo presets set it (Preset.Screened).
	GraphCrossover bool `json:",omitempty"`
	// GraphMutation makes the GA children's mutations edits of the molecular graph (Mutator, which the Codec must
	// implement: chem/graphga's insert, delete or change an atom or bond, or close a ring) rather than one token
	// replaced, inserted or deleted; a child no graph edit can change takes the token mutation. The guacamol-500
	// and pmo presets set it (Preset.Screened).
	GraphMutation bool `json:",omitempty"`
	// SymbolMutations is, with GraphMutation, the share of the GA children that take the symbol mutation instead
	// of a graph edit: the graph edits write only C, N, O, F, S, Cl and Br, SELFIES' alphabet any element of the
	// vocabulary (phosphorus where a formula asks for it; BENCHMARKS.md, "The GA children's SELFIES mutation where
	// the default stalls"). 0 mutates every child as a graph.
	SymbolMutations float64 `json:",omitempty"`
	// FusedRings lets GraphMutation's ring closures also close a ring fused to one the molecule has (an ortho
	// substituent cyclised; chem/graphga.Mutator.Fuse): the graph GA's close only chains of atoms in no ring, so
	// a fused ring system the data do not hold is out of its reach.
	FusedRings bool `json:",omitempty"`
	// Spread scales the Thompson samples' deviations from the posterior mean: 1 (or 0) draws from the posterior
	// as Thompson sampling does; below 1 leans the picks toward the mean, greedier, above 1 toward the uncertain.
	Spread float64 `json:",omitempty"`
	// RankTargets fits the GP to the normal scores of the scores' ranks among all the run's scores
	// (gp.NormalScores) instead of the scores: its picks then follow their order, not the gaps between them.
	RankTargets bool           `json:",omitempty"`
	MaxFitData  int            // the GP learns from at most this many points (best half, newest half); if 0, 1000
	Exact       gp.ExactConfig // the GP's settings; its kernel is the one Inputs names, where they name one
	// Inputs names what the GP reads (token counts, Morgan fingerprints, or both) and so its kernel; the
	// guacamol-500 and pmo presets read both (Preset.Screened).
	Inputs SurrogateInputs `json:",omitempty"`
}

// ScreenedPreset is a preset's own settings for the screened variant (Preset.Screened).
type ScreenedPreset struct {
	// PaidInitial is how many of the preset's initial molecules the screened variant pays for when they come
	// without scores (pmo's random ZINC molecules): the first PaidInitial, the calls they spare going to the
	// optimiser (Preset.PaidBudget). 0 keeps InitialPoints.
	PaidInitial     int
	Queries         int             // Config.Queries
	TopK            int             // Config.TopK: the best molecules the flow is fine-tuned on
	NoveltyBand     NoveltyBand     // Config.NoveltyBand
	CandidateTarget int             // ScreenedSettings.CandidateTarget
	DistinctScores  bool            // Config.DistinctScores
	Ties            TieRule         // Config.Ties, with DistinctScores
	Inputs          SurrogateInputs // ScreenedSettings.Inputs
	GraphCrossover  bool            // ScreenedSettings.GraphCrossover
	GraphMutation   bool            // ScreenedSettings.GraphMutation
}

// ScreenedStats are the screened variant's counts of one iteration (Progress.Screened): how much of the decoding
// was not wasted, and who proposed the picks.
type ScreenedStats struct {
	// Decoded counts the latent candidates decoded and examined (C for each anchor the batch reached), and Novel
	// the distinct valid molecules new to the data among them.
	Decoded, Novel int
	// Spare counts the latent candidates decoded ahead for an anchor (ScreenedSettings.CandidateTarget) that it
	// never examined: decoding work beside Decoded.
	Spare int
	// FromFlow is, with offspring, how many of the picks were decoded latent candidates rather than GA children:
	// how much of the batch the flow proposed; -1 without offspring, where every pick is the flow's.
	FromFlow int
	// FlowTop and OffspringTop count, with offspring, the picks of each kind that scored above the tenth best
	// score before the batch (above every score while there are fewer than ten): which proposer raised the
	// Top-10 that PMO's AUC reads, beside how many picks each was given.
	FlowTop, OffspringTop int
}

// topK is the rank of the score that FlowTop and OffspringTop must beat: PMO's Top-10.
const topK = 10

// countTop sets FlowTop and OffspringTop from the batch's picks (fromFlow), their scores and the scores y before
// the batch.
func (st *ScreenedStats) countTop(fromFlow []bool, scores, y []float64) {
	bar := math.Inf(-1)
	if len(y) >= topK {
		top := slices.Clone(y)
		slices.SortFunc(top, func(a, b float64) int { return cmp.Compare(b, a) })
		bar = top[topK-1]
	}
	st.FlowTop, st.OffspringTop = 0, 0
	for i, s := range scores {
		switch {
		case !(s > bar):
		case fromFlow[i]:
			st.FlowTop++
		default:
			st.OffspringTop++
		}
	}
}

// DefaultOffspring is the screened variant's number of GA children added to each anchor's candidates.
const DefaultOffspring = 200

// ScreenedCandidates is the screened variant's default number of latent candidates per trust region.
const ScreenedCandidates = 1000

// screenedVariant is the Screened variant's rules (variantRules): it decodes every latent candidate first, drops
// the invalid ones and those already seen (by key and, with a Codec that is an Identifier, by identity: a
// molecule in another atom order is seen), adds ScreenedSettings.Offspring children of the best molecules
// (Breeder), and lets an exact GP on the molecules' features (TokenFeatures or Problem.Features), refitted on the
// data after every iteration, pick q new molecules per anchor by Thompson sampling of the latent function. Every
// pick is a new valid molecule, and the surrogate never needs re-encoding after a fine-tune, since its inputs do
// not depend on the flow.
type screenedVariant struct{}

// withDefaults implements variantRules: DefaultOffspring children and ScreenedCandidates candidates a region.
func (screenedVariant) withDefaults(c *Config) {
	if c.Offspring == 0 {
		c.Offspring = DefaultOffspring
	}
	if c.Candidates == 0 {
		// Every candidate is decoded before selection: the reference's 10,000 per region would cost
		// minutes of decoding per iteration on a CPU, and most of them decode to molecules already seen.
		c.Candidates = ScreenedCandidates
	}
}

// preset implements variantRules: the preset's ScreenedPreset over its Config.
func (screenedVariant) preset(c *Config, p Preset) {
	sp := p.Screened
	if sp.Queries != 0 {
		c.Queries = sp.Queries
	}
	if sp.TopK != 0 {
		c.TopK = sp.TopK
	}
	if sp.NoveltyBand != (NoveltyBand{}) {
		c.NoveltyBand = sp.NoveltyBand
	}
	if sp.CandidateTarget != 0 {
		c.CandidateTarget = sp.CandidateTarget
	}
	if sp.DistinctScores {
		c.DistinctScores = true
		c.Ties = sp.Ties
	}
	if sp.Inputs != "" {
		c.Inputs = sp.Inputs
	}
	if sp.GraphCrossover {
		c.GraphCrossover = true
	}
	if sp.GraphMutation {
		c.GraphMutation = true
	}
}

// paidInitial implements variantRules: ScreenedPreset.PaidInitial, else the preset's initial points.
func (screenedVariant) paidInitial(p Preset) int {
	if p.Screened.PaidInitial > 0 {
		return p.Screened.PaidInitial
	}
	return p.InitialPoints
}

// resolve implements variantRules.
func (screenedVariant) resolve(c *Config) error {
	if set := nonZeroFields(c.ReferenceSettings); len(set) > 0 {
		return fmt.Errorf("bo: config: %s: settings of the reference variant, given to the screened one", strings.Join(set, ", "))
	}
	s := &c.ScreenedSettings
	if s.MaxFitData == 0 {
		s.MaxFitData = 1000
	}
	if _, err := ParseSurrogateInputs(string(s.Inputs)); err != nil {
		return fmt.Errorf("bo: config: %w", err)
	}
	switch {
	case s.Offspring < 0:
		return fmt.Errorf("bo: config: Offspring = %d < 0", s.Offspring)
	case s.CandidateTarget < 0:
		return fmt.Errorf("bo: config: CandidateTarget = %d < 0", s.CandidateTarget)
	case s.NoFlow && s.Offspring <= 0:
		return fmt.Errorf("bo: config: NoFlow needs Offspring > 0: the GA children are then the only candidates")
	case !(s.SymbolMutations >= 0 && s.SymbolMutations <= 1):
		return fmt.Errorf("bo: config: SymbolMutations = %v outside [0, 1]", s.SymbolMutations)
	case s.SymbolMutations > 0 && !s.GraphMutation:
		return fmt.Errorf("bo: config: SymbolMutations = %v needs GraphMutation: without it every child takes the symbol mutation", s.SymbolMutations)
	case s.FusedRings && !s.GraphMutation:
		return errors.New("bo: config: FusedRings needs GraphMutation: the fused ring closure is a graph edit")
	case !(s.Spread >= 0) || math.IsInf(s.Spread, 1):
		return fmt.Errorf("bo: config: Spread = %v: want a finite value of 0 or more", s.Spread)
	}
	return nil
}

// own implements variantRules.
func (screenedVariant) own(c *Config) { c.ReferenceSettings = ReferenceSettings{} }

// newProposer implements variantRules: it needs the vocabulary and stop id, an alphabet for the children's
// mutations, and a Codec that can cross and mutate graphs when asked to; the exact GP reads token counts, or
// Problem.Features' vectors.
func (screenedVariant) newProposer(o *Optimizer) (proposer, Surrogate, error) {
	s, prob := o.cfg.ScreenedSettings, o.prob
	if prob.Vocab <= 0 || prob.Stop < 0 || prob.Stop >= prob.Vocab {
		return nil, nil, fmt.Errorf("bo: the screened variant needs the vocabulary size and stop id (got %d, %d)", prob.Vocab, prob.Stop)
	}
	if s.Offspring > 0 && len(prob.Alphabet) == 0 {
		return nil, nil, errors.New("bo: offspring need a mutation alphabet (Problem.Alphabet)")
	}
	if _, ok := prob.Codec.(Crosser); s.GraphCrossover && !ok {
		return nil, nil, errors.New("bo: GraphCrossover needs a Codec that implements bo.Crosser")
	}
	if _, ok := prob.Codec.(Mutator); s.GraphMutation && !ok {
		return nil, nil, errors.New("bo: GraphMutation needs a Codec that implements bo.Mutator")
	}
	d, fw := TokenFeatureLen(prob.Vocab), 0
	if prob.Features != nil {
		d, fw = prob.Features.Width(), prob.Features.Width()
	}
	exact, err := s.Inputs.exactConfig(s.Exact, fw, prob.Vocab)
	if err != nil {
		return nil, nil, err
	}
	if idr, ok := prob.Codec.(Identifier); ok {
		o.ident = idr.Identity
	}
	return &screenedProposer{o: o, s: s}, &ExactGPSurrogate{Config: exact, D: d}, nil
}

// screenedProposer is the screened variant's proposer.
type screenedProposer struct {
	o *Optimizer
	s ScreenedSettings
	// reads counts, per chunk, the anchors of the last batch that read it (lookahead.read): which chunks the
	// next batch decodes ahead. Only speed depends on it, so it is not checkpointed.
	reads []int
	alone bool // decode each anchor's chunks alone, never ahead (a test compares the picks)
	after bool // refit the surrogate after a fine-tune, never beside it (a test compares the runs)
}

// legacyScreenedStats reads the screened variant's counts from a pending batch (its gob payload) written before
// they had a type of their own, when the batch was at the top level; nil when there are none (a reference batch
// of that time has FromFlow −1 only, which nothing reads).
func legacyScreenedStats(payload []byte) *ScreenedStats {
	var old struct{ Candidates, Spare, Novel, FromFlow int }
	if gob.NewDecoder(bytes.NewReader(payload)).Decode(&old) != nil || old == (struct{ Candidates, Spare, Novel, FromFlow int }{}) {
		return nil
	}
	return &ScreenedStats{Decoded: old.Candidates, Novel: old.Novel, Spare: old.Spare, FromFlow: old.FromFlow}
}

// trainsFlow implements proposer: with NoFlow there is no flow to train.
func (p *screenedProposer) trainsFlow() bool { return !p.s.NoFlow }

// fitSet returns the indices of the points the token surrogate learns from: all of them, or when there are
// more than MaxFitData, the best MaxFitData/2 and the newest of the rest, so that the model knows both the
// region it exploits and where it has just been.
func (p *screenedProposer) fitSet() []int {
	o, maxFit := p.o, p.s.MaxFitData
	n := len(o.st.Y)
	if n <= maxFit {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := o.topK(maxFit / 2)
	in := make(map[int]bool, len(idx))
	for _, i := range idx {
		in[i] = true
	}
	for i := n - 1; i >= 0 && len(idx) < maxFit; i-- {
		if !in[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// features returns the screened surrogate's inputs for B = len(tokens)/T sequences, the molecules smiles (B keys):
// Problem.Features' vectors, or without it the token counts (B×W).
func (o *Optimizer) features(tokens []int, smiles []string) ([]float64, error) {
	if f := o.prob.Features; f != nil {
		x := make([]float64, len(smiles)*f.Width())
		if err := f.Features(x, smiles, tokens); err != nil {
			return nil, fmt.Errorf("bo: surrogate features: %w", err)
		}
		return x, nil
	}
	v := o.prob.Vocab
	x := make([]float64, len(tokens)/o.t*TokenFeatureLen(v))
	TokenFeatures(x, tokens, o.t, v, o.prob.Stop)
	return x, nil
}

// fitInitial implements proposer: the token surrogate's first fit, on the initial data.
func (p *screenedProposer) fitInitial(ctx context.Context) error { return p.fit(ctx) }

// learn implements proposer: the token surrogate is refitted after every batch that brought new molecules.
func (p *screenedProposer) learn(ctx context.Context, _ int) error { return p.fit(ctx) }

// learnsBeside implements proposer: the refit reads the molecules' features, not the flow, and the exact GP
// draws nothing.
func (p *screenedProposer) learnsBeside() bool { return !p.after }

// inputs implements proposer: the sequences' features (Optimizer.features).
func (p *screenedProposer) inputs(_ context.Context, tokens []int, smiles []string) ([]float64, error) {
	return p.o.features(tokens, smiles)
}

// novelty implements proposer: the novelty rule asks whether the box still yields new molecules, measured on
// every decoded candidate rather than on the picks.
func (p *screenedProposer) novelty(b *batch) (examined, fresh int) {
	if b.Screened == nil { // a pending batch of an nfbo that kept no counts
		return 0, 0
	}
	return b.Screened.Decoded, b.Screened.Novel
}

// propose implements proposer: the anchors' boxes, or with NoFlow only their share of the batch.
func (p *screenedProposer) propose(ctx context.Context, anchors []int) (*batch, error) {
	if p.s.NoFlow {
		// The anchors only share the batch out: each picks among children of its own.
		return p.proposeScreened(ctx, anchors, make([]float64, len(anchors)*p.o.d), nil)
	}
	centres, probs, err := p.o.anchorBoxes(ctx, anchors)
	if err != nil {
		return nil, err
	}
	return p.proposeScreened(ctx, anchors, centres, probs)
}

// fit refits the token surrogate on fitSet.
func (p *screenedProposer) fit(ctx context.Context) error {
	o := p.o
	idx := p.fitSet()
	y := make([]float64, len(idx))
	smiles := make([]string, len(idx))
	for k, i := range idx {
		y[k], smiles[k] = o.st.Y[i], o.st.SMILES[i]
	}
	x, err := o.features(o.gather(idx), smiles)
	if err != nil {
		return err
	}
	if p.s.RankTargets {
		rankedAmong(y, o.st.Y, idx)
	} else {
		y = o.targets(y)
	}
	if err := o.surr.Fit(ctx, x, y, 0, o.rng); err != nil {
		return fmt.Errorf("bo: surrogate fit: %w", err)
	}
	return nil
}

// rankedAmong writes into dst the normal scores (gp.NormalScores) of y[idx[k]] ranked among all of y, not among
// y[idx] alone: past MaxFitData the fit set is the best half and the newest, whose own ranks would spread a handful
// of near-equal best scores over the whole normal range. len(dst) must equal len(idx).
func rankedAmong(dst, y []float64, idx []int) {
	all := make([]float64, len(y))
	gp.NormalScores(all, y)
	for k, i := range idx {
		dst[k] = all[i]
	}
}

// proposeScreened draws C latent candidates per anchor (anchors, the data's rows) in its box, decodes them,
// keeps the distinct valid molecules new to the data and to the batch, adds Offspring children of the best
// molecules, and picks min(q, left) of them per anchor by Thompson sampling of the surrogate.
func (p *screenedProposer) proposeScreened(ctx context.Context, anchors []int, centres, probs []float64) (*batch, error) {
	o, s := p.o, p.s
	cfg, t, d := o.cfg, o.t, o.d
	n := len(centres) / d
	c, q := cfg.Candidates, cfg.Queries
	if s.NoFlow {
		c = 0
	}
	pts := o.boxCandidates(centres, probs, c)
	var start time.Time
	// The candidates are decoded as the anchors need them, as many anchors at once as the calls left can use
	// (all of them in an iteration the budget does not cap, one big batch for the GPU): the anchors a capped
	// batch never reaches cost nothing (the last iteration of a run often needs a handful of calls).
	var dec []int
	var lat []float64     // the latents of dec
	decoded, base := 0, 0 // anchors decoded so far; dec holds anchors base..decoded-1

	breeder, parents, parentRows := p.breeder()
	st := &ScreenedStats{FromFlow: -1}
	b := &batch{Proposed: n * q, Screened: st}
	var ahead *lookahead // with a CandidateTarget, the anchors' chunks decoded as they are read
	if c > 0 && s.CandidateTarget > 0 {
		ahead = newLookahead(pts, t, c, max(q, c/8), p.reads)
		ahead.alone = p.alone
		defer func() { p.reads, st.Spare = ahead.read, ahead.rows-st.Decoded }()
	}
	if s.Offspring > 0 {
		st.FromFlow = 0
	}
	left := cfg.Budget - o.Calls()
	pl := newPool(o, b)
	// reach returns the end of the anchors from a on that can still pick before the batch is full.
	reach := func(a int) int { return min(n, a+max((left-len(b.SMILES)+q-1)/q, 1)) }
	child := make([]int, t)
	for a := range n {
		if len(b.SMILES) >= left {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if a == decoded && c > 0 && s.CandidateTarget == 0 {
			o.phase("candidates")
			start = time.Now()
			base, decoded = a, reach(a)
			lat = slices.Grow(lat[:0], (decoded-base)*c*d)[:(decoded-base)*c*d]
			for b := base; b < decoded; b++ {
				pts.rows(lat[(b-base)*c*d:(b-base+1)*c*d], b, 0, c)
			}
			o.times.Candidates += time.Since(start)
			o.phase("decoding the candidates")
			start = time.Now()
			dec = slices.Grow(dec[:0], (decoded-base)*c*t)[:(decoded-base)*c*t]
			if err := o.prob.Flow.Decode(ctx, dec, lat); err != nil {
				return nil, fmt.Errorf("bo: decode candidates: %w", err)
			}
			o.times.Decode += time.Since(start)
			st.Decoded += (decoded - base) * c
		}
		o.phase("screening the candidates")
		start = time.Now()
		pl.reset()
		pl.from = origin{by: rundir.ByFlow, parent: anchors[a], other: -1}
		add := pl.add
		fromFlow := 0 // the pool's first fromFlow entries are decoded latent candidates, the rest offspring
		if s.CandidateTarget == 0 {
			for i := range c {
				r := (a-base)*c + i
				if add(dec[r*t : (r+1)*t]) {
					st.Novel++
				}
			}
		} else if ahead != nil { // nil without latent candidates (NoFlow)
			spent, err := p.decodeToTarget(ctx, ahead, a, reach(a), b, add)
			if err != nil {
				return nil, err
			}
			start = start.Add(spent) // the decoding is the Decode phase's, not the candidates'
		}
		fromFlow = len(pl.key)
		for range s.Offspring {
			pa, pc := breeder.Child(child, parents, o.rng)
			pl.from = origin{by: rundir.ByMutation, parent: parentRows[pa], other: -1}
			if pc >= 0 {
				pl.from = origin{by: rundir.ByCrossover, parent: parentRows[pa], other: parentRows[pc]}
			}
			add(child)
		}
		o.times.Candidates += time.Since(start)
		m := len(pl.key)
		if m == 0 {
			continue
		}
		pick, err := o.thompsonPicks(ctx, min(q, m, left-len(b.SMILES)), pl.tok, pl.key, b)
		if err != nil {
			return nil, fmt.Errorf("bo: anchor %d: %w", a, err)
		}
		for _, i := range pick {
			if st.FromFlow >= 0 {
				if i < fromFlow {
					st.FromFlow++
				}
				b.FromFlow = append(b.FromFlow, i < fromFlow)
			}
			pl.take(i)
		}
	}
	return b, nil
}

// breeder returns the GA's breeder of Offspring children, its parents' token rows and the parents' rows of the
// data, all nil without Offspring.
func (p *screenedProposer) breeder() (*Breeder, []int, []int) {
	o, s := p.o, p.s
	if s.Offspring <= 0 {
		return nil, nil, nil
	}
	breeder := &Breeder{Alphabet: o.prob.Alphabet, Stop: o.prob.Stop}
	idx, plateau := o.parentSet(100)
	parents := o.gather(idx)
	if plateau {
		// The scores rank nothing: breed as the graph GA does on equal scores (a uniform mating pool, every
		// child a crossover, ring crossovers too, few mutations), so that the children stay combinations of the
		// initial molecules' fragments (BENCHMARKS.md, "A plateau of zeros").
		breeder.Uniform, breeder.CrossoverRate, breeder.MutationRate = true, 1, plateauMutationRate
		breeder.Rings = s.GraphCrossover
	}
	if s.GraphCrossover {
		breeder.Crosser = o.prob.Codec.(Crosser)
		for _, i := range idx {
			breeder.Keys = append(breeder.Keys, o.st.SMILES[i])
		}
	}
	if s.GraphMutation {
		breeder.Mutator = o.prob.Codec.(Mutator)
		breeder.SymbolShare = s.SymbolMutations
		breeder.FusedRings = s.FusedRings
	}
	return breeder, parents, idx
}

// pool is one anchor's candidates as the screened variant gathers them: distinct valid molecules new to the
// data, to the batch and to the pool (by key, then by identity). take moves a picked molecule into the batch;
// reset empties the pool for the next anchor.
type pool struct {
	o     *Optimizer
	b     *batch
	canon []int
	tok   []int
	key   []string
	id    []string // identities, "" without an Identifier
	orig  []origin // how each was made
	from  origin   // how the molecules add is given now were made
	in    map[string]struct{}
	// inBatch holds what the batch holds so far, by key and identity.
	inBatch map[string]struct{}
}

func newPool(o *Optimizer, b *batch) *pool {
	return &pool{o: o, b: b, canon: make([]int, o.t), inBatch: make(map[string]struct{})}
}

func (pl *pool) reset() {
	pl.tok, pl.key, pl.id, pl.orig = nil, nil, nil, nil
	pl.in = make(map[string]struct{})
}

// add adds the molecule of token row seq to the pool, or counts why not in the batch's statistics.
func (pl *pool) add(seq []int) bool {
	o, b := pl.o, pl.b
	s, ok := o.prob.Codec.Canonical(pl.canon, seq)
	if !ok {
		b.Invalid++
		return false
	}
	// By key first, which finds most duplicates without computing an identity.
	dup := holds(o.seen, s) || holds(pl.inBatch, s) || holds(pl.in, s)
	id := ""
	if !dup {
		id = o.identity(s)
		dup = id != "" && (holds(o.seen, id) || holds(pl.inBatch, id) || holds(pl.in, id))
	}
	if dup {
		b.Duplicate++
		return false
	}
	remember(pl.in, s, id)
	pl.tok = append(pl.tok, pl.canon...)
	pl.key = append(pl.key, s)
	pl.id = append(pl.id, id)
	pl.orig = append(pl.orig, pl.from)
	return true
}

// take moves pool entry i into the batch.
func (pl *pool) take(i int) {
	t, b := pl.o.t, pl.b
	remember(pl.inBatch, pl.key[i], pl.id[i])
	b.Tokens = append(b.Tokens, pl.tok[i*t:(i+1)*t]...)
	b.SMILES = append(b.SMILES, pl.key[i])
	b.Origins = append(b.Origins, pl.orig[i].origin(pl.o.st.SMILES))
}

// origin is how a pool's molecule was made: by a move of rundir.Origin's, from the data's rows parent and other
// (−1 for none).
type origin struct {
	by            string
	parent, other int
}

// origin returns o as the evaluation log keeps it, the parents named by their keys in smiles (the data's).
func (o origin) origin(smiles []string) rundir.Origin {
	r := rundir.Origin{By: o.by, Parents: []string{smiles[o.parent]}}
	if o.other >= 0 {
		r.Parents = append(r.Parents, smiles[o.other])
	}
	return r
}

// decodeToTarget offers anchor a's decoded latent candidates to add a chunk at a time, decoding them through l
// (with the later anchors up to reach, those the batch can still reach), until ScreenedSettings.CandidateTarget of
// them were new molecules or all are offered: when most candidates decode to molecules already seen, the anchor
// reads them all as before; when most are new, it stops early. It returns the time spent decoding (also added
// to the Decode phase).
func (p *screenedProposer) decodeToTarget(ctx context.Context, l *lookahead, a, reach int, b *batch, add func([]int) bool) (time.Duration, error) {
	o := p.o
	t := o.t
	novel := 0
	var spent time.Duration
	for j := 0; j < l.k && novel < p.s.CandidateTarget; j++ {
		o.phase("decoding the candidates")
		dec, took, err := l.chunkOf(ctx, o.prob.Flow, a, j, reach)
		spent += took
		o.times.Decode += took
		if err != nil {
			return spent, err
		}
		m := len(dec) / t
		b.Screened.Decoded += m
		for i := range m {
			if add(dec[i*t : (i+1)*t]) {
				b.Screened.Novel++
				novel++
			}
		}
	}
	return spent, nil
}

// thompsonPicks returns k candidates of the pool (poolTok, poolKey) by Thompson sampling of the surrogate, or
// uniformly at random while every score is equal, among those the rules allow when there are rules (counting
// those it found disallowed in b.Filtered).
func (o *Optimizer) thompsonPicks(ctx context.Context, k int, poolTok []int, poolKey []string, b *batch) ([]int, error) {
	m := len(poolKey)
	o.phase("Thompson sampling")
	start := time.Now()
	defer func() { o.times.Thompson += time.Since(start) }()
	samples := make([]float64, k*m)
	if flat(o.st.Y) {
		// Every score is equal (an objective that scores 0 until a molecule holds a substructure): the surrogate
		// has learnt nothing, and its samples would favour the candidates least like the data, the odd ones.
		// Independent uniform values make the picks a uniform draw from the pool, as the graph GA evaluates
		// its children unranked (BENCHMARKS.md, "A plateau of zeros").
		for i := range samples {
			samples[i] = o.rng.Float64()
		}
	} else {
		x, err := o.features(poolTok, poolKey)
		if err != nil {
			return nil, err
		}
		if err := o.surr.Sample(ctx, samples, x, k, o.rng); err != nil {
			return nil, fmt.Errorf("bo: Thompson sampling: %w", err)
		}
		if err := o.spread(samples, x, m); err != nil {
			return nil, err
		}
	}
	pick := make([]int, k)
	if o.prob.Rules == nil {
		ThompsonSelect(pick, samples, m)
		return pick, nil
	}
	pick, dropped, err := o.selectAllowed(ctx, pick, samples, poolKey)
	for _, i := range dropped {
		b.filtered(o, poolKey[i])
	}
	return pick, err
}

// A predictor gives the surrogate's posterior mean at C points z (C×D) in mean (C).
type predictor interface {
	Predict(mean, z []float64)
}

// spread scales the deviations of the joint samples (S×m) from the posterior mean at the m candidates x by
// ScreenedSettings.Spread; at 1 (or 0) it leaves them as drawn.
func (o *Optimizer) spread(samples, x []float64, m int) error {
	a := o.cfg.Spread
	if a == 0 || a == 1 {
		return nil
	}
	p, ok := o.surr.(predictor)
	if !ok {
		return fmt.Errorf("bo: Spread %v needs a surrogate with a posterior mean (%T has none)", a, o.surr)
	}
	mean := make([]float64, m)
	p.Predict(mean, x)
	for i := range samples {
		mu := mean[i%m]
		samples[i] = mu + a*(samples[i]-mu)
	}
	return nil
}

// flat reports whether every score in y is the same.
func flat(y []float64) bool {
	for _, v := range y[min(1, len(y)):] {
		if v != y[0] {
			return false
		}
	}
	return true
}

// selectAllowed is ThompsonSelect among the candidates keys that Problem.Rules allow: sample k picks the
// highest-valued allowed candidate not picked by samples 0..k−1. The rules are asked lazily, about each sample's
// best candidates first, in a few batches, not about the whole pool: a joint sample restricted to the allowed
// candidates is a joint sample of them, so this picks what filtering the pool first would, at the cost of
// judging tens of molecules instead of thousands. It returns the picks (fewer than len(dst) when too few
// candidates are allowed) and the candidates it found disallowed, in increasing order.
func (o *Optimizer) selectAllowed(ctx context.Context, dst []int, samples []float64, keys []string) ([]int, []int, error) {
	m, q := len(keys), len(dst)
	order := make([][]int, q) // each sample's candidates, best first
	for k := range q {
		row := samples[k*m : (k+1)*m]
		idx := make([]int, m)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case row[a] > row[b]:
				return -1
			case row[a] < row[b]:
				return 1
			}
			return 0
		})
		order[k] = idx
	}
	dropped := map[int]bool{}
	for depth := min(4, m); ; depth = min(4*depth, m) {
		var ask []string
		for k := range q {
			for _, i := range order[k][:depth] {
				ask = append(ask, keys[i])
			}
		}
		if err := o.judge(ctx, ask); err != nil {
			return nil, nil, err
		}
		taken := make([]bool, m)
		picks := dst[:0]
		complete := true
	samples:
		for k := range q {
			for _, i := range order[k] {
				switch {
				case taken[i]:
					continue
				case !o.judged(keys[i]):
					complete = false // deeper than judged so far: judge more, and select again
					break samples
				case !o.isAllowed(keys[i]):
					dropped[i] = true
					continue
				}
				taken[i] = true
				picks = append(picks, i)
				continue samples
			}
			break // no allowed candidate left for this sample, nor for the later ones
		}
		if complete || depth == m {
			out := slices.Sorted(maps.Keys(dropped))
			return picks, out, nil
		}
	}
}
