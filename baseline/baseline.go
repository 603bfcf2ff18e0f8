// Package baseline holds the optimisers that NF-BO is compared against in the
// same harness: a genetic algorithm on SELFIES symbols (in the spirit of
// STONED and SELFIES-GA, PMO baselines with published figures) and random
// sampling from the flow's prior. Each reads the same initial data and spends
// the same budget through the same budget-accounting objective.
package baseline

import (
	"context"
	"fmt"
)

// Objective is the budgeted objective as the baselines see it: the same
// interface the NF-BO loop spends its budget through.
type Objective interface {
	// Evaluate scores a batch of SMILES. A molecule seen before is answered
	// from the cache and costs nothing; new reports which ones were paid for.
	Evaluate(ctx context.Context, smiles []string) (scores []float64, isNew []bool, err error)
	// Calls returns the number of paid evaluations so far.
	Calls() int
}

// Codec converts between SELFIES and SMILES (selfies 2.0.0 semantics).
type Codec interface {
	Decode(selfies string) (smiles string, err error)
	Encode(smiles string) (selfies string, err error)
	// Split returns the symbols of a SELFIES string.
	Split(selfies string) ([]string, error)
}

// Recorder receives one line of progress per generation or batch.
type Recorder interface {
	Record(p Progress)
}

// Progress is a snapshot after one generation (GA) or batch (prior).
type Progress struct {
	Iteration int     // generation or batch, from 1
	Calls     int     // paid evaluations so far
	Best      float64 // best score so far
	Proposed  int     // candidates proposed in this iteration
	New       int     // of them, paid for
	Invalid   int     // of them, not decodable or empty
	Duplicate int     // of them, already evaluated
}

// admit decodes a proposed SELFIES string and re-encodes the molecule, so
// two proposals are the same molecule exactly when their canonical SELFIES
// agree. It counts the proposal in prog as invalid or duplicate, or marks
// it seen and returns it.
func admit(c Codec, seen map[string]bool, s string, prog *Progress) (Scored, bool) {
	smi, err := c.Decode(s)
	if err != nil || smi == "" {
		prog.Invalid++
		return Scored{}, false
	}
	can, err := c.Encode(smi)
	if err != nil || can == "" {
		prog.Invalid++
		return Scored{}, false
	}
	if seen[can] {
		prog.Duplicate++
		return Scored{}, false
	}
	seen[can] = true
	return Scored{SELFIES: can, SMILES: smi}, true
}

// score evaluates kids through obj, setting their scores and counting the
// paid ones in prog.New.
func score(ctx context.Context, obj Objective, kids []Scored, prog *Progress) error {
	smiles := make([]string, len(kids))
	for i, k := range kids {
		smiles[i] = k.SMILES
	}
	scores, isNew, err := obj.Evaluate(ctx, smiles)
	if err != nil {
		return err
	}
	if len(scores) != len(kids) || len(isNew) != len(kids) {
		return fmt.Errorf("baseline: objective returned %d scores for %d molecules", len(scores), len(kids))
	}
	for i := range kids {
		kids[i].Score = scores[i]
		if isNew[i] {
			prog.New++
		}
	}
	return nil
}
