// Package objective scores molecules: the expensive black box that NF-BO
// exists to spare.
//
// The optimiser depends only on the small Objective interface. Three kinds
// of implementation are provided:
//
//   - the RDKit worker pool (NewRDKit): N long-lived Python processes
//     running the embedded worker, which implements the GuacaMol v2
//     goal-directed tasks, the 20 PMO tasks that need only RDKit, QED, the
//     SA score and LOL-BO's penalised logP, bit for bit as their reference
//     code computes them;
//   - any external program that speaks the same JSON-lines protocol
//     (NewCommand; docs/objective-protocol.md), so a user can plug in a
//     docking score, a model or a lab assay in any language;
//   - plain Go functions (Func), for tests.
//
// Budget wraps an Objective with PMO's accounting: a molecule is identified
// by its RDKit canonical SMILES, a molecule seen before is answered from the
// cache and costs nothing, and every paid evaluation is appended to a
// JSON-lines log and synced to disk before its score is returned. Reopening
// the log restores the cache and the call count exactly.
//
// Package metrics (a subpackage) computes Top-k, PMO's AUC Top-k and the
// GuacaMol benchmark score from the evaluation log.
//
// Scores follow NF-BO's rule: an invalid or empty SMILES, a negative
// (GuacaMol "corrupt") or a non-finite score is reported as 0, and the
// reason is given beside it in Result.Reason. Tasks whose reference keeps
// negative values (penalised logP) keep them.
package objective

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Objective scores a batch of molecules given as SMILES.
//
// On success Score returns one Result per input, in order, all with Done
// set. On failure (cancelled context, a worker that cannot start, a broken
// external program) it returns a non-nil error and, when some molecules were
// scored before the failure, a slice of len(smiles) Results in which only
// the entries with Done set hold scores; otherwise the slice is nil. Callers
// that pay for evaluations (Budget) keep the Done entries.
type Objective interface {
	Score(ctx context.Context, smiles []string) ([]Result, error)
}

// Result is the outcome for one molecule.
type Result struct {
	// Score is the objective value. It is 0 when Reason is set.
	Score float64
	// Reason is empty for a real score. Otherwise it says why the score is
	// 0: empty or invalid SMILES, a corrupt (-1), negative or non-finite
	// score, or (with Failed) why the objective gave no answer.
	Reason string
	// Done reports that the molecule was dealt with. It is false only in
	// the partial results returned alongside an error.
	Done bool
	// Failed reports that the objective gave no answer for this molecule
	// although it answered others: its program crashed, hung or garbled
	// its answer on this molecule alone, on every attempt, or answered a
	// score that is not a finite number. Such a molecule scores 0 with the
	// reason, and a Budget neither pays for it nor logs it, so that a
	// resumed run asks for it again. Done is set too.
	Failed bool
}

// Canonical is the canonical form of one SMILES.
type Canonical struct {
	// SMILES is RDKit's canonical SMILES; empty when the input is invalid.
	SMILES string
	// Reason says why SMILES is empty (e.g. the RDKit parse error).
	Reason string
}

// A Canonicalizer maps SMILES to canonical SMILES. Budget identifies
// molecules by their canonical form; the RDKit pool implements it.
type Canonicalizer interface {
	// Canonicalize returns one Canonical per input. With isomeric false,
	// stereochemistry is dropped (GuacaMol's benchmark score does this).
	Canonicalize(ctx context.Context, smiles []string, isomeric bool) ([]Canonical, error)
}

// Func is an Objective backed by a plain Go function of one SMILES, for
// tests and for objectives cheap enough to compute in-process. The function
// reports a molecule it cannot score by returning a non-nil error; the
// molecule then scores 0 with the error as its Reason. Non-finite scores
// also become 0 with a reason.
type Func func(ctx context.Context, smiles string) (float64, error)

var _ Objective = Func(nil)

// Score implements Objective. It checks ctx between molecules and returns
// the molecules scored so far with ctx's error when it is cancelled.
func (f Func) Score(ctx context.Context, smiles []string) ([]Result, error) {
	out := make([]Result, len(smiles))
	for i, s := range smiles {
		if err := ctx.Err(); err != nil {
			if i == 0 {
				return nil, err
			}
			return out, err
		}
		v, err := f(ctx, s)
		switch {
		case err != nil:
			out[i] = Result{Reason: err.Error(), Done: true}
		case math.IsNaN(v) || math.IsInf(v, 0):
			out[i] = Result{Reason: fmt.Sprintf("non-finite score %v", v), Done: true}
		default:
			out[i] = Result{Score: v, Done: true}
		}
	}
	return out, nil
}

// ErrRDKitMissing is returned (wrapped) when the Python interpreter cannot
// be run or cannot import RDKit. The wrapping error names the interpreter
// and the apt command that installs RDKit for DefaultPython.
var ErrRDKitMissing = errors.New("RDKit is not available")

// rdkitMissing returns the error of an interpreter that cannot serve the
// RDKit worker, naming it; detail says why.
func rdkitMissing(python, detail string) error {
	return fmt.Errorf("objective: the Python interpreter %s cannot run the RDKit worker (%s): %w; "+
		"install RDKit for %s with: sudo apt-get install -y python3-rdkit rdkit-data python3-numpy, "+
		"or name an interpreter that can import rdkit", python, detail, ErrRDKitMissing, DefaultPython)
}
