package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/model"
)

// maxRejectRounds is the number of noise draws per position before the
// last draw is kept even though its nearest embedding is not the true token
// (nfbo_reference.md b.3).
const maxRejectRounds = 100

// batchInputs are the per-batch inputs of a flowGraph in float64 staging
// buffers (row r = t·B + b, see flowGraph).
type batchInputs struct {
	tok, neg []int32   // [N] token of each row: the true one, the negative (−1: none)
	eps      []float64 // [N, F]
	wt       []float64 // [N]
	// lens is the padded length of each of the B sequences, nil when all
	// are T; rows at or past a sequence's length have weight 0.
	lens     []int
	real     int // number of real (unpadded) sequences
	rejected int // positions still wrong after maxRejectRounds draws
}

// prepareBatch fills the inputs for seqs (1 ≤ len(seqs) ≤ B, each of length
// T) padded to B sequences. Padding rows repeat sequence 0 with zero noise
// and weight 0: they must stay finite, since 0·NaN is NaN.
//
// lens (nil: T for every sequence) gives each real sequence a padded length
// 2 ≤ lens[b] ≤ T: the sequence is trained as if it were T_b long, its rows
// from position lens[b] on get weight 0, zero noise and no negative.
//
// With rng nil the noise is zero and the negative token is the true one (no
// similarity penalty); otherwise rng draws, in this order, one negative per
// weighted row and then the seed of each weighted row's noise stream, from
// which that row's rejection-sampled noise σ·n is drawn, so that a resumed
// run consumes the stream exactly as an uninterrupted one.
func prepareBatch(p *model.Params, seqs [][]int, lens []int, B int, sigma float64, rng *rand.Rand) *batchInputs {
	cfg := p.Config
	T, F, V := cfg.T, cfg.F, cfg.V
	N := T * B
	in := &batchInputs{
		tok: make([]int32, N), neg: make([]int32, N),
		eps: make([]float64, N*F), wt: make([]float64, N), real: len(seqs),
	}
	lenOf := func(b int) int { return T }
	if lens != nil {
		in.lens = make([]int, B)
		for b := range B {
			in.lens[b] = T
			if b < len(seqs) {
				in.lens[b] = lens[b]
			}
		}
		lenOf = func(b int) int { return in.lens[b] }
	}
	w := 1 / float64(len(seqs))
	seqAt := func(b int) []int {
		if b < len(seqs) {
			return seqs[b]
		}
		return seqs[0]
	}
	for b := range B {
		s := seqAt(b)
		for t := range T {
			r := t*B + b
			in.tok[r], in.neg[r] = int32(s[t]), -1
			if b < len(seqs) && t < lenOf(b) {
				in.wt[r] = w
			}
		}
	}
	if rng == nil {
		return in
	}
	drawNegatives(in.neg, seqs, lenOf, T, B, V, rng)
	en := normalisedEmbeddings(p)
	// Each weighted row draws its noise from a PCG stream of its own,
	// seeded from rng in row order, so the rows can be drawn on every core
	// and the result depends on rng alone. The first draws are checked a
	// chunk of rows at a time with one product with the embeddings (the
	// nearest token is the largest dot product of unit rows); the rows it
	// rejects draw again, checked one by one.
	var rows []int
	var seeds []uint64
	for t := range T {
		for b := range len(seqs) {
			if t < lenOf(b) {
				rows = append(rows, t*B+b)
				seeds = append(seeds, rng.Uint64())
			}
		}
	}
	n := len(rows)
	vhat := make([]float64, n*F)
	draw := func(i int, g *rand.Rand) {
		r := rows[i]
		x := seqs[r%B][r/B]
		e := in.eps[r*F : (r+1)*F]
		for j := range e {
			e[j] = sigma * g.NormFloat64()
			vhat[i*F+j] = en[x*F+j] + e[j]
		}
	}
	rejected := make([]bool, n)
	// Each core draws its rows and checks them a chunk at a time: one
	// [chunk, F]·[F, V] product of the chunk's first draws with the
	// embeddings, in a buffer of its own that stays in cache.
	const chunk = 64
	parallelRows(n, 8*(F+V), func(lo, hi int) {
		var src rand.PCG
		g := rand.New(&src)
		scores := make([]float64, chunk*V)
		for c0 := lo; c0 < hi; c0 += chunk {
			c1 := min(c0+chunk, hi)
			for i := c0; i < c1; i++ {
				src.Seed(seeds[i], uint64(i))
				draw(i, g)
			}
			gemmBlock(false, true, c1-c0, V, F, 1, vhat[c0*F:c1*F], F, en, F, 0, scores, V)
			for i := c0; i < c1; i++ {
				r := rows[i]
				x := seqs[r%B][r/B]
				if argmax(scores[(i-c0)*V:(i-c0+1)*V]) == x {
					continue
				}
				// Go on with the row's stream after its first draw:
				// reseeding and repeating that draw gives the same values
				// and leaves the stream where it was.
				src.Seed(seeds[i], uint64(i))
				draw(i, g)
				ok := false
				for round := 1; round < maxRejectRounds && !ok; round++ {
					draw(i, g)
					ok = nearest(en, vhat[i*F:(i+1)*F], F) == x
				}
				rejected[i] = !ok
			}
		}
	})
	for _, bad := range rejected {
		if bad {
			in.rejected++
		}
	}
	return in
}

// drawNegatives draws the similarity loss's negative token of every weighted row (t-major, row t·B + b of
// neg, T×B), uniformly from the V tokens, in row order from rng; a draw that is the row's own token leaves -1
// (no negative).
func drawNegatives(neg []int32, seqs [][]int, lenOf func(b int) int, T, B, V int, rng *rand.Rand) {
	for t := range T {
		for b := range len(seqs) {
			if t >= lenOf(b) {
				continue
			}
			if j := rng.IntN(V); j != seqs[b][t] {
				neg[t*B+b] = int32(j)
			}
		}
	}
}

// argmax returns the index of the largest entry of x (the first of ties).
func argmax(x []float64) int {
	arg := 0
	for j, v := range x {
		if v > x[arg] {
			arg = j
		}
	}
	return arg
}

// nearest returns argmax_j cos(v, en_j) for unit rows en [V, F]; since every
// row is a unit vector this is the largest dot product.
func nearest(en, v []float64, F int) int {
	best, arg := math.Inf(-1), 0
	for j := 0; j*F < len(en); j++ {
		var d float64
		for i, x := range en[j*F : (j+1)*F] {
			d += x * v[i]
		}
		if d > best {
			best, arg = d, j
		}
	}
	return arg
}

// maskChunk is the number of mask entries drawn from one random stream.
// It is fixed, not derived from the number of cores, so the masks depend on
// rng alone.
const maskChunk = 1 << 16

// fillDropout draws inverted-dropout masks (entries 0 or 1/(1−p)) for every
// mask input of g, on every core (a paper-preset step draws 16 million
// entries), with drawDropout. An unrolled graph feeds the inter-layer mask
// as one [B, H] input per step and the fused graph as one [S·B, H] input;
// both read the same entries, so the two graphs see the same masks
// (TestDropoutFusedMatchesNodes).
func fillDropout(g *flowGraph, p float64, rng *rand.Rand) {
	if !g.dropout {
		return
	}
	var masks [][]any // each logical mask: its inputs' data in entry order
	for k := range g.interMask {
		for l := range g.interMask[k] {
			var fs []any
			for t := range g.interMask[k][l] {
				fs = append(fs, g.interMask[k][l][t].val.Data())
			}
			masks = append(masks, fs)
		}
	}
	for k := range g.ctxMask {
		masks = append(masks, []any{g.ctxMask[k].val.Data()})
	}
	drawDropout(masks, p, rng)
}

// dropoutMasks returns the masks of a step of the fused graph's shapes for
// B sequences at rate p, drawn as fillDropout draws them for that graph:
// the inter-layer masks [S·B, H] in block and layer order, then the
// context masks [N, H] of each block (step.Batch's InterMask and CtxMask).
func dropoutMasks(cfg model.Config, B int, p float64, rng *rand.Rand) (inter, ctx [][]float32) {
	S, N, H := cfg.T-1, cfg.T*B, cfg.H
	var masks [][]any
	for range cfg.Blocks {
		for range cfg.LSTMLayers - 1 {
			m := make([]float32, S*B*H)
			inter = append(inter, m)
			masks = append(masks, []any{m})
		}
	}
	for range cfg.Blocks {
		m := make([]float32, N*H)
		ctx = append(ctx, m)
		masks = append(masks, []any{m})
	}
	drawDropout(masks, p, rng)
	return inter, ctx
}

// drawDropout draws inverted-dropout masks (entries 0 or 1/(1−p)) into
// masks, each logical mask the list of its parts' data ([]float32 or
// []float64) in entry order, on every core. Each logical mask gets a seed
// from rng, in order, and one PCG stream per maskChunk of its entries, so
// the masks depend on rng alone and not on how a mask is cut into parts.
func drawDropout(masks [][]any, p float64, rng *rand.Rand) {
	size := func(d any) int {
		switch d := d.(type) {
		case []float32:
			return len(d)
		case []float64:
			return len(d)
		}
		panic(fmt.Sprintf("train: dropout mask of type %T", d))
	}
	type chunk struct {
		parts      []any
		lo, hi     int // entries of the logical mask
		seed, salt uint64
	}
	var chunks []chunk
	for _, parts := range masks {
		n := 0
		for _, d := range parts {
			n += size(d)
		}
		seed, salt := rng.Uint64(), rng.Uint64()
		for lo := 0; lo < n; lo += maskChunk {
			chunks = append(chunks, chunk{parts, lo, min(lo+maskChunk, n), seed, salt + uint64(lo/maskChunk)})
		}
	}
	// An entry is kept when its 32-bit draw is at least p·2³².
	thresh := uint32(min(p*(1<<32), math.MaxUint32))
	keep := 1 / (1 - p)
	parallelRows(len(chunks), maskChunk, func(a, b int) {
		var bits bitStream
		for _, c := range chunks[a:b] {
			bits.seed(c.seed, c.salt)
			off := 0 // first entry of the part in the logical mask
			for _, part := range c.parts {
				n := size(part)
				lo, hi := max(c.lo, off)-off, min(c.hi, off+n)-off
				off += n
				if lo >= hi {
					continue
				}
				switch d := part.(type) {
				case []float32:
					drawMask32(d[lo:hi], thresh, float32(keep), &bits)
				case []float64:
					drawMask(d[lo:hi], thresh, keep, &bits)
				}
			}
		}
	})
}

// drawMask32 is drawMask for float32, the same entries from the same bits
// faster: two entries per 64-bit draw, and the entry's bits selected by an
// integer mask rather than a branch (a mispredicted branch per dropped
// entry cost more than the draw).
func drawMask32(dst []float32, thresh uint32, keep float32, bits *bitStream) {
	k := math.Float32bits(keep)
	sel := func(x uint32) float32 {
		var b uint32
		if x >= thresh {
			b = 1
		}
		return math.Float32frombits(k & -b)
	}
	i := 0
	if bits.have && len(dst) > 0 {
		dst[0] = sel(bits.next())
		i = 1
	}
	for ; i+2 <= len(dst); i += 2 {
		x := bits.src.Uint64()
		dst[i], dst[i+1] = sel(uint32(x)), sel(uint32(x>>32))
	}
	if i < len(dst) {
		dst[i] = sel(bits.next())
	}
}

// bitStream hands out a PCG stream 32 bits at a time.
type bitStream struct {
	src  rand.PCG
	hi   uint32
	have bool
}

func (b *bitStream) seed(seed, salt uint64) {
	b.src.Seed(seed, salt)
	b.have = false
}

func (b *bitStream) next() uint32 {
	if b.have {
		b.have = false
		return b.hi
	}
	x := b.src.Uint64()
	b.hi, b.have = uint32(x>>32), true
	return uint32(x)
}

// drawMask sets each entry of dst to keep when its 32-bit draw from bits is
// at least thresh, else to 0.
func drawMask[T float32 | float64](dst []T, thresh uint32, keep T, bits *bitStream) {
	for i := range dst {
		dst[i] = 0
		if bits.next() >= thresh {
			dst[i] = keep
		}
	}
}

// setTokens feeds the true and the negative token of every row of in.
func (g *flowGraph) setTokens(in *batchInputs) {
	if g.oneHot {
		g.tok.setOneHot(in.tok)
		g.neg.setOneHot(in.neg)
		return
	}
	copy(g.tokRows.rows, in.tok)
	copy(g.negRows.rows, in.neg)
}

// run feeds in (and, for training graphs, dropout masks from rng) and runs
// the graph once.
func (g *flowGraph) run(in *batchInputs, dropRate float64, rng *rand.Rand) error {
	if in.lens != nil && g.posDense {
		return fmt.Errorf("train: the dense positional input takes sequences of length T only")
	}
	g.setLengths(in.lens)
	g.setTokens(in)
	g.eps.set(in.eps)
	g.wt.set(in.wt)
	if rng != nil {
		fillDropout(g, dropRate, rng)
	} else if g.dropout {
		// No rng: dropout off (masks of ones), e.g. for gradient checks.
		for k := range g.interMask {
			for l := range g.interMask[k] {
				for t := range g.interMask[k][l] {
					setOnes(&g.interMask[k][l][t])
				}
			}
		}
		for k := range g.ctxMask {
			setOnes(&g.ctxMask[k])
		}
	}
	g.vm.Reset()
	if err := g.vm.RunAll(); err != nil {
		return fmt.Errorf("train: running graph (B=%d, T=%d): %w", g.B, g.cfg.T, err)
	}
	return nil
}

func setOnes(f *feed) {
	for i := range f.val.Shape().TotalSize() {
		f.set1(i, 1)
	}
}

// scalarOf returns a scalar node's value as float64.
func valueFloat(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// rowValues returns the values of an [N] node as float64.
func (g *flowGraph) rowValues(which int) []float64 {
	v := g.nllVal
	if which == 1 {
		v = g.simVal
	}
	out := make([]float64, g.N)
	switch d := v.Data().(type) {
	case []float32:
		for i, v := range d {
			out[i] = float64(v)
		}
	case []float64:
		copy(out, d)
	}
	return out
}

// lossValue returns the loss of the last run.
func (g *flowGraph) lossValue() float64 { return valueFloat(g.loss.Value().Data()) }

// stepBatch returns prepareBatch's inputs and the dropout masks (nil: none)
// as engine/step's Batch: the same tokens, negatives and lengths, and the
// noise and weights rounded to float32 as the graph's inputs round them.
func stepBatch(in *batchInputs, inter, ctx [][]float32) *step.Batch {
	b := &step.Batch{Tok: in.tok, Neg: in.neg, Lens: in.lens, InterMask: inter, CtxMask: ctx,
		Eps: make([]float32, len(in.eps)), Wt: make([]float32, len(in.wt))}
	for i, v := range in.eps {
		b.Eps[i] = float32(v)
	}
	for i, v := range in.wt {
		b.Wt[i] = float32(v)
	}
	return b
}
