package optimize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/rundir"
)

// runRules returns the chemistry rules the run in a.Out proposes under: a new run's r, written to its
// rules.json before anything is paid; a resumed run's own rules.json, which r must equal (a run that changed
// its rules midway would not be the run it was); none for a run made by an nfbo without rules, said once.
func runRules(a Args, r rules.Rules, warnf func(string, ...any)) (rules.Rules, error) {
	path := filepath.Join(a.Out, rundir.RulesFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		saved, err := rules.Parse(path, data)
		if err != nil {
			return r, fmt.Errorf("optimize: %w", err)
		}
		if !bytes.Equal(saved.JSON(), r.JSON()) && (a.Rules == "" || a.Rules == rules.DefaultName) {
			// -rules default names the default of the nfbo that began the run, kept in rules.json.
			return saved, nil
		}
		if !bytes.Equal(saved.JSON(), r.JSON()) {
			return r, argErrorf("-rules %q (%s): the run in %s proposes under other chemistry rules (%s, in %s); "+
				"give them again, or start a new run", a.Rules, r, a.Out, saved, path)
		}
		return saved, nil
	case !errors.Is(err, fs.ErrNotExist):
		return r, fmt.Errorf("optimize: %w", err)
	}
	if a.Resume && (rundir.Exists(filepath.Join(a.Out, rundir.CheckpointFile)) || rundir.Exists(filepath.Join(a.Out, rundir.AskedFile))) {
		if !r.IsZero() {
			warnf("the run in %s was made before chemistry rules existed: it goes on without them", a.Out)
		}
		return rules.Rules{}, nil
	}
	return r, atomicfile.Write(path, append(r.JSON(), '\n'))
}

// ruleChecker is bo.Rules by the RDKit worker.
type ruleChecker struct {
	pool  *objective.Pool
	rules []byte // JSON
}

// Check implements bo.Rules.
func (c ruleChecker) Check(ctx context.Context, why, smiles []string) error {
	got, err := c.pool.Check(ctx, c.rules, smiles)
	if err != nil {
		return err
	}
	copy(why, got)
	return nil
}

// Kind implements bo.RuleKinds: the progress line counts the filtered candidates by kind of rule.
func (c ruleChecker) Kind(why string) string { return rules.Kind(why) }

// newRuleChecker returns the optimiser's rules: nil when r allows everything, else r checked by the RDKit
// worker behind canon, whose verdict on the rules themselves (a bad SMARTS) comes before anything is paid.
// The initial molecules (SMILES) are the user's chemistry: those holding an atom environment that ZINC250k and
// GuacaMol 10k do not become r's seen molecules, so that their analogs may be proposed (again at every resume:
// the environments alone are cheap to check). When say is set (a new run), those that break another rule are
// said, since no analog that keeps what breaks it will be proposed; checking them all costs a few milliseconds
// a molecule, too much to repeat at every ask.
func newRuleChecker(ctx context.Context, r rules.Rules, canon objective.Canonicalizer, initial []string, say bool,
	warnf func(string, ...any)) (bo.Rules, error) {
	if r.IsZero() {
		return nil, nil
	}
	pool, ok := canon.(*objective.Pool)
	if !ok {
		return nil, argErrorf("the chemistry rules (%s) are checked by RDKit, which is missing; install it, or give -rules none", r)
	}
	if _, err := pool.Check(ctx, r.JSON(), nil); err != nil {
		return nil, &ArgError{err}
	}
	if r.SeenEnvironments && len(initial) > 0 {
		why, err := pool.Check(ctx, rules.Rules{SeenEnvironments: true}.JSON(), initial)
		if err != nil {
			return nil, err
		}
		var own []string
		for i, w := range why {
			if rules.Kind(w) == rules.KindUnseen {
				own = append(own, initial[i])
			}
		}
		r = r.WithSeen(own)
	}
	if say && len(initial) > 0 {
		why, err := pool.Check(ctx, r.JSON(), initial)
		if err != nil {
			return nil, err
		}
		if n, summary := rules.Summarize(why); n > 0 {
			warnf("warning: %d of the %d initial molecules break the chemistry rules (%s): no analog that keeps what breaks "+
				"them will be proposed; -rules FILE lifts a rule (docs/USAGE.md, \"Chemistry rules\")", n, len(initial), summary)
		}
	}
	return ruleChecker{pool: pool, rules: r.JSON()}, nil
}
