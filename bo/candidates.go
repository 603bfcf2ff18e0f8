package bo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Perturb writes C = len(dst)/D candidates into dst (C×D) around centre (D): candidate i equals centre except
// that each dimension j is replaced, independently with probability prob[j/F], by
// centre[j] + halfWidth·(2·unit[i·D+j] − 1), a point of the box centre ± halfWidth. unit (C×D) holds points of
// [0,1)^D (scrambled Sobol or uniform). prob has one entry per position (T = D/F). As in the reference there is
// no guarantee that at least one dimension changes.
func Perturb(dst, centre []float64, halfWidth float64, prob []float64, f int, unit []float64, rng *rand.Rand) {
	d := len(centre)
	if d == 0 || f <= 0 || d%f != 0 || len(prob) != d/f || len(dst)%d != 0 || len(unit) != len(dst) {
		panic(fmt.Sprintf("bo: Perturb: bad shape: D=%d F=%d len(prob)=%d len(dst)=%d len(unit)=%d",
			d, f, len(prob), len(dst), len(unit)))
	}
	c := len(dst) / d
	for i := range c {
		row, u := dst[i*d:(i+1)*d], unit[i*d:(i+1)*d]
		copy(row, centre)
		for j := range row {
			if rng.Float64() < prob[j/f] {
				row[j] = centre[j] + halfWidth*(2*u[j]-1)
			}
		}
	}
}

// TACSConfig holds the settings of Token-level Adaptive Candidate Sampling.
type TACSConfig struct {
	Tau     float64 // softmax temperature τ; 0 turns TACS off (reference default 400 on the README command lines)
	Epsilon float64 // likelihood smoothing ε; if 0, the default is 0.1
	Samples int     // Monte Carlo samples per position; if 0, the default is 1 (the reference hard-codes 1)
}

// TACSProbabilities writes per-position perturbation probabilities (N×T) for N anchors into dst, as the
// reference computes them (mlvlab/NFBO BO/optimizer.py, block "TACS"):
//
//  1. for anchor n and position t′, copy its latent with the F values of position t′ replaced by N(0, I), Samples
//     times; decode and canonicalise all N·T·Samples copies;
//  2. p̃ₜ = 1 − ε/2 where decoded token t equals the anchor's token t and ε/2 otherwise (every position of an
//     invalid decode mismatches);
//  3. ω[n,t′] = T·log(1 − ε/2) − log mean_b exp(Σₜ log p̃ₜ), the PMI of position t′;
//  4. s[n,:] = softmax(ω[n,:]/τ); dst[n,t′] = min(κ·s[n,t′], 1) with κ = baseProb·T.
//
// tokens (N×T) are the anchors' canonical sequences and latents (N×D) their encodings.
//
// With stop ≥ 0 (the stop id) the copies that cannot change the molecule are not decoded: the flow is
// autoregressive (a position's token depends on the latent's positions up to it) and the codec reads a sequence
// up to its first stop, so a copy resampled after the position where the anchor's own latent decodes stop
// decodes to that same molecule. Its hits are that decode's. With stop < 0 every copy is decoded.
func TACSProbabilities(ctx context.Context, dst []float64, flow Flow, codec Codec, tokens []int, latents []float64,
	cfg TACSConfig, baseProb float64, stop int, rng *rand.Rand) error {
	t, f := flow.Shape()
	d := t * f
	n := len(tokens) / t
	if len(tokens) != n*t || len(latents) != n*d || len(dst) != n*t || cfg.Tau <= 0 {
		panic("bo: TACSProbabilities: bad shape or τ ≤ 0")
	}
	eps := cfg.Epsilon
	if eps == 0 {
		eps = 0.1
	}
	ns := max(cfg.Samples, 1)
	// end[a]: the positions of anchor a whose copies are decoded, 0 … end[a]−1; own: its latent's decode.
	end := make([]int, n)
	var own []int
	for a := range n {
		end[a] = t
	}
	if stop >= 0 {
		own = make([]int, n*t)
		if err := flow.Decode(ctx, own, latents); err != nil {
			return fmt.Errorf("bo: TACS decode: %w", err)
		}
		for a := range n {
			if i := slices.Index(own[a*t:(a+1)*t], stop); i >= 0 {
				end[a] = i + 1
			}
		}
	}
	// first[a]: the first decoded row of anchor a's copies. Every copy draws its noise, decoded or not, so that
	// the random stream does not depend on stop.
	first := make([]int, n+1)
	for a := range n {
		first[a+1] = first[a] + end[a]*ns
	}
	lat := make([]float64, first[n]*d)
	noise := make([]float64, f)
	for a := range n {
		for tp := range t {
			for b := range ns {
				for j := range noise {
					noise[j] = rng.NormFloat64()
				}
				if tp >= end[a] {
					continue
				}
				r := first[a] + tp*ns + b
				row := lat[r*d : (r+1)*d]
				copy(row, latents[a*d:(a+1)*d])
				copy(row[tp*f:(tp+1)*f], noise)
			}
		}
	}
	dec := make([]int, first[n]*t)
	if err := flow.Decode(ctx, dec, lat); err != nil {
		return fmt.Errorf("bo: TACS decode: %w", err)
	}
	canon := make([]int, t)
	logHit, logMiss := math.Log(1-eps/2), math.Log(eps/2)
	kappa := baseProb * float64(t)
	lp := make([]float64, ns)
	logLik := func(seq, anchor []int) float64 { // log Π p̃ₜ
		hits := 0
		if _, ok := codec.Canonical(canon, seq); ok {
			for k := range t {
				if canon[k] == anchor[k] {
					hits++
				}
			}
		}
		return float64(hits)*logHit + float64(t-hits)*logMiss
	}
	for a := range n {
		anchor := tokens[a*t : (a+1)*t]
		om := dst[a*t : (a+1)*t]
		for tp := range end[a] {
			for b := range ns {
				r := first[a] + tp*ns + b
				lp[b] = logLik(dec[r*t:(r+1)*t], anchor)
			}
			om[tp] = (float64(t)*logHit - logMeanExp(lp)) / cfg.Tau
		}
		if end[a] < t { // every skipped copy decodes as the anchor's latent: the mean of equal terms is the term
			w := (float64(t)*logHit - logLik(own[a*t:(a+1)*t], anchor)) / cfg.Tau
			for tp := end[a]; tp < t; tp++ {
				om[tp] = w
			}
		}
		hi := math.Inf(-1)
		for _, v := range om {
			hi = max(hi, v)
		}
		var sum float64
		for k, v := range om {
			om[k] = math.Exp(v - hi)
			sum += om[k]
		}
		for k := range om {
			om[k] = min(kappa*om[k]/sum, 1)
		}
	}
	return nil
}

func logMeanExp(x []float64) float64 {
	hi := math.Inf(-1)
	for _, v := range x {
		hi = max(hi, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - hi)
	}
	return hi + math.Log(s/float64(len(x)))
}
