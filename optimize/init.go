package optimize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/objective"
)

// standardizeInit reads the SDF records of rows and reduces salts and mixtures to their parent molecule with
// RDKit (objective.Pool.Standardize), saying so per molecule with warnf; a record RDKit cannot read is skipped
// with its line. Without RDKit an SDF is an error and mixtures are left as they are (molfile.Canonicalize skips them).
func standardizeInit(ctx context.Context, python, path string, rows []molfile.Row, warnf func(format string, args ...any)) ([]molfile.Row, error) {
	var idx []int
	var texts []string
	blocks := rows[0].MolBlock != ""
	for i, r := range rows {
		switch {
		case blocks:
			texts = append(texts, r.MolBlock)
		case strings.Contains(r.SMILES, "."):
			texts = append(texts, r.SMILES)
		default:
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return rows, nil
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{Python: python})
	if err == nil {
		defer pool.Close()
		err = pool.Start(ctx)
	}
	if err != nil {
		if !blocks && errors.Is(err, objective.ErrRDKitMissing) {
			return rows, nil
		}
		return nil, fmt.Errorf("optimize: reading %s needs RDKit: %w", path, err)
	}
	std, err := pool.Standardize(ctx, texts, blocks)
	if err != nil {
		return nil, fmt.Errorf("optimize: %s: %w", path, err)
	}
	skip := map[int]bool{}
	for k, i := range idx {
		r, s := &rows[i], std[k]
		what := r.Where(path)
		switch {
		case s.SMILES == "":
			warnf("%s: %s (skipped)", what, s.Reason)
			skip[i] = true
		case s.Note != "":
			warnf("%s: %s: %s", what, s.Note, s.SMILES)
		}
		r.SMILES = s.SMILES
	}
	if len(skip) == 0 {
		return rows, nil
	}
	kept := rows[:0:0]
	for i, r := range rows {
		if !skip[i] {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("optimize: %s: none of its %d molecules can be read", path, len(rows))
	}
	return kept, nil
}
