package baseline

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// toyCodec treats a SELFIES string as its own SMILES; the empty string is
// invalid, as an empty molecule is.
type toyCodec struct{}

func (toyCodec) Decode(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty")
	}
	return s, nil
}
func (toyCodec) Encode(s string) (string, error) { return s, nil }
func (toyCodec) Split(s string) ([]string, error) {
	var out []string
	for _, p := range strings.SplitAfter(s, "]") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// toyObjective rewards [O] symbols and charges budget once per molecule.
type toyObjective struct {
	seen  map[string]float64
	calls int
}

func (o *toyObjective) Evaluate(_ context.Context, smiles []string) ([]float64, []bool, error) {
	scores, isNew := make([]float64, len(smiles)), make([]bool, len(smiles))
	for i, s := range smiles {
		if v, ok := o.seen[s]; ok {
			scores[i] = v
			continue
		}
		v := float64(strings.Count(s, "[O]")) / float64(1+strings.Count(s, "["))
		o.seen[s], scores[i], isNew[i] = v, v, true
		o.calls++
	}
	return scores, isNew, nil
}
func (o *toyObjective) Calls() int { return o.calls }

func TestGAImprovesAndSpendsExactBudget(t *testing.T) {
	init := []Scored{{SELFIES: "[C][C][C]", SMILES: "[C][C][C]"}, {SELFIES: "[C][N]", SMILES: "[C][N]"}}
	obj := &toyObjective{seen: map[string]float64{}}
	ga := &GA{
		Config:   GAConfig{Population: 10, Offspring: 7},
		Alphabet: []string{"[C]", "[N]", "[O]"},
		Codec:    toyCodec{},
		Rand:     rand.New(rand.NewPCG(1, 2)),
	}
	const budget = 200
	pool, err := ga.Run(context.Background(), obj, init, budget)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Calls() != budget {
		t.Fatalf("spent %d calls, want exactly %d", obj.Calls(), budget)
	}
	if len(pool) != budget+len(init) {
		t.Fatalf("pool holds %d molecules, want %d (no duplicates evaluated)", len(pool), budget+len(init))
	}
	if pool[0].Score < 0.5 {
		t.Fatalf("best score %.3f after %d calls; GA should find mostly-[O] strings (>= 0.5)", pool[0].Score, budget)
	}
}

func TestGADeterministic(t *testing.T) {
	run := func() string {
		obj := &toyObjective{seen: map[string]float64{}}
		ga := &GA{Alphabet: []string{"[C]", "[O]"}, Codec: toyCodec{}, Rand: rand.New(rand.NewPCG(3, 4)),
			Config: GAConfig{Offspring: 5}}
		pool, err := ga.Run(context.Background(), obj, []Scored{{SELFIES: "[C]", SMILES: "[C]"}}, 30)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, m := range pool {
			b.WriteString(m.SELFIES + " ")
		}
		return b.String()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("same seed, different runs:\n%s\n%s", a, b)
	}
}

type toySampler struct{ r *rand.Rand }

func (s toySampler) SamplePrior(_ context.Context, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for j := 0; j < 1+s.r.IntN(6); j++ {
			b.WriteString([]string{"[C]", "[N]", "[O]"}[s.r.IntN(3)])
		}
		out[i] = b.String()
	}
	return out, nil
}

func TestPriorSpendsExactBudget(t *testing.T) {
	obj := &toyObjective{seen: map[string]float64{}}
	p := &Prior{Sampler: toySampler{rand.New(rand.NewPCG(5, 6))}, Codec: toyCodec{}, Batch: 16}
	pool, err := p.Run(context.Background(), obj, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Calls() != 100 || len(pool) != 100 {
		t.Fatalf("calls %d, pool %d: want 100 each", obj.Calls(), len(pool))
	}
	for i := 1; i < len(pool); i++ {
		if pool[i].Score > pool[i-1].Score {
			t.Fatal("pool not sorted best first")
		}
	}
}

// A sampler that only ever proposes one molecule must stop with
// ErrNoProgress rather than loop forever.
type stuckSampler struct{}

func (stuckSampler) SamplePrior(_ context.Context, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		out[i] = "[C]"
	}
	return out, nil
}

func TestPriorStopsWhenStuck(t *testing.T) {
	obj := &toyObjective{seen: map[string]float64{}}
	p := &Prior{Sampler: stuckSampler{}, Codec: toyCodec{}, Batch: 4, MaxEmpty: 3}
	_, err := p.Run(context.Background(), obj, nil, 10)
	if !errors.Is(err, ErrNoProgress) {
		t.Fatalf("err %v, want ErrNoProgress", err)
	}
	if obj.Calls() != 1 {
		t.Fatalf("calls %d, want 1", obj.Calls())
	}
}

// joinCrosser crosses two toy molecules by joining the first half of one to the second half of the other's
// symbols, and counts its calls; with fail set it can cross nothing.
type joinCrosser struct {
	calls int
	fail  bool
}

func (c *joinCrosser) Cross(a, b string, _ *rand.Rand) (string, error) {
	c.calls++
	if c.fail {
		return "", errors.New("nothing to cut")
	}
	sa, _ := toyCodec{}.Split(a)
	sb, _ := toyCodec{}.Split(b)
	return strings.Join(sa[:len(sa)/2], "") + strings.Join(sb[len(sb)/2:], ""), nil
}

// TestGACrosser: with a Crosser the GA's crossovers are its (every child with CrossoverRate 1), from the
// parents' SMILES; a Crosser that can cross nothing leaves copies of the first parent, and the GA still spends
// its budget exactly.
func TestGACrosser(t *testing.T) {
	for _, fail := range []bool{false, true} {
		init := []Scored{{SELFIES: "[C][C][C][N]", SMILES: "[C][C][C][N]"}, {SELFIES: "[O][C][N]", SMILES: "[O][C][N]"}}
		obj := &toyObjective{seen: map[string]float64{}}
		cross := &joinCrosser{fail: fail}
		ga := &GA{
			Config:   GAConfig{Population: 10, Offspring: 5, CrossoverRate: 1},
			Alphabet: []string{"[C]", "[N]", "[O]"},
			Codec:    toyCodec{},
			Rand:     rand.New(rand.NewPCG(7, 8)),
			Crosser:  cross,
		}
		pool, err := ga.Run(context.Background(), obj, init, 100)
		if err != nil {
			t.Fatalf("fail=%v: %v", fail, err)
		}
		if obj.Calls() != 100 || len(pool) != 100+len(init) {
			t.Fatalf("fail=%v: %d calls and %d molecules, want 100 and %d", fail, obj.Calls(), len(pool), 100+len(init))
		}
		if cross.calls < 100 {
			t.Errorf("fail=%v: the Crosser made %d of at least 100 children", fail, cross.calls)
		}
	}
}

// prefixMutator puts a symbol before the molecule, drawn from the rng, or fails.
type prefixMutator struct {
	fail  bool
	calls int
}

func (m *prefixMutator) Mutate(s string, rng *rand.Rand) (string, error) {
	m.calls++
	if m.fail {
		return "", errors.New("no mutant")
	}
	return []string{"[C]", "[N]", "[O]"}[rng.IntN(3)] + s, nil
}

// TestGAMutator: with a Mutator every child's mutation is its, from the child's molecule; a Mutator that
// mutates nothing leaves the symbol mutations, and the GA still spends its budget exactly.
func TestGAMutator(t *testing.T) {
	for _, fail := range []bool{false, true} {
		init := []Scored{{SELFIES: "[C][C][C][N]", SMILES: "[C][C][C][N]"}, {SELFIES: "[O][C][N]", SMILES: "[O][C][N]"}}
		obj := &toyObjective{seen: map[string]float64{}}
		mut := &prefixMutator{fail: fail}
		ga := &GA{
			Config:   GAConfig{Population: 10, Offspring: 5},
			Alphabet: []string{"[F]"},
			Codec:    toyCodec{},
			Rand:     rand.New(rand.NewPCG(7, 8)),
			Mutator:  mut,
		}
		pool, err := ga.Run(context.Background(), obj, init, 50)
		if err != nil {
			t.Fatalf("fail=%v: %v", fail, err)
		}
		if obj.Calls() != 50 || len(pool) != 50+len(init) {
			t.Fatalf("fail=%v: %d calls and %d molecules, want 50 and %d", fail, obj.Calls(), len(pool), 50+len(init))
		}
		if mut.calls < 50 {
			t.Errorf("fail=%v: the Mutator was asked for %d of at least 50 children", fail, mut.calls)
		}
		// The symbol mutations write [F] (the alphabet); the Mutator never does.
		withF := 0
		for _, m := range pool {
			if strings.Contains(m.SELFIES, "[F]") {
				withF++
			}
		}
		if fail && withF == 0 || !fail && withF != 0 {
			t.Errorf("fail=%v: %d of %d molecules carry a symbol mutation", fail, withF, len(pool))
		}
	}
}

// TestGAMutationRate: with MutationRate p a child is mutated with probability p; here every child is a copy of a
// parent (no crossover) unless mutated, so the Mutator's calls count the mutations, and children that are bare
// copies are duplicates the GA rejects: the share of mutated children among those tried is about p.
func TestGAMutationRate(t *testing.T) {
	init := []Scored{{SELFIES: "[C][C][C][N]", SMILES: "[C][C][C][N]"}, {SELFIES: "[O][C][N]", SMILES: "[O][C][N]"}}
	obj := &toyObjective{seen: map[string]float64{}}
	mut := &prefixMutator{}
	var tried int
	ga := &GA{
		Config:   GAConfig{Population: 10, Offspring: 5, CrossoverRate: 1e-300, MutationRate: 0.1, MaxAttempts: 5000},
		Alphabet: []string{"[F]"},
		Codec:    toyCodec{},
		Rand:     rand.New(rand.NewPCG(3, 4)),
		Mutator:  mut,
		Recorder: recorderFunc(func(p Progress) { tried += p.Proposed }),
	}
	if _, err := ga.Run(context.Background(), obj, init, 200); err != nil {
		t.Fatal(err)
	}
	if obj.Calls() != 200 {
		t.Fatalf("%d calls, want 200", obj.Calls())
	}
	if share := float64(mut.calls) / float64(tried); share < 0.07 || share > 0.13 {
		t.Errorf("%d of %d children mutated (%.3f), want about 0.1", mut.calls, tried, share)
	}
}

// recorderFunc is a Recorder from a function.
type recorderFunc func(Progress)

func (f recorderFunc) Record(p Progress) { f(p) }

// TestGAScoreWeighted: parents drawn in proportion to score, as mol_opt's mating pool, never pick a parent that
// scores 0 beside one that scores 1 (its weight is 1e-10); by rank, they pick it about a third of the time.
func TestGAScoreWeighted(t *testing.T) {
	parents := []Scored{{SELFIES: "[O]", Score: 1}, {SELFIES: "[C]", Score: 0}}
	ga := &GA{Rand: rand.New(rand.NewPCG(5, 6))}
	var byScore, byRank int
	for range 3000 {
		byScore += ga.scorePick(parents)
		byRank += ga.rankPick(len(parents))
	}
	if byScore != 0 {
		t.Errorf("score weights picked the parent scoring 0 %d times in 3000", byScore)
	}
	if byRank < 800 || byRank > 1200 {
		t.Errorf("rank weights picked the second parent %d times in 3000, want about 1000", byRank)
	}
	all0 := []Scored{{Score: 0}, {Score: 0}, {Score: -1}, {Score: 0}}
	counts := make([]int, len(all0))
	for range 4000 {
		counts[ga.scorePick(all0)]++
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("parents all at or below 0: parent %d picked %d times in 4000, want about 1000 (uniform)", i, c)
		}
	}
}
