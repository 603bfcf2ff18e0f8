package objective

import (
	"context"
	"encoding/json"
	"fmt"
)

// Check returns, for each molecule, "" when it keeps the chemistry rules (their JSON, as chem/rules writes it)
// or the first rule it breaks, e.g. "radical on C4". Rules the worker cannot use (an invalid SMARTS, an unknown
// catalogue) are an error, also with no molecules: a caller checks its rules that way before anything is paid.
// It needs the RDKit worker (NewRDKit).
func (pl *Pool) Check(ctx context.Context, rules json.RawMessage, smiles []string) ([]string, error) {
	if len(smiles) == 0 {
		resp, err := pl.single(ctx, &request{Op: "check", Rules: rules})
		if err != nil {
			return nil, fmt.Errorf("objective: chemistry rules: %w", err)
		}
		if !resp.OK {
			return nil, fmt.Errorf("objective: chemistry rules: %s", resp.Error)
		}
		return nil, nil
	}
	out := make([]string, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		resp, err := pl.do(ctx, s, &request{Op: "check", Rules: rules, SMILES: smiles[lo:hi]}, hi-lo)
		if err != nil {
			return 0, err
		}
		if !resp.OK {
			return 0, &errFatal{fmt.Errorf("objective: chemistry rules: %s", resp.Error)}
		}
		var why []string
		if err := json.Unmarshal(resp.Errors, &why); err != nil || len(why) != hi-lo {
			s.p.kill()
			return 0, fmt.Errorf("worker answered %d verdicts for %d molecules (%v)", len(why), hi-lo, err)
		}
		copy(out[lo:hi], why)
		return hi - lo, nil
	}
	poison := func(i int, err error) { out[i] = fmt.Sprintf("check failed: %v", err) }
	if _, err := pl.run(ctx, len(smiles), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: checking %d molecules against the chemistry rules: %w", len(smiles), err)
	}
	return out, nil
}
