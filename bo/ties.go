package bo

import "fmt"

// A TieRule says which point of each distinct score Config.DistinctScores draws anchors and GA parents from.
// Objectives that cannot tell stereo, charge or tautomeric variants apart score them equal, and so do objectives
// built of clipped terms and coarse fingerprints for whole families of different molecules (scaffold_hop: 438
// side-chain variants of six scaffolds at 0.667).
type TieRule int

const (
	// TiesFirst takes, of each distinct score, the first point found.
	TiesFirst TieRule = iota
	// TiesDrawn draws each distinct score's point uniformly among the points of that score, afresh at every
	// iteration: a family the objective scores equal is walked, one member at a time, rather than one of it bred
	// from (BENCHMARKS.md, "Plateaus at the top"; a point per molecule of each score instead was tried and lost:
	// "Ties counted per molecule").
	TiesDrawn
)

// ParseTieRule returns the rule named s: "first" or "draw".
func ParseTieRule(s string) (TieRule, error) {
	switch s {
	case "first":
		return TiesFirst, nil
	case "draw":
		return TiesDrawn, nil
	}
	return 0, fmt.Errorf("bo: unknown tie rule %q (want first or draw)", s)
}

// String returns the rule's name, as ParseTieRule reads it.
func (r TieRule) String() string {
	switch r {
	case TiesFirst:
		return "first"
	case TiesDrawn:
		return "draw"
	}
	return fmt.Sprintf("TieRule(%d)", int(r))
}

// distinctScores returns one point of each distinct score in the data, in DistinctScores' order (the first
// point's), by the configured TieRule: the first point of each, or one drawn uniformly among the points of its
// score (TiesDrawn).
func (o *Optimizer) distinctScores() []int {
	y := o.st.Y
	idx := DistinctScores(y)
	if o.cfg.Ties != TiesDrawn || len(idx) == len(y) {
		return idx
	}
	members := make(map[float64][]int, len(idx))
	for i, v := range y {
		members[v] = append(members[v], i)
	}
	for k, i := range idx {
		if m := members[y[i]]; len(m) > 1 {
			idx[k] = m[o.rng.IntN(len(m))]
		}
	}
	return idx
}
