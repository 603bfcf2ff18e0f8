// Package flowstats measures a flow as the optimiser's move operator. In NF-BO every proposal is a perturbed
// latent decoded by the flow, so two properties of the flow decide what the optimiser can reach: whether its
// prior decodes to molecules that look like the data (their lengths, here), and whether a small perturbation
// of a molecule's latent decodes to a nearby molecule (the locality table). Both are measured here for any
// flow, with the optimiser's own perturbation rule (bo.Perturb), so that models can be compared by the same
// numbers. NLLAt adds the flow's density of held-out molecules at any sequence length.
package flowstats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/model"
)

// Length returns the number of tokens of seq before its first stop token (len(seq) when there is none): the
// molecule's length, since decoding ends at the first stop.
func Length(seq []int, stop int) int {
	for i, x := range seq {
		if x == stop {
			return i
		}
	}
	return len(seq)
}

// EditDistance returns the Levenshtein distance between the token sequences a and b: the fewest insertions,
// deletions and substitutions of single tokens that turn a into b.
func EditDistance(a, b []int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	row := make([]int, len(b)+1) // row[j]: distance between a[:i] and b[:j]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0] // distance between a[:i-1] and b[:j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			sub := diag
			if a[i-1] != b[j-1] {
				sub++
			}
			diag = row[j]
			row[j] = min(sub, row[j]+1, row[j-1]+1)
		}
	}
	return row[len(b)]
}

// LengthSummary summarises a sample of molecule lengths (tokens).
type LengthSummary struct {
	N         int
	Mean, Std float64
	// Min, Q25, Median, Q75 and Max are order statistics (linear interpolation between ranks).
	Min, Q25, Median, Q75, Max float64
}

// SummariseLengths returns the summary of lengths; the zero LengthSummary when it is empty.
func SummariseLengths(lengths []int) LengthSummary {
	n := len(lengths)
	if n == 0 {
		return LengthSummary{}
	}
	x := make([]float64, n)
	var sum float64
	for i, l := range lengths {
		x[i] = float64(l)
		sum += x[i]
	}
	slices.Sort(x)
	mean := sum / float64(n)
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	q := func(p float64) float64 {
		r := p * float64(n-1)
		lo := int(math.Floor(r))
		hi := min(lo+1, n-1)
		return x[lo] + (r-float64(lo))*(x[hi]-x[lo])
	}
	s := LengthSummary{N: n, Mean: mean, Min: x[0], Q25: q(0.25), Median: q(0.5), Q75: q(0.75), Max: x[n-1]}
	if n > 1 {
		s.Std = math.Sqrt(ss / float64(n-1))
	}
	return s
}

// decodeBatch is the number of latents decoded at a time, to bound memory.
const decodeBatch = 512

// PriorLengths decodes n latents drawn from the flow's prior N(0, I) and returns the lengths of the decoded
// molecules. With a codec the length is that of the molecule's canonical sequence (the SELFIES decoder skips
// tokens that cannot bond, so it can be shorter than the decoded one) and invalid molecules are left out and
// counted; with a nil codec it is the raw decoded length.
func PriorLengths(ctx context.Context, flow bo.Flow, codec bo.Codec, n, stop int, rng *rand.Rand) (lengths []int, invalid int, err error) {
	t, f := flow.Shape()
	d := t * f
	lat := make([]float64, decodeBatch*d)
	dec := make([]int, decodeBatch*t)
	canon := make([]int, t)
	for lo := 0; lo < n; lo += decodeBatch {
		b := min(decodeBatch, n-lo)
		for i := range lat[:b*d] {
			lat[i] = rng.NormFloat64()
		}
		if err := flow.Decode(ctx, dec[:b*t], lat[:b*d]); err != nil {
			return nil, 0, fmt.Errorf("flowstats: decode prior samples: %w", err)
		}
		for i := range b {
			seq, ok := canonical(codec, canon, dec[i*t:(i+1)*t], stop)
			if !ok {
				invalid++
				continue
			}
			lengths = append(lengths, len(seq))
		}
	}
	return lengths, invalid, nil
}

// canonical returns the molecule of the length-T sequence seq, cut at its stop: its canonical sequence
// (written into buf) when codec is not nil, seq itself otherwise; ok is false for an invalid molecule.
func canonical(codec bo.Codec, buf, seq []int, stop int) (mol []int, ok bool) {
	if codec == nil {
		return seq[:Length(seq, stop)], true
	}
	if _, ok := codec.Canonical(buf, seq); !ok {
		return nil, false
	}
	return buf[:Length(buf, stop)], true
}

// LocalityConfig says which perturbations Locality measures.
type LocalityConfig struct {
	// Lengths are the trust-region lengths L; a perturbed dimension moves uniformly within ±4L, as in the
	// optimiser (half-width 8L/2). If empty, the default is 0.8 (the optimiser's initial length), 0.4, 0.2
	// and 0.1.
	Lengths []float64
	// PerAnchor is the number of candidates per anchor and length. If 0, the default is 20.
	PerAnchor int
	// Prob is the probability with which each latent dimension is perturbed (the optimiser's base probability
	// without TACS). If 0, the default is 0.1.
	Prob float64
	// Keep are shares of each anchor's tokens whose latents a regrown candidate keeps, drawing the rest from the
	// prior N(0, I): in an autoregressive flow a position's token depends on its latent and the tokens before it
	// only, so the candidate keeps the anchor's first tokens and the flow writes a new tail (GenMol's remasking
	// of a fragment, with the flow as the writer). Each adds a row after the trust-region lengths'; if empty,
	// none.
	Keep []float64
}

func (c LocalityConfig) withDefaults() LocalityConfig {
	if len(c.Lengths) == 0 {
		c.Lengths = []float64{0.8, 0.4, 0.2, 0.1}
	}
	if c.PerAnchor == 0 {
		c.PerAnchor = 20
	}
	if c.Prob == 0 {
		c.Prob = 0.1
	}
	return c
}

// LocalityRow is the locality of the perturbations at one trust-region length.
type LocalityRow struct {
	Length     float64 // trust-region length L; 0 on a regrowth row
	Keep       float64 // on a regrowth row, the share of the anchor's tokens kept (LocalityConfig.Keep); else 0
	Candidates int     // candidates decoded: anchors × PerAnchor
	Invalid    int     // candidates that decode to no valid molecule (with a codec)
	Same       int     // valid candidates that decode to their anchor's token sequence
	Distinct   int     // valid candidates other than their anchor, counted once per anchor
	MeanEdits  float64 // mean token edit distance between a valid candidate and its anchor
	LengthKept float64 // mean of a valid candidate's length over its anchor's
	AnchorLen  float64 // mean anchor length (tokens)
}

// Locality perturbs the latent of each anchor (anchors: N×T token sequences, padded with stop, T the flow's;
// canonical when codec is not nil) with bo.Perturb at each trust-region length of cfg, decodes the candidates,
// and compares them with their anchor token by token: the canonical sequences of the molecules when codec is
// not nil (what the optimiser scores), the raw decoded sequences otherwise. It is the table of issue #13: how
// local the flow's moves are at the lengths the trust region goes through.
func Locality(ctx context.Context, flow bo.Flow, codec bo.Codec, anchors []int, stop int, cfg LocalityConfig, rng *rand.Rand) ([]LocalityRow, error) {
	cfg = cfg.withDefaults()
	t, f := flow.Shape()
	d := t * f
	if t == 0 || len(anchors)%t != 0 || len(anchors) == 0 {
		return nil, fmt.Errorf("flowstats: locality: %d anchor tokens is not a positive multiple of T = %d", len(anchors), t)
	}
	if cfg.PerAnchor < 0 || cfg.Prob < 0 || cfg.Prob > 1 {
		return nil, errors.New("flowstats: locality: PerAnchor must be positive and Prob in (0, 1]")
	}
	for _, k := range cfg.Keep {
		if !(k >= 0 && k <= 1) {
			return nil, fmt.Errorf("flowstats: locality: a kept share of %g is outside [0, 1]", k)
		}
	}
	n, c := len(anchors)/t, cfg.PerAnchor
	centres := make([]float64, n*d)
	if err := flow.Encode(ctx, centres, anchors); err != nil {
		return nil, fmt.Errorf("flowstats: encode anchors: %w", err)
	}
	lens := make([]int, n)
	var lenSum float64
	for a := range n {
		lens[a] = Length(anchors[a*t:(a+1)*t], stop)
		lenSum += float64(lens[a])
	}
	prob := make([]float64, t)
	for i := range prob {
		prob[i] = cfg.Prob
	}
	unit := make([]float64, c*d)
	lat := make([]float64, n*c*d)
	dec := make([]int, n*c*t)
	rows := make([]LocalityRow, 0, len(cfg.Lengths)+len(cfg.Keep))
	compare := func(row LocalityRow) (LocalityRow, error) {
		if err := flow.Decode(ctx, dec, lat); err != nil {
			return row, fmt.Errorf("flowstats: decode candidates: %w", err)
		}
		row.Candidates, row.AnchorLen = n*c, lenSum/float64(n)
		var edits, kept float64
		canon := make([]int, t)
		for a := range n {
			anchor := anchors[a*t : a*t+lens[a]]
			distinct := map[string]bool{}
			for k := range c {
				cand, ok := canonical(codec, canon, dec[(a*c+k)*t:(a*c+k+1)*t], stop)
				if !ok {
					row.Invalid++
					continue
				}
				e := EditDistance(anchor, cand)
				if e == 0 {
					row.Same++
				} else {
					distinct[fmt.Sprint(cand)] = true
				}
				edits += float64(e)
				if lens[a] > 0 {
					kept += float64(len(cand)) / float64(lens[a])
				}
			}
			row.Distinct += len(distinct)
		}
		if valid := n*c - row.Invalid; valid > 0 {
			row.MeanEdits = edits / float64(valid)
			row.LengthKept = kept / float64(valid)
		}
		return row, nil
	}
	for _, l := range cfg.Lengths {
		for a := range n {
			for i := range unit {
				unit[i] = rng.Float64()
			}
			bo.Perturb(lat[a*c*d:(a+1)*c*d], centres[a*d:(a+1)*d], 8*l/2, prob, f, unit, rng)
		}
		row, err := compare(LocalityRow{Length: l})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	for _, keep := range cfg.Keep {
		for a := range n {
			k := int(math.Round(keep * float64(lens[a])))
			for j := range c {
				z := lat[(a*c+j)*d : (a*c+j+1)*d]
				copy(z[:k*f], centres[a*d:a*d+k*f])
				for i := k * f; i < d; i++ {
					z[i] = rng.NormFloat64()
				}
			}
		}
		row, err := compare(LocalityRow{Keep: keep})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// NLL is a flow's negative log density of a set of molecules at one sequence length, in nats per position.
type NLL struct {
	T        int     // sequence length the flow was used at
	Measured int     // molecules measured: those shorter than T
	All      float64 // mean over all T positions, the padding stops included
	Molecule float64 // mean over each molecule's own positions: its tokens and its first stop
}

// NLLAt returns the negative log density of seqs under the flow of p used at sequence length t, from the
// per-position terms of model.Flow.LogProbTo: the unit-norm embeddings without dequantisation noise, so the
// figures are comparable across t and models, not with the noisy NLL of the training log. Each sequence is cut
// at its first stop and padded with stop to t; those with t tokens or more before their stop are left out.
// p is not modified.
func NLLAt(ctx context.Context, p *model.Params, t int, seqs [][]int, stop int) (NLL, error) {
	if t < 2 || t > p.Config.MaxT {
		return NLL{}, fmt.Errorf("flowstats: T = %d outside [2, %d] (the model's max_seq_len)", t, p.Config.MaxT)
	}
	q := p.Clone()
	q.Config.T = t
	flow, err := model.NewFlow(q)
	if err != nil {
		return NLL{}, fmt.Errorf("flowstats: %w", err)
	}
	var x []int
	var lens []int
	for _, s := range seqs {
		n := Length(s, stop)
		if n >= t {
			continue
		}
		row := make([]int, t)
		copy(row, s[:n])
		for i := n; i < t; i++ {
			row[i] = stop
		}
		x = append(x, row...)
		lens = append(lens, n)
	}
	b := len(lens)
	if b == 0 {
		return NLL{}, fmt.Errorf("flowstats: no sequence is shorter than T = %d", t)
	}
	logp := make([]float64, b)
	pos := make([]float64, b*t)
	if err := flow.LogProbTo(ctx, logp, pos, x, &model.Workspace{}); err != nil {
		return NLL{}, fmt.Errorf("flowstats: log density at T = %d: %w", t, err)
	}
	out := NLL{T: t, Measured: b}
	var all, mol float64
	var molPos int
	for i, n := range lens {
		for j, v := range pos[i*t : (i+1)*t] {
			all -= v
			if j <= n {
				mol -= v
				molPos++
			}
		}
	}
	out.All = all / float64(b*t)
	out.Molecule = mol / float64(molPos)
	return out, nil
}
