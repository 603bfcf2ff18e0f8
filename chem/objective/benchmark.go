package objective

import (
	"context"
	"fmt"
)

// BenchmarkScores prepares GuacaMol's benchmark score
// (goal_directed_benchmark.assess_model): the molecules are canonicalised
// without stereochemistry, invalid ones are dropped, duplicates are removed
// keeping the first, and the remaining canonical SMILES are scored by obj.
// It returns the unique canonical SMILES and their scores; pass the scores
// to metrics.GuacaMolScore with the task's top-k specification (TaskInfo.TopK).
func BenchmarkScores(ctx context.Context, canon Canonicalizer, obj Objective, smiles []string) ([]string, []float64, error) {
	cs, err := canon.Canonicalize(ctx, smiles, false)
	if err != nil {
		return nil, nil, fmt.Errorf("objective: benchmark score: %w", err)
	}
	seen := make(map[string]bool, len(cs))
	var unique []string
	for _, c := range cs {
		if c.SMILES == "" || seen[c.SMILES] {
			continue
		}
		seen[c.SMILES] = true
		unique = append(unique, c.SMILES)
	}
	res, err := obj.Score(ctx, unique)
	if err != nil {
		return nil, nil, fmt.Errorf("objective: benchmark score: %w", err)
	}
	scores := make([]float64, len(res))
	for i, r := range res {
		scores[i] = r.Score
	}
	return unique, scores, nil
}
