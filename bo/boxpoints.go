package bo

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nfbo/nfbo/bo/sobol"
	"github.com/nfbo/nfbo/internal/pcg"
)

// boxPoints are an iteration's latent candidates, C an anchor (N·C×D, anchor-major): Sobol or uniform points of
// each anchor's trust-region box, perturbed as TACS's probabilities say (Perturb). They are made as they are
// read: with a candidate target an anchor reads a few hundred of its C (1,000 in the screened variant), and
// making all of them cost 200 MB an iteration and a fifteenth of a run's CPU at the pmo preset. Every row is the
// one the whole matrix, made anchor by anchor, would hold: its draws are taken from where they would begin in the
// run's PCG stream (internal/pcg) and the stream is left past all of them, so that what follows draws what it
// drew before.
type boxPoints struct {
	n, c, d, t, f  int
	centres, probs []float64 // N×D, N×T
	half           float64   // the boxes' half-width
	base           rand.PCG  // the run's stream where the first anchor's draws begin
	// sob gives the Sobol points; nil for uniform ones, drawn from the stream before each anchor's perturbations.
	sob  *sobol.Sobol
	all  []float64 // every row, made at once, where the run's source is not a PCG
	unit []float64
	took time.Duration // spent making rows
	// regrow is the share of each anchor's candidates regrown rather than perturbed (ScreenedSettings.Regrow),
	// lens the anchors' lengths in tokens.
	regrow float64
	lens   []int
}

// boxCandidates returns the iteration's c latent candidates per anchor around centres (N×D), none when c is 0: a
// share regrow of them regrown from the anchors' first tokens (lens: the anchors' lengths), the others perturbed
// in the box.
func (o *Optimizer) boxCandidates(centres, probs []float64, c int, regrow float64, lens []int) *boxPoints {
	t, d := o.t, o.d
	n := len(centres) / d
	b := &boxPoints{n: n, c: c, d: d, t: t, f: o.f, centres: centres, probs: probs, half: 8 * o.st.TR.Length / 2,
		regrow: regrow, lens: lens}
	if c == 0 {
		return b
	}
	o.phase("candidates")
	start := time.Now()
	defer func() { o.times.Candidates += time.Since(start) }()
	src, ok := o.src.(*rand.PCG)
	if !ok {
		draw := o.pointDrawer()
		b.all = make([]float64, n*c*d)
		unit := make([]float64, c*d)
		for a := range n {
			draw(unit, c)
			Perturb(b.all[a*c*d:(a+1)*c*d], centres[a*d:(a+1)*d], b.half, probs[a*t:(a+1)*t], o.f, unit, o.rng)
			b.regrown(b.all[a*c*d:(a+1)*c*d], unit, a, 0)
		}
		return b
	}
	per := uint64(c * d) // an anchor's draws: its perturbations, after its C uniform points where they are drawn
	if o.cfg.Points == PointsUniform {
		per *= 2
	} else {
		b.sob = o.sobolPoints()
	}
	b.base = *src
	pcg.Advance(src, uint64(n)*per)
	return b
}

// rows writes rows lo … hi−1 of anchor a's candidates ((hi−lo)×D) into dst.
func (b *boxPoints) rows(dst []float64, a, lo, hi int) {
	d, c, m := b.d, b.c, hi-lo
	if len(dst) != m*d || a < 0 || a >= b.n || lo < 0 || hi > c || m < 0 {
		panic("bo: boxPoints.rows: bad rows")
	}
	if b.all != nil {
		copy(dst, b.all[(a*c+lo)*d:(a*c+hi)*d])
		return
	}
	start := time.Now()
	b.unit = slices.Grow(b.unit[:0], m*d)[:m*d]
	at := uint64(a*c+lo) * uint64(d) // where the rows' perturbations begin in the stream
	if b.sob != nil {
		b.sob.Seek(uint64(a*c + lo))
		b.sob.Draw(b.unit, m)
	} else {
		at = uint64(a)*2*uint64(c*d) + uint64(lo*d) // the anchor's points, then its perturbations
		src := b.base
		pcg.Advance(&src, at)
		r := rand.New(&src)
		for i := range b.unit {
			b.unit[i] = r.Float64()
		}
		at += uint64(c * d)
	}
	src := b.base
	pcg.Advance(&src, at)
	Perturb(dst, b.centres[a*d:(a+1)*d], b.half, b.probs[a*b.t:(a+1)*b.t], b.f, b.unit, rand.New(&src))
	b.regrown(dst, b.unit, a, lo)
	b.took += time.Since(start)
}

// regrown overwrites the regrown rows among rows lo, lo+1, … of anchor a (dst, with their points unit): row j is
// regrown where ⌊(j+1)·regrow⌋ > ⌊j·regrow⌋, so that the share is spread over the rows that an anchor decoded a
// chunk at a time reads first. A regrown row keeps the anchor's latent over its first k tokens, k a share drawn
// uniformly in [½, 1) of its length (at least one), and draws the rest from the prior N(0, I), by the inverse
// normal CDF of its points: the flow is autoregressive, so the candidate keeps those tokens and the flow writes
// a new tail (flowstats' regrown rows).
func (b *boxPoints) regrown(dst, unit []float64, a, lo int) {
	if b.regrow <= 0 {
		return
	}
	d, f := b.d, b.f
	centre := b.centres[a*d : (a+1)*d]
	for i := range len(dst) / d {
		j := float64(lo + i)
		if math.Floor((j+1)*b.regrow) == math.Floor(j*b.regrow) {
			continue
		}
		row, u := dst[i*d:(i+1)*d], unit[i*d:(i+1)*d]
		k := max(1, int(math.Round((0.5+0.5*u[0])*float64(b.lens[a]))))
		copy(row[:k*f], centre[:k*f])
		for j := k * f; j < d; j++ {
			row[j] = math.Sqrt2 * math.Erfinv(2*min(max(u[j], 1e-12), 1-1e-12)-1)
		}
	}
}
