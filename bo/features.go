package bo

import "fmt"

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
