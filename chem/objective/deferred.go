package objective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nfbo/nfbo/rundir"
)

// ErrAwaitingScores is returned (wrapped) by Deferred.Score, and so by a Budget over it, for molecules whose
// scores are not known yet: they were handed out to be scored elsewhere (ask/tell), and the caller should stop
// and come back when they have been told.
var ErrAwaitingScores = errors.New("objective: awaiting scores")

// Deferred is the Objective of ask/tell: it scores nothing. Score records the molecules it is asked for and
// returns ErrAwaitingScores, so that a Budget over it pays for nothing and logs nothing, and the optimiser stops
// with its batch saved (bo's pending batch), to be evaluated from the evaluation log once the scores are told.
// Molecules already told are in the Budget's log and never reach Score. Deferred is safe for concurrent use.
//
// With Canon set, Score also canonicalises the molecules it records (Asked's Canonical), so that the caller can
// show them as a chemist reads them.
type Deferred struct {
	Canon Canonicalizer

	mu    sync.Mutex
	asked []AskedMolecule
	seen  map[string]bool
	from  map[string]rundir.Origin // the origins a Budget's EvaluateFrom gave, by SMILES
}

// AskedMolecule is a molecule Deferred was asked to score.
type AskedMolecule struct {
	// SMILES is the molecule as the caller gave it.
	SMILES string
	// Canonical is its canonical SMILES (empty without Deferred.Canon).
	Canonical string
	// From is how the optimiser made it, when the Budget over Deferred was given it (Budget.EvaluateFrom).
	From *rundir.Origin
}

// originTaker is an Objective that keeps the molecules' origins: a Budget gives them before it asks for scores.
type originTaker interface {
	takeOrigins(smiles []string, from []rundir.Origin)
}

var _ originTaker = (*Deferred)(nil)

// takeOrigins keeps from[i] as the origin of smiles[i], for Asked.
func (d *Deferred) takeOrigins(smiles []string, from []rundir.Origin) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.from == nil {
		d.from = map[string]rundir.Origin{}
	}
	for i, s := range smiles {
		if from[i].By != "" {
			d.from[s] = from[i]
		}
	}
}

var _ Objective = (*Deferred)(nil)

// Score records smiles as asked for and returns ErrAwaitingScores (or the canonicaliser's error).
func (d *Deferred) Score(ctx context.Context, smiles []string) ([]Result, error) {
	canon := make([]Canonical, len(smiles))
	if d.Canon != nil {
		c, err := d.Canon.Canonicalize(ctx, smiles, true)
		if err != nil {
			return nil, fmt.Errorf("objective: canonicalising the molecules asked for: %w", err)
		}
		if len(c) != len(smiles) {
			return nil, fmt.Errorf("objective: canonicaliser returned %d results for %d molecules", len(c), len(smiles))
		}
		canon = c
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	for i, s := range smiles {
		if !d.seen[s] {
			d.seen[s] = true
			m := AskedMolecule{SMILES: s, Canonical: canon[i].SMILES}
			if o, ok := d.from[s]; ok {
				o.Parents = slices.Clone(o.Parents)
				m.From = &o
			}
			d.asked = append(d.asked, m)
		}
	}
	return nil, ErrAwaitingScores
}

// Asked returns the molecules Score was asked for, in order, each once.
func (d *Deferred) Asked() []AskedMolecule {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]AskedMolecule(nil), d.asked...)
}
