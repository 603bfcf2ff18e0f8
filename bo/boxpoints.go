package bo

import (
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
}

// boxCandidates returns the iteration's c latent candidates per anchor around centres (N×D), none when c is 0.
func (o *Optimizer) boxCandidates(centres, probs []float64, c int) *boxPoints {
	t, d := o.t, o.d
	n := len(centres) / d
	b := &boxPoints{n: n, c: c, d: d, t: t, f: o.f, centres: centres, probs: probs, half: 8 * o.st.TR.Length / 2}
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
	b.took += time.Since(start)
}
