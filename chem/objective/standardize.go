package objective

import (
	"context"
	"encoding/json"
	"fmt"
)

// Standardized is a molecule as Standardize returns it.
type Standardized struct {
	// SMILES is the parent molecule's canonical SMILES; empty when the input is not a molecule.
	SMILES string
	// Note says what standardisation changed, e.g. "kept the largest fragment of 2 (dropped [Na+]),
	// neutralised"; empty when nothing did.
	Note string
	// Reason says why SMILES is empty.
	Reason string
}

// Standardize reduces molecules as chemists keep them to the molecules nfbo optimises: a salt or a mixture to its
// largest organic fragment, neutralised where its charge was the salt's. texts are SMILES, or molfile blocks (an
// SDF record up to "M  END") when molblocks is set. It needs the RDKit worker (NewRDKit).
func (pl *Pool) Standardize(ctx context.Context, texts []string, molblocks bool) ([]Standardized, error) {
	out := make([]Standardized, len(texts))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		req := &request{Op: "standardize"}
		if molblocks {
			req.MolBlocks = texts[lo:hi]
		} else {
			req.SMILES = texts[lo:hi]
		}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return 0, err
		}
		if !resp.OK {
			return 0, &errFatal{fmt.Errorf("objective: the %s cannot standardize: %s", pl.opts.name, resp.Error)}
		}
		var errs []string
		_ = json.Unmarshal(resp.Errors, &errs)
		if len(resp.Canonical) != hi-lo || len(resp.Notes) != hi-lo || len(errs) != hi-lo {
			s.p.kill()
			return 0, fmt.Errorf("worker answered %d molecules for %d", len(resp.Canonical), hi-lo)
		}
		for i := lo; i < hi; i++ {
			out[i] = Standardized{SMILES: resp.Canonical[i-lo], Note: resp.Notes[i-lo], Reason: errs[i-lo]}
			if out[i].SMILES == "" && out[i].Reason == "" {
				out[i].Reason = "not a molecule"
			}
		}
		return hi - lo, nil
	}
	poison := func(i int, err error) {
		out[i] = Standardized{Reason: fmt.Sprintf("worker failed on this molecule: %v", err)}
	}
	if _, err := pl.run(ctx, len(texts), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: standardizing %d molecules: %w", len(texts), err)
	}
	return out, nil
}
