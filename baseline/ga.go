package baseline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// GAConfig sets the genetic algorithm. A zero field takes the default named
// in its comment.
type GAConfig struct {
	// Population is the number of best molecules kept as parents (default 100).
	Population int
	// Offspring is the number of new molecules evaluated per generation
	// (default 100).
	Offspring int
	// CrossoverRate is the probability that a child starts as a one-point
	// crossover of two parents rather than a copy of one (default 0.5).
	CrossoverRate float64
	// Mutations is the number of mutations applied to each child (default
	// 1). Each is a symbol's replacement, insertion or deletion, chosen
	// uniformly, as in STONED, or with a Mutator (GA.Mutator) an edit of the
	// molecular graph.
	Mutations int
	// MaxAttempts bounds the children tried per generation to fill Offspring
	// with new valid molecules (default 50 × Offspring).
	MaxAttempts int
	// MutationRate, if above 0, is the probability that a child is mutated
	// at all (mol_opt's Graph GA: 0.067); 0 mutates every child, as STONED.
	MutationRate float64
	// ScoreWeighted draws parents with probability proportional to their
	// score (mol_opt's mating pool; a score at or below 0 counts as 1e-10)
	// instead of 1/(rank+1).
	ScoreWeighted bool
}

// MolOptGraphGA returns the settings of mol_opt's Graph GA (Gao et al. 2022, the PMO benchmark): a population of
// 120, 70 children a generation, each a crossover of two parents drawn in proportion to their scores, mutated with
// probability 0.067. With a graph Crosser and Mutator (chem/graphga) it is the graph GA of PMO's tables.
func MolOptGraphGA() GAConfig {
	return GAConfig{Population: 120, Offspring: 70, CrossoverRate: 1, MutationRate: 0.067, ScoreWeighted: true}
}

func (c GAConfig) withDefaults() GAConfig {
	if c.Population == 0 {
		c.Population = 100
	}
	if c.Offspring == 0 {
		c.Offspring = 100
	}
	if c.CrossoverRate == 0 {
		c.CrossoverRate = 0.5
	}
	if c.Mutations == 0 {
		c.Mutations = 1
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 50 * c.Offspring
	}
	return c
}

// Scored is a molecule with its score.
type Scored struct {
	SELFIES string
	SMILES  string
	Score   float64
}

// GA is a genetic algorithm on SELFIES symbol sequences. Parents are drawn
// with probability proportional to 1/(rank+1) from the best Population
// molecules; children are one-point crossovers (with a cut in each parent)
// or copies, then mutated over Alphabet. Every child is decoded and
// re-encoded, so two children are the same molecule exactly when their
// canonical SELFIES agree, and only children never seen before are sent to
// the objective.
type GA struct {
	Config   GAConfig
	Alphabet []string // symbols for mutation, e.g. the semantic-robust alphabet
	Codec    Codec
	Rand     *rand.Rand
	Recorder Recorder // may be nil
	// Crosser, if set, makes the crossovers from the parents' molecules (their SMILES) instead of their
	// SELFIES symbols; a pair it cannot cross gives a copy of the first parent.
	Crosser Crosser
	// Mutator, if set, makes the mutations edits of the child's molecule (its
	// SMILES) instead of its symbols; a child it cannot mutate takes the
	// symbol mutations.
	Mutator Mutator
}

// Mutator makes a mutant of a molecule, both as SMILES (chem/graphga.Mutator:
// an atom or bond inserted, deleted or changed, or a ring closed).
type Mutator interface {
	Mutate(s string, rng *rand.Rand) (string, error)
}

// Crosser makes a child molecule from two parent molecules, all as SMILES (chem/graphga.Crosser: fragments of
// the two molecular graphs joined).
type Crosser interface {
	Cross(a, b string, rng *rand.Rand) (string, error)
}

// ErrNoProgress is returned when a generation cannot propose a single new
// valid molecule within MaxAttempts.
var ErrNoProgress = errors.New("baseline: no new molecule found")

// Run optimises from the scored initial molecules until obj has made budget
// paid calls or ctx ends, and returns every molecule it evaluated with its
// score, best first.
func (g *GA) Run(ctx context.Context, obj Objective, init []Scored, budget int) ([]Scored, error) {
	if len(g.Alphabet) == 0 {
		return nil, errors.New("baseline: GA needs a mutation alphabet")
	}
	cfg := g.Config.withDefaults()
	seen := make(map[string]bool, len(init)+budget)
	pool := make([]Scored, 0, len(init)+budget)
	for _, m := range init {
		can, err := g.canonical(m.SELFIES)
		if err != nil || seen[can] {
			continue
		}
		seen[can] = true
		pool = append(pool, Scored{SELFIES: can, SMILES: m.SMILES, Score: m.Score})
	}
	if len(pool) == 0 {
		return nil, errors.New("baseline: GA needs at least one valid initial molecule")
	}
	byScore := func(a, b Scored) int { return cmp.Compare(b.Score, a.Score) }
	slices.SortStableFunc(pool, byScore)
	for gen := 1; obj.Calls() < budget; gen++ {
		if err := ctx.Err(); err != nil {
			return pool, err
		}
		parents := pool[:min(cfg.Population, len(pool))]
		want := min(cfg.Offspring, budget-obj.Calls())
		var kids []Scored
		prog := Progress{Iteration: gen}
		for try := 0; len(kids) < want && try < cfg.MaxAttempts; try++ {
			prog.Proposed++
			if kid, ok := admit(g.Codec, seen, g.child(parents, cfg), &prog); ok {
				kids = append(kids, kid)
			}
		}
		if len(kids) == 0 {
			return pool, fmt.Errorf("generation %d: %w in %d attempts", gen, ErrNoProgress, cfg.MaxAttempts)
		}
		if err := score(ctx, obj, kids, &prog); err != nil {
			return pool, fmt.Errorf("generation %d: %w", gen, err)
		}
		pool = append(pool, kids...)
		slices.SortStableFunc(pool, byScore)
		prog.Calls, prog.Best = obj.Calls(), pool[0].Score
		if g.Recorder != nil {
			g.Recorder.Record(prog)
		}
	}
	return pool, nil
}

// canonical returns the SELFIES of the molecule s decodes to.
func (g *GA) canonical(s string) (string, error) {
	smi, err := g.Codec.Decode(s)
	if err != nil {
		return "", err
	}
	return g.Codec.Encode(smi)
}

// child draws parents (by rank weight, or score weight) and returns a child, mutated unless MutationRate says
// otherwise.
func (g *GA) child(parents []Scored, cfg GAConfig) string {
	pick := g.rankPick
	if cfg.ScoreWeighted {
		pick = func(int) int { return g.scorePick(parents) }
	}
	pa := parents[pick(len(parents))]
	a := g.symbols(pa.SELFIES)
	var kid []string
	if len(parents) > 1 && g.Rand.Float64() < cfg.CrossoverRate {
		pb := parents[pick(len(parents))]
		if g.Crosser != nil {
			kid = g.graphChild(pa, pb)
		} else {
			b := g.symbols(pb.SELFIES)
			i, j := g.Rand.IntN(len(a)+1), g.Rand.IntN(len(b)+1)
			kid = append(append(kid, a[:i]...), b[j:]...)
		}
	}
	if kid == nil {
		kid = slices.Clone(a)
	}
	if cfg.MutationRate > 0 && g.Rand.Float64() >= cfg.MutationRate {
		return strings.Join(kid, "")
	}
	if g.Mutator != nil {
		if s, ok := g.graphMutant(kid, cfg.Mutations); ok {
			return s
		}
	}
	for m := 0; m < cfg.Mutations; m++ {
		kid = g.mutate(kid)
	}
	return strings.Join(kid, "")
}

// graphChild returns the symbols of the Crosser's child of a and b, or nil when it cannot cross them (or the
// child cannot be written in SELFIES).
func (g *GA) graphChild(a, b Scored) []string {
	smi, err := g.Crosser.Cross(a.SMILES, b.SMILES, g.Rand)
	if err != nil {
		return nil
	}
	s, err := g.Codec.Encode(smi)
	if err != nil {
		return nil
	}
	return g.symbols(s)
}

// graphMutant returns the SELFIES of the Mutator's n-fold mutant of the molecule kid spells, or false when kid is
// no molecule or a mutation fails.
func (g *GA) graphMutant(kid []string, n int) (string, bool) {
	smi, err := g.Codec.Decode(strings.Join(kid, ""))
	if err != nil || smi == "" {
		return "", false
	}
	for range n {
		if smi, err = g.Mutator.Mutate(smi, g.Rand); err != nil {
			return "", false
		}
	}
	s, err := g.Codec.Encode(smi)
	return s, err == nil
}

func (g *GA) symbols(s string) []string {
	sym, err := g.Codec.Split(s)
	if err != nil {
		return nil // a parent that cannot split mutates from empty
	}
	return sym
}

// mutate replaces, inserts or deletes one symbol (STONED's three moves).
func (g *GA) mutate(s []string) []string {
	sym := g.Alphabet[g.Rand.IntN(len(g.Alphabet))]
	op := g.Rand.IntN(3)
	if len(s) == 0 {
		op = 1
	}
	switch op {
	case 0:
		s[g.Rand.IntN(len(s))] = sym
	case 1:
		s = slices.Insert(s, g.Rand.IntN(len(s)+1), sym)
	case 2:
		i := g.Rand.IntN(len(s))
		s = slices.Delete(s, i, i+1)
	}
	return s
}

// minParentWeight is a parent's weight in ScoreWeighted draws when its score is 0 or below (mol_opt's MINIMUM), so
// that a population scoring 0 throughout is drawn from uniformly.
const minParentWeight = 1e-10

// scorePick draws an index of parents with probability ∝ its score (at least minParentWeight).
func (g *GA) scorePick(parents []Scored) int {
	weight := func(s float64) float64 {
		if s > minParentWeight { // false for NaN too
			return s
		}
		return minParentWeight
	}
	var total float64
	for _, p := range parents {
		total += weight(p.Score)
	}
	u := g.Rand.Float64() * total
	for i, p := range parents {
		u -= weight(p.Score)
		if u < 0 {
			return i
		}
	}
	return len(parents) - 1
}

// rankPick draws an index in [0, n) with probability ∝ 1/(i+1).
func (g *GA) rankPick(n int) int {
	var total float64
	for i := 0; i < n; i++ {
		total += 1 / float64(i+1)
	}
	u := g.Rand.Float64() * total
	for i := 0; i < n; i++ {
		u -= 1 / float64(i+1)
		if u < 0 {
			return i
		}
	}
	return n - 1
}
