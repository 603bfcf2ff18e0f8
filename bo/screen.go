package bo

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// fitSet returns the indices of the points the token surrogate learns from: all of them, or when there are
// more than MaxFitData, the best MaxFitData/2 and the newest of the rest, so that the model knows both the
// region it exploits and where it has just been.
func (p *tokenProposer) fitSet() []int {
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
func (p *tokenProposer) fitInitial(ctx context.Context) error { return p.fit(ctx) }

// learn implements proposer: the token surrogate is refitted after every batch that brought new molecules.
func (p *tokenProposer) learn(ctx context.Context, _ int) error {
	o := p.o
	o.phase("fitting the surrogate")
	start := time.Now()
	err := p.fit(ctx)
	o.times.Surrogate += time.Since(start)
	return err
}

// inputs implements proposer: the sequences' features (Optimizer.features).
func (p *tokenProposer) inputs(_ context.Context, tokens []int, smiles []string) ([]float64, error) {
	return p.o.features(tokens, smiles)
}

// novelty implements proposer: the novelty rule asks whether the box still yields new molecules, measured on
// every decoded candidate rather than on the picks.
func (p *tokenProposer) novelty(b *batch) (examined, fresh int) { return b.Candidates, b.Novel }

// propose implements proposer: the anchors' boxes, or with NoFlow only their share of the batch.
func (p *tokenProposer) propose(ctx context.Context, anchors []int) (*batch, error) {
	if p.s.NoFlow {
		// The anchors only share the batch out: each picks among children of its own.
		return p.proposeScreened(ctx, make([]float64, len(anchors)*p.o.d), nil)
	}
	centres, probs, err := p.o.anchorBoxes(ctx, anchors)
	if err != nil {
		return nil, err
	}
	return p.proposeScreened(ctx, centres, probs)
}

// fit refits the token surrogate on fitSet.
func (p *tokenProposer) fit(ctx context.Context) error {
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
	if err := o.surr.Fit(ctx, x, o.targets(y), 0, o.rng); err != nil {
		return fmt.Errorf("bo: surrogate fit: %w", err)
	}
	return nil
}

// proposeScreened draws C latent candidates per anchor in its box, decodes them, keeps the distinct valid
// molecules new to the data and to the batch, adds Offspring children of the best molecules and the Library
// molecules of Problem.Library nearest one of them, and picks min(q, left) of them per anchor by Thompson
// sampling of the token surrogate (LibraryPicks of them among the library's).
func (p *tokenProposer) proposeScreened(ctx context.Context, centres, probs []float64) (*batch, error) {
	o, s := p.o, p.s
	cfg, t, d := o.cfg, o.t, o.d
	n := len(centres) / d
	c, q := cfg.Candidates, cfg.Queries
	if s.NoFlow {
		c = 0
	}
	lat := o.boxCandidates(centres, probs, c)
	var start time.Time
	// The candidates are decoded as the anchors need them, as many anchors at once as the calls left can use
	// (all of them in an iteration the budget does not cap, one big batch for the GPU): the anchors a capped
	// batch never reaches cost nothing (the last iteration of a run often needs a handful of calls).
	var dec []int
	decoded, base := 0, 0 // anchors decoded so far; dec holds anchors base..decoded-1

	breeder, parents := p.breeder()
	var near [][]int // near[a]: rows of libTok nearest the a-th best molecule, for anchor a
	var libTok []int
	if s.Library > 0 {
		var err error
		if libTok, near, err = p.libraryNeighbours(o.parentSet(n), s.Library); err != nil {
			return nil, err
		}
	}
	b := &batch{Proposed: n * q, FromFlow: -1}
	var ahead *lookahead // with a CandidateTarget, the anchors' chunks decoded as they are read
	if c > 0 && s.CandidateTarget > 0 {
		ahead = newLookahead(lat, t, d, c, max(q, c/8), p.reads)
		ahead.alone = p.alone
		defer func() { p.reads, b.Spare = ahead.read, ahead.rows-b.Candidates }()
	}
	if s.Offspring > 0 {
		b.FromFlow = 0
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
			o.phase("decoding the candidates")
			start = time.Now()
			base, decoded = a, reach(a)
			dec = slices.Grow(dec[:0], (decoded-base)*c*t)[:(decoded-base)*c*t]
			if err := o.prob.Flow.Decode(ctx, dec, lat[base*c*d:decoded*c*d]); err != nil {
				return nil, fmt.Errorf("bo: decode candidates: %w", err)
			}
			o.times.Decode += time.Since(start)
			b.Candidates += (decoded - base) * c
		}
		o.phase("screening the candidates")
		start = time.Now()
		pl.reset()
		add := pl.add
		fromFlow := 0 // the pool's first fromFlow entries are decoded latent candidates, the rest offspring
		if s.CandidateTarget == 0 {
			for i := range c {
				r := (a-base)*c + i
				if add(dec[r*t : (r+1)*t]) {
					b.Novel++
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
			breeder.Child(child, parents, o.rng)
			add(child)
		}
		fromLib := len(pl.key) // the pool's entries from here on are library molecules
		if near != nil {
			for _, r := range near[a%len(near)] {
				add(libTok[r*t : (r+1)*t])
			}
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
		if s.LibraryPicks > 0 && m > fromLib {
			if pick, err = p.reserveLibrary(ctx, pick, fromLib, pl.tok, pl.key, b); err != nil {
				return nil, fmt.Errorf("bo: anchor %d: %w", a, err)
			}
		}
		for _, i := range pick {
			if i < fromFlow && b.FromFlow >= 0 {
				b.FromFlow++
			}
			if i >= fromLib {
				b.FromLibrary++
			}
			pl.take(i)
		}
	}
	return b, nil
}

// breeder returns the GA's breeder of Offspring children and its parents' token rows, both nil without
// Offspring.
func (p *tokenProposer) breeder() (*Breeder, []int) {
	o, s := p.o, p.s
	if s.Offspring <= 0 {
		return nil, nil
	}
	breeder := &Breeder{Alphabet: o.prob.Alphabet, Stop: o.prob.Stop}
	idx := o.parentSet(100)
	parents := o.gather(idx)
	if s.GraphCrossover {
		breeder.Crosser, breeder.Rings = o.prob.Codec.(Crosser), s.CrossoverRings
		for _, i := range idx {
			breeder.Keys = append(breeder.Keys, o.st.SMILES[i])
		}
	}
	if s.GraphMutation {
		breeder.Mutator = o.prob.Codec.(Mutator)
	}
	return breeder, parents
}

// pool is one anchor's candidates as the screened variant gathers them: distinct valid molecules new to the
// data, to the batch and to the pool (by key, then by identity), and with SkipVariants, once the objective has
// scored variants alike, no variant of a paid molecule or of one already in the batch or the pool. take moves
// a picked molecule into the batch; reset empties the pool for the next anchor.
type pool struct {
	o     *Optimizer
	b     *batch
	canon []int
	tok   []int
	key   []string
	id    []string // identities, "" without an Identifier
	in    map[string]struct{}
	vars  map[string]struct{}
	// inBatch and batchVars hold what the batch holds so far, by key and identity and by variant key (with
	// varKey, SkipVariants's key; nil without it).
	inBatch, batchVars map[string]struct{}
	varKey             func(string) string
}

func newPool(o *Optimizer, b *batch) *pool {
	pl := &pool{o: o, b: b, canon: make([]int, o.t), inBatch: make(map[string]struct{})}
	if o.vars != nil && o.vars.blind() {
		pl.varKey, pl.batchVars = o.vars.key, make(map[string]struct{})
	}
	return pl
}

func (pl *pool) reset() {
	pl.tok, pl.key, pl.id = nil, nil, nil
	pl.in, pl.vars = make(map[string]struct{}), make(map[string]struct{})
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
	if pl.varKey != nil {
		vk := pl.varKey(s)
		_, in := pl.batchVars[vk]
		if _, pooled := pl.vars[vk]; in || pooled || o.vars.paid(vk) {
			b.Variants++
			return false
		}
		pl.vars[vk] = struct{}{}
	}
	remember(pl.in, s, id)
	pl.tok = append(pl.tok, pl.canon...)
	pl.key = append(pl.key, s)
	pl.id = append(pl.id, id)
	return true
}

// take moves pool entry i into the batch.
func (pl *pool) take(i int) {
	t, b := pl.o.t, pl.b
	remember(pl.inBatch, pl.key[i], pl.id[i])
	if pl.varKey != nil {
		pl.batchVars[pl.varKey(pl.key[i])] = struct{}{}
	}
	b.Tokens = append(b.Tokens, pl.tok[i*t:(i+1)*t]...)
	b.SMILES = append(b.SMILES, pl.key[i])
}

// decodeToTarget offers anchor a's decoded latent candidates to add a chunk at a time, decoding them through l
// (with the later anchors up to reach, those the batch can still reach), until TokenSettings.CandidateTarget of
// them were new molecules or all are offered: when most candidates decode to molecules already seen, the anchor
// reads them all as before; when most are new, it stops early. It returns the time spent decoding (also added
// to the Decode phase).
func (p *tokenProposer) decodeToTarget(ctx context.Context, l *lookahead, a, reach int, b *batch, add func([]int) bool) (time.Duration, error) {
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
		b.Candidates += m
		for i := range m {
			if add(dec[i*t : (i+1)*t]) {
				b.Novel++
				novel++
			}
		}
	}
	return spent, nil
}

// boxCandidates returns c latent candidates per anchor (N·C×D), Sobol or uniform points in each anchor's
// trust-region box perturbed as TACS's probabilities say; none when c is 0.
func (o *Optimizer) boxCandidates(centres, probs []float64, c int) []float64 {
	t, d := o.t, o.d
	n := len(centres) / d
	o.phase("candidates")
	start := time.Now()
	lat := make([]float64, n*c*d)
	if c > 0 {
		draw := o.pointDrawer()
		unit := make([]float64, c*d)
		half := 8 * o.st.TR.Length / 2
		for a := range n {
			draw(unit, c)
			Perturb(lat[a*c*d:(a+1)*c*d], centres[a*d:(a+1)*d], half, probs[a*t:(a+1)*t], o.f, unit, o.rng)
		}
	}
	o.times.Candidates += time.Since(start)
	return lat
}

// thompsonPicks returns k candidates of the pool (poolTok, poolKey) by Thompson sampling of the surrogate, among
// those the rules allow when there are rules (counting those it found disallowed in b.Filtered).
func (o *Optimizer) thompsonPicks(ctx context.Context, k int, poolTok []int, poolKey []string, b *batch) ([]int, error) {
	m := len(poolKey)
	o.phase("Thompson sampling")
	start := time.Now()
	defer func() { o.times.Thompson += time.Since(start) }()
	samples := make([]float64, k*m)
	x, err := o.features(poolTok, poolKey)
	if err != nil {
		return nil, err
	}
	if err := o.surr.Sample(ctx, samples, x, k, o.rng); err != nil {
		return nil, fmt.Errorf("bo: Thompson sampling: %w", err)
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

// LibrarySample is how many library molecules per library candidate an iteration draws to find the neighbours of
// the best molecules among (TokenSettings.Library): a random draw of the library, so that the cost does not grow
// with its size, and new neighbours come each iteration.
const LibrarySample = 50

// libraryNeighbours draws LibrarySample×k molecules of Problem.Library, keeps the valid ones not yet paid for, and
// returns their canonical tokens and, for each of the molecules best (data indices), the k of them most similar to
// it by minMaxSimilarity on the surrogate's inputs (Morgan and token counts, non-negative).
func (p *tokenProposer) libraryNeighbours(best []int, k int) ([]int, [][]int, error) {
	o, t := p.o, p.o.t
	lib := o.prob.Library
	rows := len(lib) / t
	canon := make([]int, t)
	var tok []int
	var keys []string
	drawn := make(map[string]struct{})
	for range LibrarySample * k {
		r := o.rng.IntN(rows)
		key, ok := o.prob.Codec.Canonical(canon, lib[r*t:(r+1)*t])
		if !ok || holds(o.seen, key) || holds(drawn, key) {
			continue
		}
		drawn[key] = struct{}{}
		tok = append(tok, canon...)
		keys = append(keys, key)
	}
	if len(keys) == 0 || len(best) == 0 {
		return nil, nil, nil
	}
	x, err := o.features(tok, keys)
	if err != nil {
		return nil, nil, err
	}
	bestKeys := make([]string, len(best))
	for i, j := range best {
		bestKeys[i] = o.st.SMILES[j]
	}
	ref, err := o.features(o.gather(best), bestKeys)
	if err != nil {
		return nil, nil, err
	}
	w := len(x) / len(keys)
	sim := make([]float64, len(keys))
	order := make([]int, len(keys))
	near := make([][]int, len(best))
	for i := range best {
		for j := range keys {
			sim[j] = minMaxSimilarity(ref[i*w:(i+1)*w], x[j*w:(j+1)*w])
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sim[b], sim[a]) }) // most similar first
		near[i] = slices.Clone(order[:min(k, len(order))])
	}
	return tok, near, nil
}

// minMaxSimilarity is Σmin(a, b)/Σmax(a, b) of two non-negative count vectors (RDKit's Tanimoto similarity of
// count fingerprints; the GP's Tanimoto kernel is the dot-product form); 0 when both are zero.
func minMaxSimilarity(a, b []float64) float64 {
	var lo, hi float64
	for i, v := range a {
		lo += min(v, b[i])
		hi += max(v, b[i])
	}
	if hi == 0 {
		return 0
	}
	return lo / hi
}

// reserveLibrary makes at least TokenSettings.LibraryPicks of an anchor's picks library molecules (the pool's
// entries from fromLib on): when Thompson sampling over the whole pool chose fewer, the rest are chosen by
// Thompson sampling among the library molecules alone and replace picks of other candidates.
func (p *tokenProposer) reserveLibrary(ctx context.Context, pick []int, fromLib int, poolTok []int, poolKey []string, b *batch) ([]int, error) {
	o, t := p.o, p.o.t
	want := min(p.s.LibraryPicks, len(pick), len(poolKey)-fromLib)
	have := 0
	picked := make(map[int]bool, len(pick))
	for _, i := range pick {
		picked[i] = true
		if i >= fromLib {
			have++
		}
	}
	if have >= want {
		return pick, nil
	}
	sub, err := o.thompsonPicks(ctx, min(want, len(poolKey)-fromLib), poolTok[fromLib*t:], poolKey[fromLib:], b)
	if err != nil {
		return nil, err
	}
	last := len(pick) - 1 // replaced from the end: Thompson's picks come in no order of merit
	for _, j := range sub {
		if have == want {
			break
		}
		if picked[fromLib+j] {
			continue
		}
		for last >= 0 && pick[last] >= fromLib {
			last--
		}
		if last < 0 {
			break
		}
		pick[last] = fromLib + j
		last--
		have++
	}
	return pick, nil
}
