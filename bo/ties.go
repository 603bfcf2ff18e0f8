package bo

import "fmt"

// A TieRule says which points of equal score Config.DistinctScores draws anchors and GA parents from.
// Objectives that cannot tell stereo, charge or tautomeric variants apart score them equal, and so do objectives
// built of clipped terms and coarse fingerprints for whole families of different molecules (scaffold_hop: 438
// side-chain variants of six scaffolds at 0.667; deco_hop: over a hundred skeletons at the best score).
type TieRule int

const (
	// TiesFirst takes, of each distinct score, the first point found: one point per score, so a plateau of
	// variants cannot take every anchor and parent, nor can a family of different molecules share them.
	TiesFirst TieRule = iota
	// TiesDrawn draws each distinct score's point uniformly among the points of that score, afresh at every
	// iteration: the family is walked, one member at a time.
	TiesDrawn
	// TiesBySkeleton takes the first point found of each distinct score and heavy-atom skeleton (Skeletons): the
	// variants of one molecule count once, the different molecules of a score each count, as a GA's population
	// holds them. It needs a Codec that implements Skeletons.
	TiesBySkeleton
)

// ParseTieRule returns the rule named s: "first", "draw" or "skeleton".
func ParseTieRule(s string) (TieRule, error) {
	switch s {
	case "first":
		return TiesFirst, nil
	case "draw":
		return TiesDrawn, nil
	case "skeleton":
		return TiesBySkeleton, nil
	}
	return 0, fmt.Errorf("bo: unknown tie rule %q (want first, draw or skeleton)", s)
}

// String returns the rule's name, as ParseTieRule reads it.
func (r TieRule) String() string {
	switch r {
	case TiesFirst:
		return "first"
	case TiesDrawn:
		return "draw"
	case TiesBySkeleton:
		return "skeleton"
	}
	return fmt.Sprintf("TieRule(%d)", int(r))
}

// Skeletons is implemented by a Codec that can name a molecule's heavy-atom skeleton (chem/molseq.Codec): the
// elements of its heavy atoms and which are bonded, without stereo, charges, hydrogens or bond orders.
type Skeletons interface {
	// Skeleton returns a string that a molecule's stereo, charge and tautomeric variants share and that
	// molecules of other skeletons do not.
	Skeleton(key string) string
}

// distinctScores returns one point of each distinct score in the data, in DistinctScores' order (the first
// point's), by the configured TieRule: the first point of each, one drawn uniformly among the points of its
// score (TiesDrawn), or the first point of each distinct score and skeleton (TiesBySkeleton).
func (o *Optimizer) distinctScores() []int {
	y := o.st.Y
	switch o.cfg.Ties {
	case TiesDrawn:
		idx := DistinctScores(y)
		if len(idx) == len(y) {
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
	case TiesBySkeleton:
		type tie struct {
			y    float64
			skel string
		}
		for len(o.skeletons) < len(y) {
			o.skeletons = append(o.skeletons, o.skeleton(o.st.SMILES[len(o.skeletons)]))
		}
		seen := make(map[tie]struct{}, len(y))
		var idx []int
		for i, v := range y {
			k := tie{v, o.skeletons[i]}
			if _, ok := seen[k]; ok {
				continue
			}
			seen[k] = struct{}{}
			idx = append(idx, i)
		}
		return idx
	}
	return DistinctScores(y)
}
