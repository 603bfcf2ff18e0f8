package bo

import (
	"fmt"

	"github.com/nfbo/nfbo/bo/gp"
)

// BigramBuckets is the number of hashed bigram counts in TokenFeatures.
const BigramBuckets = 512

// TokenFeatureLen returns the length of the feature vector of one sequence over a vocabulary of v tokens.
func TokenFeatureLen(v int) int { return v + BigramBuckets }

// TokenFeatures writes the feature vectors (B×(V+BigramBuckets)) of B = len(tokens)/T token sequences (B×T) over
// a vocabulary of v tokens into dst: the count of each token, then the counts of adjacent token pairs hashed
// into BigramBuckets buckets, both up to the first stop token (the padding).
//
// These are the token-screening surrogate's inputs. On held-out GuacaMol molecules an exact GP on them ranks
// scores far better than one on the flow's latents (BENCHMARKS.md, "Which surrogate inputs"): a latent moves
// at every position after the first changed token, so two molecules one substitution apart can be far apart
// in latent space, while their counts differ by a few units.
func TokenFeatures(dst []float64, tokens []int, t, v, stop int) {
	w := TokenFeatureLen(v)
	b := len(tokens) / t
	if t <= 0 || len(tokens) != b*t || len(dst) != b*w {
		panic(fmt.Sprintf("bo: TokenFeatures: bad shape: T=%d V=%d len(tokens)=%d len(dst)=%d", t, v, len(tokens), len(dst)))
	}
	clear(dst)
	for i := range b {
		row, seq := dst[i*w:(i+1)*w], tokens[i*t:(i+1)*t]
		for p, id := range seq {
			if id == stop {
				break
			}
			if id < 0 || id >= v {
				panic(fmt.Sprintf("bo: TokenFeatures: token %d outside the vocabulary of %d", id, v))
			}
			row[id]++
			if p+1 < t && seq[p+1] != stop {
				row[v+bigramBucket(id, seq[p+1])]++
			}
		}
	}
}

// bigramBucket hashes an ordered token pair into [0, BigramBuckets).
func bigramBucket(a, b int) int { return (a*7919 + b*104729) % BigramBuckets }

// SurrogateInputs names what the screened variant's GP reads (ScreenedSettings.Inputs) and so the kernel that goes
// with it. bo computes token counts itself; the other inputs come from Problem.Features, whose vectors must be laid
// out as the name says (chem/fingerprint and optimize make them: bo only names them).
type SurrogateInputs string

const (
	// InputsTokens are SELFIES token and hashed bigram counts (TokenFeatures) under ScreenedSettings.Exact's kernel
	// (Matérn-5/2 unless set). The zero value "" means the same, or, where Problem.Features is set, its vectors
	// under Exact's kernel (a caller's own inputs, and runs whose config.json predates the name).
	InputsTokens SurrogateInputs = "tokens"
	// InputsMorgan are Morgan count fingerprints (Problem.Features) under the Tanimoto kernel (gp.Tanimoto).
	InputsMorgan SurrogateInputs = "morgan"
	// InputsMorganTokens are a molecule's fingerprints followed by its token counts (Problem.Features, Width =
	// the fingerprints' width + TokenFeatureLen) under gp.TanimotoMatern, s·(w·Tanimoto + (1−w)·Matérn), w fitted
	// by the marginal likelihood: the fingerprints' substructures with the counts' atoms and rings (an isomer's
	// formula, a ring count), which fingerprints alone lose.
	InputsMorganTokens SurrogateInputs = "morgan+tokens"
)

// ParseSurrogateInputs returns the inputs named s ("" is the zero value).
func ParseSurrogateInputs(s string) (SurrogateInputs, error) {
	switch in := SurrogateInputs(s); in {
	case "", InputsTokens, InputsMorgan, InputsMorganTokens:
		return in, nil
	}
	return "", fmt.Errorf("bo: surrogate inputs %q: want %s, %s or %s", s, InputsTokens, InputsMorgan, InputsMorganTokens)
}

// exactConfig returns the GP settings for inputs of width d from Problem.Features (fw = 0: none): exact with the
// kernel the inputs name, or an error where the Problem does not supply them.
func (in SurrogateInputs) exactConfig(exact gp.ExactConfig, fw, v int) (gp.ExactConfig, error) {
	switch in {
	case "", InputsTokens:
		if in == InputsTokens && fw > 0 {
			return exact, fmt.Errorf("bo: surrogate inputs %s are computed by bo, but Problem.Features is set", in)
		}
		return exact, nil
	case InputsMorgan:
		if fw == 0 {
			return exact, fmt.Errorf("bo: surrogate inputs %s need Problem.Features (the fingerprints)", in)
		}
		exact.Kernel = gp.Tanimoto
		return exact, nil
	case InputsMorganTokens:
		split := fw - TokenFeatureLen(v)
		if fw == 0 || split <= 0 {
			return exact, fmt.Errorf("bo: surrogate inputs %s need Problem.Features of fingerprints then %d token counts (width %d)",
				in, TokenFeatureLen(v), fw)
		}
		exact.Kernel, exact.Split = gp.TanimotoMatern, split
		return exact, nil
	}
	_, err := ParseSurrogateInputs(string(in))
	return exact, err
}
