package bo

import (
	"math/rand/v2"
	"slices"
)

// Breeder makes token sequences from the best molecules with the moves of the SELFIES genetic algorithm
// (baseline.GA): a child is a one-point crossover of two parents (a cut in each) with probability
// CrossoverRate, else a copy of one, then one STONED mutation (replace, insert or delete one symbol). Parents
// are drawn from the Population best with probability ∝ 1/(rank+1). Sequences are of length T, padded with
// Stop after their symbols; a child longer than T−1 symbols is cut (the codec then decides whether it is a
// molecule). With a Crosser the crossover joins fragments of the two molecules instead (ScreenedSettings.GraphCrossover),
// and with a Mutator the mutation edits the child's molecular graph (ScreenedSettings.GraphMutation), but for a
// share of the children (SymbolShare) that take the symbol mutation.
type Breeder struct {
	Alphabet      []int   // token ids a mutation may write; required
	Stop          int     // the stop (padding) token id
	Population    int     // parents are drawn from this many best molecules; if 0, the default is 100
	CrossoverRate float64 // if 0, the default is 0.5
	// Crosser, if set, makes the crossovers from the parents' molecules, Keys; a pair it cannot cross gives a
	// copy of the first parent. Rings asks it for ring crossovers too (the optimiser leaves them to -method ga:
	// BENCHMARKS.md, "The optimiser's probes: kept or removed").
	Crosser Crosser
	Keys    []string // the parents' molecules (Codec keys), one per parent row; required with Crosser
	Rings   bool
	// Mutator, if set, mutates each child's molecule; a child it cannot mutate takes the token mutation.
	Mutator Mutator
	// SymbolShare is, with a Mutator, the probability that a child takes the symbol mutation instead: SELFIES'
	// alphabet reaches elements the graph edits never write (ScreenedSettings.SymbolMutations). At 0 no draw is
	// made, so the children are those of a breeder without it.
	SymbolShare float64
	// FusedRings asks the Mutator for ring closures fused to the molecule's rings too
	// (ScreenedSettings.FusedRings).
	FusedRings bool
	// Uniform draws the parents uniformly instead of by rank: for parents whose scores are equal.
	Uniform bool
	// MutationRate, if above 0, is the probability that a child is mutated; at 0 every child is, and no draw
	// is made for it.
	MutationRate float64
}

// plateauMutationRate is the GA children's mutation rate on a plateau of equal scores: mol_opt's graph GA's
// (baseline.MolOptGraphGA), whose children on such a plateau find what ours did not.
const plateauMutationRate = 0.067

// Mutator is implemented by a Codec that can mutate a molecule's graph (chem/molseq.Codec.Mutate), for
// ScreenedSettings.GraphMutation.
type Mutator interface {
	// Mutate writes into dst (length T) the sequence of a mutant of the molecule that the sequence tokens
	// (length T) is, and reports whether there is one; dst and tokens may be the same slice. With fused, a
	// ring closure may close a ring fused to one of the molecule's rings.
	Mutate(dst, tokens []int, fused bool, rng *rand.Rand) bool
}

// Crosser is implemented by a Codec that can make a child molecule from two molecules' graphs
// (chem/molseq.Codec.Cross), for ScreenedSettings.GraphCrossover.
type Crosser interface {
	// Cross writes into dst (length T) the sequence of a child of the molecules a and b (Codec keys) and reports
	// whether there is one; with rings, half the crossovers may join parts of the parents' rings.
	Cross(dst []int, a, b string, rings bool, rng *rand.Rand) bool
}

// Child writes one child of length T = len(dst) into dst. parents (P×T) are the candidate parents, best first.
// It returns the rows of parents it was made from: a, and c, the other parent of a crossover, or −1 when the
// child is a copy of a (mutated, unless the mutation rate spared it).
func (b *Breeder) Child(dst, parents []int, rng *rand.Rand) (a, c int) {
	t := len(dst)
	n := len(parents) / t
	pop := b.Population
	if pop == 0 {
		pop = 100
	}
	n = min(n, pop)
	rate := b.CrossoverRate
	if rate == 0 {
		rate = 0.5
	}
	pick := rankPick
	if b.Uniform {
		pick = func(n int, rng *rand.Rand) int { return rng.IntN(n) }
	}
	a, c = pick(n, rng), -1
	first := b.symbols(parents, a, t)
	kid := slices.Clone(first)
	if n > 1 && rng.Float64() < rate {
		other := pick(n, rng)
		if b.Crosser != nil {
			if b.Crosser.Cross(dst, b.Keys[a], b.Keys[other], b.Rings, rng) {
				kid = append(kid[:0], b.symbols(dst, 0, t)...)
				c = other
			}
		} else {
			second := b.symbols(parents, other, t)
			i, j := rng.IntN(len(first)+1), rng.IntN(len(second)+1)
			kid = append(append(kid[:0], first[:i]...), second[j:]...)
			c = other
		}
	}
	if b.MutationRate > 0 && rng.Float64() >= b.MutationRate {
		b.write(dst, kid)
		return a, c
	}
	if b.Mutator != nil && (b.SymbolShare == 0 || rng.Float64() >= b.SymbolShare) {
		b.write(dst, kid)
		if b.Mutator.Mutate(dst, dst, b.FusedRings, rng) {
			return a, c
		}
	}
	sym := b.Alphabet[rng.IntN(len(b.Alphabet))]
	op := rng.IntN(3)
	if len(kid) == 0 {
		op = 1
	}
	switch op {
	case 0:
		kid[rng.IntN(len(kid))] = sym
	case 1:
		kid = slices.Insert(kid, rng.IntN(len(kid)+1), sym)
	case 2:
		i := rng.IntN(len(kid))
		kid = slices.Delete(kid, i, i+1)
	}
	b.write(dst, kid)
	return a, c
}

// write writes the symbols kid into dst, cut to T−1 and padded with Stop.
func (b *Breeder) write(dst, kid []int) {
	k := copy(dst[:len(dst)-1], kid)
	for i := k; i < len(dst); i++ {
		dst[i] = b.Stop
	}
}

// symbols returns parent i's tokens before its first stop.
func (b *Breeder) symbols(parents []int, i, t int) []int {
	seq := parents[i*t : (i+1)*t]
	if k := slices.Index(seq, b.Stop); k >= 0 {
		return seq[:k]
	}
	return seq
}

// rankPick draws an index in [0, n) with probability ∝ 1/(i+1).
func rankPick(n int, rng *rand.Rand) int {
	var total float64
	for i := range n {
		total += 1 / float64(i+1)
	}
	u := rng.Float64() * total
	for i := range n {
		u -= 1 / float64(i+1)
		if u < 0 {
			return i
		}
	}
	return n - 1
}
