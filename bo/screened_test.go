package bo

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/rundir"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestTokenFeatures(t *testing.T) {
	// V = 4, stop = 1, T = 6: "2 3 2 3" then padding; "0 stop ..." a one-token sequence.
	tok := []int{2, 3, 2, 3, 1, 1, 0, 1, 3, 3, 3, 3}
	w := TokenFeatureLen(4)
	dst := make([]float64, 2*w)
	TokenFeatures(dst, tok, 6, 4, 1)
	want0 := make([]float64, w)
	want0[2], want0[3] = 2, 2
	want0[4+bigramBucket(2, 3)] += 2
	want0[4+bigramBucket(3, 2)]++
	want1 := make([]float64, w)
	want1[0] = 1 // tokens after the first stop are not counted
	if !slices.Equal(dst[:w], want0) || !slices.Equal(dst[w:], want1) {
		t.Errorf("features differ from the hand count")
	}
}

func TestBreederChild(t *testing.T) {
	const stop, tt = 1, 8
	parents := []int{
		2, 3, 4, 5, 1, 1, 1, 1,
		6, 6, 6, 6, 6, 6, 1, 1,
	}
	b := &Breeder{Alphabet: []int{9}, Stop: stop}
	rng := rand.New(rand.NewPCG(1, 2))
	child := make([]int, tt)
	sawNine := false
	for range 500 {
		b.Child(child, parents, rng)
		k := slices.Index(child, stop)
		if k < 0 {
			k = tt
		}
		if k > tt-1 {
			t.Fatalf("child %v has no stop", child)
		}
		for _, id := range child[k:] {
			if id != stop {
				t.Fatalf("child %v: symbols after the stop", child)
			}
		}
		for _, id := range child[:k] {
			if !slices.Contains([]int{2, 3, 4, 5, 6, 9}, id) {
				t.Fatalf("child %v holds token %d from neither a parent nor the alphabet", child, id)
			}
			sawNine = sawNine || id == 9
		}
	}
	if !sawNine {
		t.Error("no child was mutated with the alphabet's symbol")
	}
}

// tagCrosser crosses two parents by writing a sequence of token 7 as long as both parents' keys together; with
// fail it crosses nothing.
type tagCrosser struct {
	stop  int
	fail  bool
	pairs [][2]string
}

func (c *tagCrosser) Cross(dst []int, a, b string, _ bool, _ *rand.Rand) bool {
	c.pairs = append(c.pairs, [2]string{a, b})
	if c.fail {
		return false
	}
	for i := range dst {
		dst[i] = c.stop
	}
	for i := range min(len(a)+len(b), len(dst)-1) {
		dst[i] = 7
	}
	return true
}

// tagMutator mutates a sequence by writing token 8 first, or with fail mutates nothing.
type tagMutator struct {
	fail  bool
	calls int
}

func (m *tagMutator) Mutate(dst, tokens []int, _ bool, _ *rand.Rand) bool {
	m.calls++
	if m.fail {
		return false
	}
	copy(dst, tokens)
	dst[0] = 8
	return true
}

// TestBreederMutator: with a Mutator every child is its mutant and takes no token mutation; a child it cannot
// mutate takes the token mutation.
func TestBreederMutator(t *testing.T) {
	const stop, tt = 1, 8
	parents := []int{
		2, 3, 4, 5, 1, 1, 1, 1,
		6, 6, 6, 6, 6, 6, 1, 1,
	}
	for _, fail := range []bool{false, true} {
		m := &tagMutator{fail: fail}
		b := &Breeder{Alphabet: []int{9}, Stop: stop, Mutator: m}
		rng := rand.New(rand.NewPCG(1, 2))
		child := make([]int, tt)
		nines := 0
		for range 200 {
			b.Child(child, parents, rng)
			if (child[0] == 8) == fail {
				t.Fatalf("fail=%v: child %v", fail, child)
			}
			if slices.Contains(child, 9) {
				nines++
			}
		}
		if m.calls != 200 || (nines == 0) != !fail {
			t.Errorf("fail=%v: %d calls of the Mutator, %d children with the alphabet's token", fail, m.calls, nines)
		}
	}
}

// TestBreederSymbolShare: with a Mutator and SymbolShare p, about a share p of the children take the symbol
// mutation and never reach the Mutator; the others are its mutants.
func TestBreederSymbolShare(t *testing.T) {
	const stop, tt, n = 1, 8, 2000
	parents := []int{
		2, 3, 4, 5, 1, 1, 1, 1,
		6, 6, 6, 6, 6, 6, 1, 1,
	}
	for _, share := range []float64{0.1, 0.5} {
		m := &tagMutator{}
		b := &Breeder{Alphabet: []int{9}, Stop: stop, Mutator: m, SymbolShare: share}
		rng := rand.New(rand.NewPCG(1, 2))
		child := make([]int, tt)
		mutants := 0
		for range n {
			b.Child(child, parents, rng)
			if child[0] == 8 {
				mutants++
			}
		}
		// Binomial(n, 1−p): five standard deviations either side.
		want, sd := float64(n)*(1-share), math.Sqrt(float64(n)*share*(1-share))
		if m.calls != mutants || math.Abs(float64(mutants)-want) > 5*sd {
			t.Errorf("share %v: %d of %d children mutated as graphs (%d Mutator calls), want about %.0f",
				share, mutants, n, m.calls, want)
		}
	}
}

// TestBreederPlateau: with MutationRate p about a share p of the children reach the Mutator, the others are
// unmutated crossovers; with Uniform the first parent is drawn uniformly, not by rank.
func TestBreederPlateau(t *testing.T) {
	const stop, tt, n = 1, 4, 4000
	parents := []int{
		2, 1, 1, 1,
		3, 1, 1, 1,
		4, 1, 1, 1,
		5, 1, 1, 1,
	}
	m := &tagMutator{}
	b := &Breeder{Alphabet: []int{9}, Stop: stop, Mutator: m, Uniform: true, CrossoverRate: 1e-300, MutationRate: 0.1}
	rng := rand.New(rand.NewPCG(5, 6))
	child := make([]int, tt)
	firsts := map[int]int{}
	for range n {
		b.Child(child, parents, rng)
		if child[0] != 8 {
			firsts[child[0]]++
		}
	}
	// Binomial(n, p) mutants; of the others, each parent a quarter.
	want, sd := float64(n)*0.1, math.Sqrt(float64(n)*0.1*0.9)
	if math.Abs(float64(m.calls)-want) > 5*sd {
		t.Errorf("MutationRate 0.1: %d of %d children mutated, want about %.0f", m.calls, n, want)
	}
	rest := n - m.calls
	q, qsd := float64(rest)/4, math.Sqrt(float64(rest)*0.25*0.75)
	for _, p := range []int{2, 3, 4, 5} {
		if math.Abs(float64(firsts[p])-q) > 5*qsd {
			t.Errorf("Uniform: parent %d drawn %d times of %d, want about %.0f", p, firsts[p], rest, q)
		}
	}
}

// TestBreederCrosser: with a Crosser every crossover is its own, from the parents' keys (rank-drawn, in Keys'
// order), and a pair it cannot cross leaves a copy of the first parent; mutations as before.
func TestBreederCrosser(t *testing.T) {
	const stop, tt = 1, 8
	parents := []int{
		2, 3, 4, 5, 1, 1, 1, 1,
		6, 6, 6, 6, 6, 6, 1, 1,
	}
	keys := []string{"a", "bb"}
	for _, fail := range []bool{false, true} {
		cross := &tagCrosser{stop: stop, fail: fail}
		b := &Breeder{Alphabet: []int{9}, Stop: stop, CrossoverRate: 1, Crosser: cross, Keys: keys}
		rng := rand.New(rand.NewPCG(1, 2))
		child := make([]int, tt)
		for n := range 200 {
			pa, pc := b.Child(child, parents, rng)
			switch {
			case fail && pc != -1:
				t.Fatalf("fail=%v: a child the Crosser could not make names a second parent, %d", fail, pc)
			case !fail && (pc < 0 || cross.pairs[n] != [2]string{keys[pa], keys[pc]}):
				t.Fatalf("fail=%v: child of rows %d and %d, the Crosser crossed %q", fail, pa, pc, cross.pairs[n])
			case fail && cross.pairs[n][0] != keys[pa]:
				t.Fatalf("fail=%v: child of row %d, the Crosser was asked for %q", fail, pa, cross.pairs[n])
			}
			k := slices.Index(child, stop)
			if k < 0 {
				k = tt
			}
			for _, id := range child[:k] {
				want := []int{7, 9}
				if fail {
					want = []int{2, 3, 4, 5, 6, 9}
				}
				if !slices.Contains(want, id) {
					t.Fatalf("fail=%v: child %v holds token %d, want only %v", fail, child, id, want)
				}
			}
		}
		if len(cross.pairs) != 200 {
			t.Errorf("fail=%v: the Crosser was asked %d times for 200 children at crossover rate 1", fail, len(cross.pairs))
		}
		for _, p := range cross.pairs {
			if !slices.Contains(keys, p[0]) || !slices.Contains(keys, p[1]) {
				t.Fatalf("fail=%v: crossed %q, not parents' keys", fail, p)
			}
		}
	}
}

// TestScreenedPicks: under Screened every proposal is a new valid molecule, so each iteration spends
// Anchors·Queries calls (or the rest of the budget), and the fit is measured every iteration.
func TestScreenedPicks(t *testing.T) {
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	rec := &recorder{}
	if _, _, err := runToy(t, cfg, memObjective{&toyScorer{}}, 5, rec, context.Background()); err != nil {
		t.Fatal(err)
	}
	top := 0
	for _, p := range rec.log {
		top += p.Screened.FlowTop + p.Screened.OffspringTop
		if want := min(cfg.Anchors*cfg.Queries, cfg.Budget-(p.Calls-p.New)); p.New != want {
			t.Errorf("iteration %d: %d new molecules, want %d", p.Iteration, p.New, want)
		}
		if p.New >= 3 && math.IsNaN(p.FitRank) {
			t.Errorf("iteration %d: no fit rank", p.Iteration)
		}
		if p.Screened.FromFlow < 0 || p.Screened.FromFlow > p.New {
			t.Errorf("iteration %d: %d of %d picks from the flow", p.Iteration, p.Screened.FromFlow, p.New)
		}
		if st := p.Screened; st.FlowTop > st.FromFlow || st.OffspringTop > p.New-st.FromFlow {
			t.Errorf("iteration %d: %d and %d picks above the tenth best, of %d and %d", p.Iteration, st.FlowTop, st.OffspringTop, st.FromFlow, p.New-st.FromFlow)
		}
	}
	if top == 0 {
		t.Error("no pick scored above the tenth best in any iteration")
	}
	// Without offspring every pick is the flow's, and the count says it is not kept.
	cfg.Offspring = 0
	rec = &recorder{}
	if _, _, err := runToy(t, cfg, memObjective{&toyScorer{}}, 5, rec, context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.log {
		if p.Screened.FromFlow != -1 {
			t.Errorf("without offspring: FromFlow %d, want -1", p.Screened.FromFlow)
		}
	}
}

// TestReferenceVariant: the reference variant is the zero Config's rules, which the reference tests pin down
// (TestSelectAnchorsReference, TestTACSProbabilities, ...), and it leaves the preset's other settings alone.
func TestReferenceVariant(t *testing.T) {
	for _, p := range Presets() {
		c, err := p.Config.WithVariant("reference")
		if err != nil {
			t.Fatal(err)
		}
		if c != p.Config || c.Variant != Reference || c.Offspring != 0 {
			t.Errorf("%s: reference variant changed the preset: %+v", p.Name, c)
		}
		s, err := p.Config.WithVariant(DefaultVariant)
		if err != nil {
			t.Fatal(err)
		}
		if s.Variant != Screened || s.Offspring != DefaultOffspring || s.Candidates != ScreenedCandidates {
			t.Errorf("%s: default variant: screen %v offspring %d", p.Name, s.Variant, s.Offspring)
		}
		// The preset's screened settings go on the screened variant alone.
		if r, err := p.VariantConfig("reference"); err != nil || r != c {
			t.Errorf("%s: VariantConfig(reference) = %+v, %v; want the preset's own", p.Name, r, err)
		}
		v, err := p.VariantConfig(DefaultVariant)
		if err != nil {
			t.Fatal(err)
		}
		want := s
		if sp := p.Screened; sp != (ScreenedPreset{}) { // its zero fields keep the preset's
			want.NoveltyBand, want.CandidateTarget, want.DistinctScores, want.Inputs = sp.NoveltyBand, sp.CandidateTarget, sp.DistinctScores, sp.Inputs
			want.Ties = sp.Ties
			want.GraphCrossover, want.GraphMutation = sp.GraphCrossover, sp.GraphMutation
			if sp.Queries != 0 {
				want.Queries = sp.Queries
			}
			if sp.TopK != 0 {
				want.TopK = sp.TopK
			}
		}
		if v != want {
			t.Errorf("%s: VariantConfig(screened) = %+v, want %+v", p.Name, v, want)
		}
		if _, err := v.resolved(400); err != nil {
			t.Errorf("%s: screened: %v", p.Name, err)
		}
	}
	for _, name := range []string{"guacamol-500", "pmo"} {
		if p, _ := PresetByName(name); p.Screened == (ScreenedPreset{}) {
			t.Errorf("the %s preset has no screened settings", name)
		}
	}
	if _, err := (Config{}).WithVariant("nope"); err == nil {
		t.Error("unknown variant accepted")
	}
	// The reference run and the zero Config's run are the same run.
	ref, _ := toyConfig("").WithVariant("reference")
	a, _, err := runToy(t, ref, memObjective{&toyScorer{}}, 4, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := runToy(t, toyConfig(""), memObjective{&toyScorer{}}, 4, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, ya, _ := a.Data()
	_, yb, _ := b.Data()
	if !slices.Equal(ya, yb) {
		t.Error("the reference variant's run differs from the zero Config's")
	}
}

// TestSelectAllowedMatchesFilterFirst: picking lazily among allowed candidates gives the picks ThompsonSelect
// gives on the allowed candidates alone (the samples restricted to them), and judges only part of the pool.
func TestSelectAllowedMatchesFilterFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		m, q := 1+rng.IntN(60), 1+rng.IntN(8)
		q = min(q, m)
		keys := make([]string, m)
		allow := make([]bool, m)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
			allow[i] = rng.Float64() < 0.4
		}
		samples := make([]float64, q*m)
		for i := range samples {
			samples[i] = float64(rng.IntN(20)) // ties included
		}
		rules := &toyRules{asked: map[string]int{}}
		o := &Optimizer{prob: Problem{Rules: ruleFunc(func(why, s []string) {
			for i, k := range s {
				rules.asked[k]++
				var n int
				fmt.Sscanf(k, "k%d", &n)
				why[i] = ""
				if !allow[n] {
					why[i] = "no"
				}
			}
		})}}
		got, _, err := o.selectAllowed(context.Background(), make([]int, q), samples, keys)
		if err != nil {
			t.Fatal(err)
		}
		var sub []int // the allowed candidates, in order
		for i := range m {
			if allow[i] {
				sub = append(sub, i)
			}
		}
		want := []int{}
		if len(sub) > 0 {
			r := make([]float64, q*len(sub))
			for k := range q {
				for j, i := range sub {
					r[k*len(sub)+j] = samples[k*m+i]
				}
			}
			w := make([]int, min(q, len(sub)))
			ThompsonSelect(w, r[:len(w)*len(sub)], len(sub))
			for _, j := range w {
				want = append(want, sub[j])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d (m=%d q=%d): picks %v, filtering first gives %v", trial, m, q, got, want)
		}
		for k, n := range rules.asked {
			if n != 1 {
				t.Fatalf("trial %d: %s judged %d times", trial, k, n)
			}
		}
	}
}

// ruleFunc is Rules from a function.
type ruleFunc func(why, smiles []string)

func (f ruleFunc) Check(_ context.Context, why, smiles []string) error { f(why, smiles); return nil }

// keyCounts is a Featurizer for the toy codec's keys ("3.5.1."): the count of each token, and it records the keys
// it was given.
type keyCounts struct{ keys map[string]bool }

func (k *keyCounts) Width() int { return toyV }

func (k *keyCounts) Features(dst []float64, smiles []string, _ []int) error {
	clear(dst)
	for i, s := range smiles {
		k.keys[s] = true
		for _, f := range strings.Split(strings.TrimSuffix(s, "."), ".") {
			var x int
			if _, err := fmt.Sscan(f, &x); err != nil {
				return fmt.Errorf("key %q: %w", s, err)
			}
			dst[i*toyV+x]++
		}
	}
	return nil
}

// TestScreenedFeatures: with Problem.Features the screened surrogate learns from and samples on its vectors
// (here with the Tanimoto kernel, as for fingerprints), given the molecules' keys.
func TestScreenedFeatures(t *testing.T) {
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	cfg.Exact.Kernel = gp.Tanimoto
	feat := &keyCounts{keys: map[string]bool{}}
	init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
	sc := &toyScorer{}
	prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{sc}, Initial: init,
		Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}, Features: feat}
	rec := &recorder{}
	o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), rec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != cfg.Budget {
		t.Fatalf("%d calls, want %d", res.Calls, cfg.Budget)
	}
	for _, s := range init.SMILES {
		if !feat.keys[s] {
			t.Fatalf("the surrogate never saw initial molecule %q", s)
		}
	}
	for m := range sc.seen {
		if !feat.keys[m] {
			t.Errorf("molecule %q was paid for without the surrogate seeing it", m)
		}
	}
	for _, p := range rec.log {
		if p.New >= 3 && math.IsNaN(p.FitRank) {
			t.Errorf("iteration %d: no fit rank", p.Iteration)
		}
	}
}

// countsThenTokens is InputsMorganTokens' layout for the toy problem: keyCounts' vector, then the token counts.
type countsThenTokens struct{ keyCounts }

func (c *countsThenTokens) Width() int { return toyV + TokenFeatureLen(toyV) }

func (c *countsThenTokens) Features(dst []float64, smiles []string, tokens []int) error {
	w := c.Width()
	head := make([]float64, len(smiles)*toyV)
	if err := c.keyCounts.Features(head, smiles, tokens); err != nil {
		return err
	}
	for i := range smiles {
		copy(dst[i*w:i*w+toyV], head[i*toyV:(i+1)*toyV])
		TokenFeatures(dst[i*w+toyV:(i+1)*w], tokens[i*toyT:(i+1)*toyT], toyT, toyV, 0)
	}
	return nil
}

// TestScreenedInputsWeight: with InputsMorganTokens each iteration's progress reports the surrogate's weight on
// the first inputs, a number in (0, 1); with token counts it reports none.
func TestScreenedInputsWeight(t *testing.T) {
	for _, in := range []SurrogateInputs{InputsMorganTokens, InputsTokens} {
		cfg := toyConfig("")
		toScreened(&cfg, 10)
		cfg.Inputs = in
		prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}},
			Initial: toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV), Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		if in == InputsMorganTokens {
			prob.Features = &countsThenTokens{keyCounts{keys: map[string]bool{}}}
		}
		for _, p := range runRecorded(t, cfg, prob).log {
			if ok := p.Weight > 0 && p.Weight < 1; (in == InputsMorganTokens) != ok || in == InputsTokens && !math.IsNaN(p.Weight) {
				t.Errorf("inputs %s, iteration %d: weight %v", in, p.Iteration, p.Weight)
			}
		}
	}
}

// mutCodec is toyCodec with a Mutator: a mutant is the sequence with one position set to the next token of
// the alphabet 1-7, and it counts the molecules it mutated, and those it was asked to mutate with fused rings.
type mutCodec struct {
	toyCodec
	calls, fused int
}

func (c *mutCodec) Mutate(dst, tokens []int, fused bool, rng *rand.Rand) bool {
	c.calls++
	if fused {
		c.fused++
	}
	copy(dst, tokens)
	i := rng.IntN(len(dst))
	dst[i] = dst[i]%7 + 1
	return true
}

// TestGraphMutationWiring: with GraphMutation the screened variant's GA children are mutated by the codec's
// Mutator, with fused ring closures exactly when FusedRings asks for them, and the budget is spent; a codec
// without one is refused.
func TestGraphMutationWiring(t *testing.T) {
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	cfg.GraphMutation = true
	var prob Problem
	for _, fused := range []bool{false, true} {
		cfg.FusedRings = fused
		codec := &mutCodec{}
		prob = Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: codec, Objective: memObjective{&toyScorer{}},
			Initial: toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV), Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		runToBudget(t, cfg, prob)
		if codec.calls == 0 {
			t.Fatalf("FusedRings %v: the Mutator was never asked for a child", fused)
		}
		if want := map[bool]int{false: 0, true: codec.calls}[fused]; codec.fused != want {
			t.Errorf("FusedRings %v: %d of %d mutations asked for fused rings, want %d", fused, codec.fused, codec.calls, want)
		}
	}
	prob.Codec = toyCodec{}
	if _, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), &recorder{}); err == nil || !strings.Contains(err.Error(), "Mutator") {
		t.Errorf("GraphMutation with a codec that cannot mutate: %v", err)
	}
}

// crossCodec is toyCodec with a Crosser: a child is the first half of a's tokens and the second half of b's,
// and it keeps the parents it was given.
type crossCodec struct {
	toyCodec
	parents []string
}

func (c *crossCodec) Cross(dst []int, a, b string, _ bool, _ *rand.Rand) bool {
	c.parents = append(c.parents, a, b)
	ta, tb := strings.Split(strings.TrimSuffix(a, "."), "."), strings.Split(strings.TrimSuffix(b, "."), ".")
	if len(ta) != len(dst) || len(tb) != len(dst) {
		return false
	}
	for i := range dst {
		f := ta[i]
		if i >= len(dst)/2 {
			f = tb[i]
		}
		fmt.Sscan(f, &dst[i])
	}
	return true
}

// TestGraphCrossoverWiring: with GraphCrossover the screened variant's GA children are crossed by the codec's
// Crosser, from molecules of the data (the parents' keys go with their rows); a codec without one is refused.
func TestGraphCrossoverWiring(t *testing.T) {
	cfg := toyConfig("")
	toScreened(&cfg, 10)
	cfg.GraphCrossover = true
	init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
	codec := &crossCodec{}
	sc := &toyScorer{}
	prob := Problem{Flow: &toyFlow{t: toyT, v: toyV}, Codec: codec, Objective: memObjective{sc}, Initial: init, Vocab: toyV, Stop: 0,
		Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
	o := runToBudget(t, cfg, prob)
	if len(codec.parents) == 0 {
		t.Fatal("the Crosser was never asked for a child")
	}
	_, _, smiles := o.Data()
	for _, p := range codec.parents {
		if !slices.Contains(smiles, p) {
			t.Fatalf("crossed %q, which is not a molecule of the data", p)
		}
	}
	prob.Codec = toyCodec{}
	if _, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), &recorder{}); err == nil || !strings.Contains(err.Error(), "Crosser") {
		t.Errorf("GraphCrossover with a codec that cannot cross: %v", err)
	}
}

// runToBudget runs an optimiser of cfg on prob and fails the test unless it spends the budget.
func runToBudget(t *testing.T, cfg Config, prob Problem) *Optimizer {
	t.Helper()
	o, err := NewOptimizer(cfg, prob, rand.NewPCG(1, 1), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background())
	if err != nil || res.Calls != cfg.Budget {
		t.Fatalf("calls %d, %v; want the budget %d spent", res.Calls, err, cfg.Budget)
	}
	return o
}

// TestCountTop: a pick counts when it scores above the tenth best score before the batch (every score counts while
// there are fewer than ten); a NaN or a tie does not.
func TestCountTop(t *testing.T) {
	y := []float64{12, 1, 11, 2, 10, 3, 9, 4, 8, 5, 7, 6} // the tenth best is 3
	fromFlow := []bool{true, true, false, false, false}
	scores := []float64{5, 2, 3.5, math.NaN(), 3}
	var st ScreenedStats
	st.countTop(fromFlow, scores, y)
	if st.FlowTop != 1 || st.OffspringTop != 1 {
		t.Errorf("FlowTop %d, OffspringTop %d; want 1 and 1", st.FlowTop, st.OffspringTop)
	}
	st.countTop(fromFlow, scores, y[:9])
	if st.FlowTop != 2 || st.OffspringTop != 2 {
		t.Errorf("nine scores before: FlowTop %d, OffspringTop %d; want 2 and 2", st.FlowTop, st.OffspringTop)
	}
	if y[0] != 12 || y[1] != 1 {
		t.Error("countTop reordered the scores")
	}
}

// tracingObjective is memObjective that is a Tracer: it keeps each molecule's origin, and what the data held
// (the initial molecules and every earlier batch) when the molecule was proposed.
type tracingObjective struct {
	memObjective
	flow    *toyFlow
	data    map[string]bool
	batches [][]rundir.Origin
	before  []map[string]bool // the data before each batch
}

func (o *tracingObjective) EvaluateFrom(ctx context.Context, smiles []string, from []rundir.Origin) ([]float64, []bool, error) {
	o.before = append(o.before, maps.Clone(o.data))
	o.batches = append(o.batches, from)
	if !o.flow.anchorsOf(from) {
		return nil, nil, fmt.Errorf("a flow candidate's parent is not one of the anchors the flow encoded: %+v", from)
	}
	for _, s := range smiles {
		o.data[s] = true
	}
	return o.Evaluate(ctx, smiles)
}

// anchorsOf reports whether every ByFlow origin's parent is a sequence of f's last Encode call: the anchors.
func (f *toyFlow) anchorsOf(from []rundir.Origin) bool {
	anchors := map[string]bool{}
	canon := make([]int, f.t)
	for i := 0; i+f.t <= len(f.encoded); i += f.t {
		s, _ := toyCodec{}.Canonical(canon, f.encoded[i:i+f.t])
		anchors[s] = true
	}
	for _, o := range from {
		if o.By == rundir.ByFlow && !anchors[o.Parents[0]] {
			return false
		}
	}
	return true
}

// TestScreenedOrigins: the screened variant gives its Tracer the origin of every molecule it proposes: the
// flow's picks (as many as Progress counts) with their anchor (a sequence the flow encoded for the batch), the GA children with one parent or two, every
// parent a molecule of the data when the batch was proposed; with NoFlow, none from the flow.
func TestScreenedOrigins(t *testing.T) {
	for _, noFlow := range []bool{false, true} {
		cfg := toyConfig("")
		toScreened(&cfg, 10)
		cfg.NoFlow = noFlow
		flow := &toyFlow{t: toyT, v: toyV}
		obj := &tracingObjective{memObjective: memObjective{&toyScorer{}}, flow: flow, data: map[string]bool{}}
		for _, s := range toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV).SMILES {
			obj.data[s] = true
		}
		rec := &recorder{}
		if _, _, err := runToyFlow(t, cfg, obj, 5, rec, context.Background(), flow); err != nil {
			t.Fatal(err)
		}
		if len(obj.batches) != len(rec.log) || len(obj.batches) == 0 {
			t.Fatalf("noFlow=%v: %d batches traced, %d iterations", noFlow, len(obj.batches), len(rec.log))
		}
		by := map[string]int{}
		for k, from := range obj.batches {
			flow := 0
			for i, o := range from {
				by[o.By]++
				want := map[string]int{rundir.ByFlow: 1, rundir.ByMutation: 1, rundir.ByCrossover: 2}[o.By]
				if want == 0 || len(o.Parents) != want {
					t.Fatalf("noFlow=%v batch %d molecule %d: origin %+v", noFlow, k, i, o)
				}
				for _, p := range o.Parents {
					if !obj.before[k][p] {
						t.Fatalf("noFlow=%v batch %d molecule %d: parent %q was not in the data", noFlow, k, i, p)
					}
				}
				if o.By == rundir.ByFlow {
					flow++
				}
			}
			if got := rec.log[k].Screened.FromFlow; got != flow {
				t.Errorf("noFlow=%v batch %d: %d origins from the flow, Progress counts %d", noFlow, k, flow, got)
			}
		}
		if noFlow && by[rundir.ByFlow] > 0 || !noFlow && by[rundir.ByFlow] == 0 || by[rundir.ByCrossover] == 0 || by[rundir.ByMutation] == 0 {
			t.Errorf("noFlow=%v: origins by move %v", noFlow, by)
		}
	}
}

// The GP's rank targets are ranks among every score of the run: a fit set of the best scores gets the upper tail
// of the normal scores, not the whole range its own ranks would give it.
func TestRankedAmong(t *testing.T) {
	y := []float64{0.1, 0.9, 0.3, 0.95, 0.2, 0.9, 0.5, 0.0}
	idx := []int{3, 1, 5} // the best three, 0.9 tied
	got := make([]float64, len(idx))
	rankedAmong(got, y, idx)
	// Ranks among the eight: 0.95 is 7th (0-based), the two 0.9s share (5+6)/2 = 5.5.
	want := []float64{distuv.UnitNormal.Quantile(7.5 / 8), distuv.UnitNormal.Quantile(6.0 / 8), distuv.UnitNormal.Quantile(6.0 / 8)}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("target %d (score %v): %v, want %v", k, y[idx[k]], got[k], want[k])
		}
	}
	if got[1] <= 0 || got[1] != got[2] {
		t.Errorf("tied best scores: %v and %v, want one value above the median's 0", got[1], got[2])
	}
}
