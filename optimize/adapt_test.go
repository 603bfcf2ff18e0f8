package optimize

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
)

// TestBudgetObjectivePaid checks the paid flags and the call count of the Budget adapter: a new molecule is
// paid, a repeat (in the same batch, a later batch or after reopening the log) is not, and the count leaves out
// the calls made before the optimiser started.
func TestBudgetObjectivePaid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evaluations.jsonl")
	scored := 0
	f := objective.Func(func(_ context.Context, s string) (float64, error) {
		scored++
		return float64(len(s)), nil
	})
	b, err := objective.OpenBudget(path, f, keyCanonicalizer{}, objective.BudgetOptions{Task: "len"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Evaluate(context.Background(), []string{"C"}); err != nil { // an "initial" call
		t.Fatal(err)
	}
	o := budgetObjective{b: b, base: 1}
	check := func(smiles []string, wantPaid []bool, wantCalls int) {
		t.Helper()
		scores, paid, err := o.Evaluate(context.Background(), smiles)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range smiles {
			if scores[i] != float64(len(s)) {
				t.Errorf("%s scored %v, want %d", s, scores[i], len(s))
			}
		}
		if !slices.Equal(paid, wantPaid) || o.Calls() != wantCalls {
			t.Errorf("Evaluate(%q): paid %v, calls %d; want %v, %d", smiles, paid, o.Calls(), wantPaid, wantCalls)
		}
	}
	check([]string{"CC", "CCO", "CC"}, []bool{true, true, false}, 2)
	check([]string{"CCO", "CCCC", "C"}, []bool{false, true, false}, 3)
	b.Close()
	b, err = objective.OpenBudget(path, f, keyCanonicalizer{}, objective.BudgetOptions{Task: "len"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o = budgetObjective{b: b, base: 1}
	check([]string{"CCCC", "CC"}, []bool{false, false}, 3)
	if scored != 4 {
		t.Errorf("objective called for %d molecules, want 4", scored)
	}
	// An invalid molecule (no canonical form) is free and scores 0.
	if scores, paid, err := o.Evaluate(context.Background(), []string{""}); err != nil || paid[0] || scores[0] != 0 {
		t.Errorf("empty SMILES: %v %v %v", scores, paid, err)
	}
}
