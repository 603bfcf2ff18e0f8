package graphga

import (
	"errors"
	"math/rand/v2"
)

// ErrSize is Cross's error when ten children of two parents all fail the Crosser's Size rule.
var ErrSize = errors.New("graphga: no child of a size the rule keeps in ten crossovers")

// SizeRule is the graph GA's mol_ok (Jensen 2019, as GuacaMol's and mol_opt's graph_ga run it): a child is kept
// only when it has more than 5 heavy atoms and fewer than a target drawn for it from a normal distribution of
// mean Mean and standard deviation SD. Without it, children of crossovers that join the larger fragments grow
// from generation to generation, past the sizes an objective scores in reasonable time (PMO's deco_hop spends
// minutes on a molecule of 150 heavy atoms).
type SizeRule struct {
	Mean, SD float64
}

// ZINCSize returns the graph GA's rule: mean 39.15 and standard deviation 3.50 heavy atoms, ZINC's sizes
// (GuacaMol's and mol_opt's graph_ga/crossover.py).
func ZINCSize() *SizeRule { return &SizeRule{Mean: 39.15, SD: 3.50} }

// ok reports whether m passes the rule, drawing its target from rng.
func (r *SizeRule) ok(m *mol, rng *rand.Rand) bool {
	n := 0
	for _, a := range m.atoms {
		if a.Element != "H" {
			n++
		}
	}
	target := r.SD*rng.NormFloat64() + r.Mean
	return n > 5 && float64(n) < target
}
