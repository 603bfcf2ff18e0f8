package step

import (
	"fmt"
	"math"
	"slices"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// A step's random inputs are drawn on the device from a counter-based
// generator (kernels.Philox4x32) under the step's key, so that a step
// uploads only its token ids and lengths. This file is their definition:
// the Go twins below are what every Device computes (engine/train.CPU
// calls them; engine/gpustep's kernels compute the same values, and its
// emulator's references are these functions). Each draw's counter is
// (word, row or mask, attempt, purpose).
const (
	purposeNoise uint32 = iota
	purposeNegative
	purposeDropout
)

// NoiseRounds is the number of noise draws per row before the last one is
// kept even though its nearest embedding is not the row's token
// (nfbo_reference.md b.3).
const NoiseRounds = 100

// Inputs are the host's part of a step whose random inputs are drawn on
// the device (Step.Train): B sequences of the config's T positions, rows
// t-major (row t·B + b).
type Inputs struct {
	// Tok holds the token of every row [N]; the rows of sequences b ≥ Real
	// (padding the batch to B) hold any valid token and carry no loss.
	Tok []int32
	// Lens is the padded length T_b of each sequence [B], 2 ≤ T_b ≤ T:
	// rows t ≥ T_b carry no loss, and T_b sets the positional codes.
	Lens []int32
	// Real is the number of sequences that carry loss, each with weight
	// 1/Real.
	Real int
	// Key keys the step's draws: noise, negative tokens, dropout masks.
	Key kernels.PhiloxKey
}

// check returns an error naming the first input of the wrong size or out
// of range for T positions, B sequences and V tokens.
func (in *Inputs) check(T, B, V int) error {
	if len(in.Tok) != T*B || len(in.Lens) != B {
		return fmt.Errorf("step: inputs hold %d tokens and %d lengths, want %d and %d (B=%d, T=%d)", len(in.Tok), len(in.Lens), T*B, B, B, T)
	}
	if in.Real < 1 || in.Real > B {
		return fmt.Errorf("step: %d real sequences of a batch of %d", in.Real, B)
	}
	for r, x := range in.Tok {
		if x < 0 || int(x) >= V {
			return fmt.Errorf("step: input row %d (position %d of sequence %d): token %d outside vocabulary [0, %d)", r, r/B, r%B, x, V)
		}
	}
	for b, l := range in.Lens {
		if l < 2 || int(l) > T {
			return fmt.Errorf("step: sequence %d has padded length %d, want 2..%d", b, l, T)
		}
	}
	return nil
}

// LayoutTo writes what a batch's lengths decide: each row's loss weight
// wt [N] (1/real for t < lens[b] of a sequence b < real, else 0), −wt into
// negWt and simCoef·wt into simC (float32 products), layer 0's positional
// rows pos [2·S·B] (PosRows) and the initial codes pos0 [B, 2·maxT]
// (PosCode0). The Device's Layout.
func LayoutTo(wt, negWt, simC []float32, pos []int32, pos0 []float32, lens []int32, T, maxT, real int, simCoef float32) {
	B := len(lens)
	w := float32(1 / float64(real))
	for t := range T {
		for b, l := range lens {
			r := t*B + b
			wt[r] = 0
			if b < real && t < int(l) {
				wt[r] = w
			}
			negWt[r], simC[r] = -wt[r], simCoef*wt[r]
		}
	}
	il := make([]int, B)
	for b, l := range lens {
		il[b] = int(l)
	}
	PosRows(pos, il, T-1, maxT)
	PosCode0(pos0, il, maxT)
}

// NegativesTo draws the similarity loss's negative token of every row of
// nonzero weight, uniformly from the V tokens (Lemire's multiply-shift of
// one Philox word); a draw equal to the row's token, and every row of zero
// weight, leaves −1 (no negative). The Device's DrawNegatives.
func NegativesTo(neg, tok []int32, wt []float32, V int, key kernels.PhiloxKey) {
	for r := range tok {
		neg[r] = -1
		if wt[r] == 0 {
			continue
		}
		x := kernels.Philox4x32([4]uint32{0, uint32(r), 0, purposeNegative}, key)
		if j := int32((uint64(x[0]) * uint64(V)) >> 32); j != tok[r] {
			neg[r] = j
		}
	}
}

// noiseDraw writes attempt a of row r's noise into e [F]: σ·z rounded to
// float32, z standard normal from Box-Muller on counter (i, r, a, noise),
// four values from each word i.
func noiseDraw(e []float32, r, a int, sigma float64, key kernels.PhiloxKey) {
	for i := 0; 4*i < len(e); i++ {
		x := kernels.Philox4x32([4]uint32{uint32(i), uint32(r), uint32(a), purposeNoise}, key)
		z0, z1 := kernels.BoxMuller(x[0], x[1])
		z2, z3 := kernels.BoxMuller(x[2], x[3])
		for k, z := range [4]float64{z0, z1, z2, z3} {
			if j := 4*i + k; j < len(e) {
				e[j] = float32(sigma * z)
			}
		}
	}
}

// NearestRow returns the row of en [V, F] with the largest dot product
// with en[x] + e (float64 sums in index order; the first of ties): the
// token a noisy embedding decodes to, for unit rows. It sums four rows at a
// time, each in index order as one row alone would be, so that the
// independent sums overlap (TestNearestRowMatchesOneAtATime).
func NearestRow(en []float32, x int, e []float32) int {
	F := len(e)
	var buf [64]float64
	var v []float64
	if F > len(buf) {
		v = make([]float64, F)
	} else {
		v = buf[:F]
	}
	for j := range v {
		v[j] = float64(en[x*F+j]) + float64(e[j])
	}
	V := len(en) / F
	best, arg := math.Inf(-1), 0
	k := 0
	for ; k+4 <= V; k += 4 {
		r0, r1, r2, r3 := en[k*F:][:F], en[(k+1)*F:][:F], en[(k+2)*F:][:F], en[(k+3)*F:][:F]
		var d0, d1, d2, d3 float64
		for j, vj := range v {
			d0 += float64(r0[j]) * vj
			d1 += float64(r1[j]) * vj
			d2 += float64(r2[j]) * vj
			d3 += float64(r3[j]) * vj
		}
		for i, d := range [4]float64{d0, d1, d2, d3} {
			if d > best {
				best, arg = d, k+i
			}
		}
	}
	for ; k < V; k++ {
		var d float64
		for j, vj := range v {
			d += float64(en[k*F+j]) * vj
		}
		if d > best {
			best, arg = d, k
		}
	}
	return arg
}

// NoiseTo draws the dequantisation noise eps [N, F] of every row of
// nonzero weight, rejection-sampled so that en[tok] + eps stays nearest to
// the row's token (en: the normalised embeddings [V, F]): attempts 0, 1, …
// until one is accepted or rounds are spent, the last kept. Rows of zero
// weight get zeros. It returns the number of rows whose every attempt was
// rejected. The Device's DrawNoise.
func NoiseTo(eps []float32, tok []int32, wt []float32, en []float32, F int, sigma float64, rounds int, key kernels.PhiloxKey) (rejected int) {
	return NoiseRows(eps, tok, wt, en, F, sigma, rounds, key, 0, len(tok))
}

// NoiseRows is NoiseTo on rows [lo, hi) alone (each row's draws depend on
// its index, not on the others), for a device that splits the rows.
//
// Its result is the definition's, but it decides most first attempts
// without NearestRow's float64 sums (a tenth of a CPU step): the scores of
// a chunk of rows against every embedding in one float32 product
// (kernels.MulPackedTo), whose error is bounded (noiseSettled); only rows
// whose scores are within that bound of a tie, and later attempts, take
// NearestRow (TestNoiseRowsMatchesDefinition).
func NoiseRows(eps []float32, tok []int32, wt []float32, en []float32, F int, sigma float64, rounds int, key kernels.PhiloxKey, lo, hi int) (rejected int) {
	V := len(en) / F
	var pk kernels.Packed
	pk.Pack(en, F, F, V, true) // enᵀ: scores = v·enᵀ
	norms := make([]float64, V)
	for k := range V {
		norms[k] = norm64(en[k*F : (k+1)*F])
	}
	const chunk = 64
	v32 := make([]float32, chunk*F)
	scores := make([]float32, chunk*V)
	for r0 := lo; r0 < hi; r0 += chunk {
		r1 := min(r0+chunk, hi)
		for r := r0; r < r1; r++ {
			e, v := eps[r*F:(r+1)*F], v32[(r-r0)*F:(r-r0+1)*F]
			if wt[r] == 0 {
				clear(e)
				clear(v)
				continue
			}
			noiseDraw(e, r, 0, sigma, key)
			x := int(tok[r])
			for j := range v {
				v[j] = float32(float64(en[x*F+j]) + float64(e[j]))
			}
		}
		kernels.MulPackedTo(scores, V, v32, F, r1-r0, &pk, false)
		for r := r0; r < r1; r++ {
			if wt[r] == 0 {
				continue
			}
			e, x := eps[r*F:(r+1)*F], int(tok[r])
			ok, settled := noiseSettled(scores[(r-r0)*V:(r-r0+1)*V], norms, en[x*F:(x+1)*F], e, x)
			if !settled {
				ok = NearestRow(en, x, e) == x
			}
			for a := 1; a < rounds && !ok; a++ {
				noiseDraw(e, r, a, sigma, key)
				ok = NearestRow(en, x, e) == x
			}
			if !ok {
				rejected++
			}
		}
	}
	return rejected
}

// noiseSettled decides from a row's float32 scores s [V] (s_k ≈ en_k·v,
// v = en_x + e) whether NearestRow(en, x, e) is x, when it can: settled is
// false when some score is too near s_x to tell. Each s_k is within
// (F+2)·2⁻²⁴·‖v‖·‖en_k‖ of NearestRow's float64 sum d_k (v rounded to
// float32, then F float32 products and additions in any order, fused or
// not; the float64 sum's own error is a millionth of that), doubled here
// for safety; when every other s_k is below s_x by more than both bounds,
// d_x is the unique largest (ok); when one is above by more, it is not.
func noiseSettled(s []float32, norms []float64, ex, e []float32, x int) (ok, settled bool) {
	F := len(e)
	var vv float64
	for j, v := range ex {
		d := float64(v) + float64(e[j])
		vv += d * d
	}
	tol := 2 * float64(F+2) * 0x1p-24 * math.Sqrt(vv)
	sx, tx := float64(s[x]), tol*norms[x]
	ok = true
	for k, sk := range s {
		if k == x {
			continue
		}
		tk := tol * norms[k]
		switch d := float64(sk) - sx; {
		case d > tk+tx:
			return false, true
		case d >= -(tk + tx):
			ok = false // too near to tell, unless another row settles it
		}
	}
	return ok, ok
}

// norm64 returns the Euclidean norm of x in float64.
func norm64(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// DropoutScale is the value of a kept entry of an inverted-dropout mask of
// rate p, 1/(1−p) rounded to float32.
func DropoutScale(p float64) float32 { return float32(1 / (1 - p)) }

// DropoutTo draws the inverted-dropout mask number stream [n]: entry e is
// DropoutScale(p) when the uniform of word e mod 4 of counter (e/4,
// stream, 0, dropout) is at least p, else 0. The Device's DrawDropout.
func DropoutTo(mask []float32, p float64, key kernels.PhiloxKey, stream int) {
	DropoutWords(mask, p, key, stream, 0, (len(mask)+3)/4)
}

// DropoutWords is DropoutTo on the entries 4·lo .. 4·hi−1 of mask alone
// (each word of four entries depends on its index only), for a device that
// splits the mask.
func DropoutWords(mask []float32, p float64, key kernels.PhiloxKey, stream int, lo, hi int) {
	keep := DropoutScale(p)
	for w := lo; w < hi; w++ {
		x := kernels.Philox4x32([4]uint32{uint32(w), uint32(stream), 0, purposeDropout}, key)
		for k := range 4 {
			if e := 4*w + k; e < len(mask) {
				mask[e] = 0
				if kernels.Uniform24(x[k]) >= p {
					mask[e] = keep
				}
			}
		}
	}
}

// The slots of a step's accumulators (Device.AllocAcc), read back in one
// transfer of AccSlots float64s at the end of the step.
const (
	AccLoss     = iota // Σ_r wt_r·(nll_r + λ·sim_r)
	AccNLL             // Σ nll_r over the rows of nonzero weight
	AccSim             // Σ sim_r over them
	AccRows            // their number
	AccSq              // Σ g² over every gradient
	AccRejected        // rows whose noise was rejected every round
	AccSlots
)

// LossSums returns SumLoss's four sums, accumulated in row order in
// float64: the loss, then over the rows of nonzero weight the NLL, the
// similarity and their number.
func LossSums(nll, sim, wt []float32, simCoef float64) (loss, nllSum, simSum, rows float64) {
	for r, w := range wt {
		n, s := float64(nll[r]), float64(sim[r])
		loss += float64(w) * (n + simCoef*s)
		if w != 0 {
			nllSum += n
			simSum += s
			rows++
		}
	}
	return loss, nllSum, simSum, rows
}

// ClipScale returns Adam's gradient scale for the squared norm sq and the
// clipping norm clip (0: none): clip/(‖g‖ + 1e-6) when that is below 1, as
// PyTorch's clip_grad_norm_ does. Every Device's AdamClipped computes it
// from the accumulated sq.
func ClipScale(sq, clip float64) float64 {
	if clip > 0 {
		if c := clip / (math.Sqrt(sq) + 1e-6); c < 1 {
			return c
		}
	}
	return 1
}

// Finite reports whether a step's loss and squared gradient norm are
// finite: AdamClipped leaves everything unchanged otherwise.
func Finite(loss, sq float64) bool {
	return !math.IsNaN(loss) && !math.IsInf(loss, 0) && !math.IsNaN(sq) && !math.IsInf(sq, 0)
}

// Batch returns, drawn on the host, the batch that Train draws on a device
// from in for cfg and the embeddings embed [V, F] (normalised here as the
// device normalises them, kernels.NormalizeRowsTo), with the number of rows
// whose noise was rejected: the parity tests' batch (Run), which gives
// engine/train's gorgonia reference graph the device's step.
func (in *Inputs) Batch(cfg model.Config, embed []float32) (*Batch, int, error) {
	B := len(in.Lens)
	if err := in.check(cfg.T, B, cfg.V); err != nil {
		return nil, 0, err
	}
	T, F, V, H, L := cfg.T, cfg.F, cfg.V, cfg.H, cfg.LSTMLayers
	N, S := T*B, T-1
	en := make([]float32, V*F)
	kernels.NormalizeRowsTo(en, embed[:V*F], V, F)
	b := &Batch{Tok: slices.Clone(in.Tok), Neg: make([]int32, N), Eps: make([]float32, N*F), Wt: make([]float32, N),
		Lens: make([]int, B)}
	negWt, simC := make([]float32, N), make([]float32, N)
	LayoutTo(b.Wt, negWt, simC, make([]int32, 2*S*B), make([]float32, B*cfg.P()), in.Lens, T, cfg.MaxT, in.Real, float32(cfg.SimCoef))
	for i, l := range in.Lens {
		b.Lens[i] = int(l)
	}
	NegativesTo(b.Neg, b.Tok, b.Wt, V, in.Key)
	rejected := NoiseTo(b.Eps, b.Tok, b.Wt, en, F, cfg.Noise, NoiseRounds, in.Key)
	if cfg.Dropout > 0 {
		for k := range cfg.Blocks {
			for l := range L - 1 {
				m := make([]float32, S*B*H)
				DropoutTo(m, cfg.Dropout, in.Key, k*(L-1)+l)
				b.InterMask = append(b.InterMask, m)
			}
		}
		for k := range cfg.Blocks {
			m := make([]float32, N*H)
			DropoutTo(m, cfg.Dropout, in.Key, cfg.Blocks*(L-1)+k)
			b.CtxMask = append(b.CtxMask, m)
		}
	}
	return b, rejected, nil
}
