package optimize

import (
	"context"
	"fmt"
	"math"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/rundir"
)

// The adapters that wire the packages into the optimiser.
var (
	_ bo.Flow         = (*seqflow.Flow)(nil)
	_ bo.Checkpointer = (*seqflow.Flow)(nil)
	_ bo.Codec        = (*molseq.Codec)(nil)
	_ bo.Objective    = budgetObjective{}
	_ bo.CallCounter  = budgetObjective{}
	_ bo.Tracer       = budgetObjective{}
)

// budgetObjective is the optimiser's Objective over an evaluation budget: every paid evaluation is in the
// Budget's log (synced) before the optimiser sees its score, and a molecule already in the log (the pending
// batch replayed after a resume) is answered from the Budget's cache, unpaid. It counts calls as the Budget does
// (PMO's accounting: a molecule is paid for once, by its RDKit canonical SMILES), so the optimiser stops with
// exactly the budget in the log.
type budgetObjective struct {
	b    *objective.Budget
	base int // calls paid before the optimiser started (the initial molecules)
	// minimize makes the optimiser maximise −score (rundir.Info.Gain). A molecule without a score (an error, or
	// RDKit cannot read it) then gets the worst gain of the run so far (initial gains in worst0 and the log's
	// valid scores after this call), not 0, which for a minimised objective may be the best there is; the rule
	// depends only on the log, so a resumed run gives the same.
	minimize bool
	worst0   float64 // the lowest initial gain; +Inf without initial scores
}

// Calls returns the Budget's paid calls since the optimiser started.
func (o budgetObjective) Calls() int { return o.b.Calls() - o.base }

// Evaluate scores the molecules. paid[i] is true when this call paid for molecule i (Status Paid); cached and
// invalid molecules (RDKit cannot parse them: score 0, free, PMO's rule) are unpaid. A molecule left unscored
// (budget exhausted, objective failure) is an error: its batch is evaluated again after a resume.
func (o budgetObjective) Evaluate(ctx context.Context, smiles []string) (scores []float64, paid []bool, err error) {
	return o.EvaluateFrom(ctx, smiles, nil)
}

// EvaluateFrom is Evaluate that keeps each paid molecule's origin, from[i], in its record of the Budget's log.
func (o budgetObjective) EvaluateFrom(ctx context.Context, smiles []string, from []rundir.Origin) (scores []float64, paid []bool, err error) {
	evs, err := o.b.EvaluateFrom(ctx, smiles, from)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate %d molecules: %w", len(smiles), err)
	}
	if len(evs) != len(smiles) {
		return nil, nil, fmt.Errorf("evaluate %d molecules: the budget answered %d", len(smiles), len(evs))
	}
	scores, paid = make([]float64, len(evs)), make([]bool, len(evs))
	for i, e := range evs {
		if e.Status == objective.NotScored {
			return nil, nil, fmt.Errorf("molecule %d (%s) was not scored", i, smiles[i])
		}
		scores[i], paid[i] = e.Score, e.Status == objective.Paid
	}
	if o.minimize {
		worst := o.worst0
		for _, r := range o.b.Records() {
			if r.Error == "" {
				worst = min(worst, -r.Score)
			}
		}
		if math.IsInf(worst, 1) {
			worst = 0
		}
		for i, e := range evs {
			scores[i] = -scores[i]
			if e.Reason != "" || e.Status == objective.Invalid || e.Status == objective.Failed {
				scores[i] = worst
			}
		}
	}
	return scores, paid, nil
}

// newBudgetObjective returns the optimiser's objective over b for a run described by info, base calls paid
// before it started, and the initial scores (not gains) it knows.
func newBudgetObjective(b *objective.Budget, base int, info rundir.Info, initial []float64) budgetObjective {
	o := budgetObjective{b: b, base: base, minimize: info.Minimize, worst0: math.Inf(1)}
	for _, s := range initial {
		o.worst0 = min(o.worst0, info.Gain(s))
	}
	return o
}

// keyCanonicalizer is the Canonicalizer used when RDKit is not available to an external objective: the codec's
// keys (SMILES decoded from canonical SELFIES) are already canonical for the optimiser, so they identify
// molecules as they are. Only the empty string is invalid.
type keyCanonicalizer struct{}

// Canonicalize returns each SMILES as its own canonical form.
func (keyCanonicalizer) Canonicalize(_ context.Context, smiles []string, _ bool) ([]objective.Canonical, error) {
	out := make([]objective.Canonical, len(smiles))
	for i, s := range smiles {
		out[i].SMILES = s
		if s == "" {
			out[i].Reason = "empty SMILES"
		}
	}
	return out, nil
}
