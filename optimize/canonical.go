package optimize

import (
	"context"
	"path/filepath"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// canonicalSMILES returns the SMILES to show a user for molecules the optimiser knows by its keys (the SELFIES
// decoder's Kekulé SMILES, "C1=CC=CC=C1", "[NH1]"): RDKit's canonical SMILES ("c1ccccc1", "[nH]"), the form a
// chemist reads and the one every other tool prints. A paid molecule's comes from the run's evaluation log in dir,
// which records it beside the SMILES scored; the others (initial molecules whose scores came from the data file)
// are canonicalised by canon. A molecule neither gives a canonical form keeps its key, so that something is
// always shown; the log is the optimiser's record, not this listing's, so a log that cannot be read is no error.
func canonicalSMILES(ctx context.Context, canon objective.Canonicalizer, dir string, keys []string) []string {
	out := make([]string, len(keys))
	byKey := map[string]string{}
	if recs, _, _, err := rundir.ReadLog(filepath.Join(dir, rundir.EvalLogFile)); err == nil {
		for _, r := range recs {
			if r.Canonical != "" {
				byKey[r.SMILES] = r.Canonical
			}
		}
	}
	var missing []int
	for i, k := range keys {
		c, ok := byKey[k]
		if !ok {
			missing = append(missing, i)
			c = k
		}
		out[i] = c
	}
	if len(missing) == 0 || canon == nil {
		return out
	}
	ask := make([]string, len(missing))
	for j, i := range missing {
		ask[j] = keys[i]
	}
	// Isomeric, as the Budget canonicalises for the log.
	cs, err := canon.Canonicalize(ctx, ask, true)
	if err != nil || len(cs) != len(ask) {
		return out
	}
	for j, i := range missing {
		if cs[j].SMILES != "" {
			out[i] = cs[j].SMILES
		}
	}
	return out
}
