package model

import (
	"context"

	"github.com/nfbo/nfbo/kernels"
)

// forward runs the density direction for B sequences given either as
// continuous embeddings v (B×T×F) or as ids x (B×T), writing z (B×T×F) and,
// if not nil, logDet (B×T).
func (f *Flow) forward(ctx context.Context, z []float32, logDet []float64, v []float32, x []int, B int, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	return f.parallel(ctx, ws, B, maxEncodeChunk, func(cw *chunkWork, b0, b1 int) {
		n := b1 - b0
		rows := T * n
		cw.y = grow(cw.y, rows*F)
		// Time-major (T×n×F) so that each LSTM step reads n contiguous rows.
		for bi := 0; bi < n; bi++ {
			for t := 0; t < T; t++ {
				dst := cw.y[(t*n+bi)*F : (t*n+bi+1)*F]
				i := (b0+bi)*T + t
				if x != nil {
					copy(dst, f.unit[x[i]*F:(x[i]+1)*F])
				} else {
					copy(dst, v[i*F:(i+1)*F])
				}
			}
		}
		cw.ld = grow(cw.ld, rows)
		clear(cw.ld)
		for k := range f.blocks {
			f.forwardBlock(cw, k, n)
		}
		for bi := 0; bi < n; bi++ {
			for t := 0; t < T; t++ {
				i := (b0+bi)*T + t
				copy(z[i*F:(i+1)*F], cw.y[(t*n+bi)*F:(t*n+bi+1)*F])
				if logDet != nil {
					logDet[i] = cw.ld[t*n+bi]
				}
			}
		}
	})
}

// forwardBlock applies block k in the density direction to cw.y (T×n×F,
// time-major) in place, adding each position's log-det to cw.ld (T×n). The
// LSTM runs over all positions with teacher forcing: step t reads
// [y_t ; c_{t+1}], and the context of position t is the top layer's initial
// h for t = 0 and its output at step t−1 otherwise.
func (f *Flow) forwardBlock(cw *chunkWork, k, n int) {
	cfg := f.cfg
	T, F, H, L, C, U := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.U
	fb := &f.blocks[k]
	steps := T - 1 // the output of step T−1 would be the context of position T
	cw.gates = grow(cw.gates, steps*n*4*H)
	cw.cell = grow(cw.cell, n*H)
	var prev, top []float32
	for l := 0; l < L; l++ {
		// s is T×n×H: slot 0 holds the initial h, slot t+1 the output of step t.
		cw.hs[l%2] = grow(cw.hs[l%2], T*n*H)
		s := cw.hs[l%2]
		for bi := 0; bi < n; bi++ {
			copy(s[bi*H:(bi+1)*H], fb.h0[l])
			copy(cw.cell[bi*H:(bi+1)*H], fb.c0[l])
		}
		g := cw.gates[:steps*n*4*H]
		if l == 0 {
			for t := 0; t < steps; t++ {
				for bi := 0; bi < n; bi++ {
					copy(g[(t*n+bi)*4*H:(t*n+bi+1)*4*H], fb.stepBias[t*4*H:(t+1)*4*H])
				}
			}
			// Only the first F rows of Wih meet y; the positional rows are in stepBias.
			fb.wih[0].mulAdd(g, cw.y[:steps*n*F], steps*n)
		} else {
			for r := 0; r < steps*n; r++ {
				copy(g[r*4*H:(r+1)*4*H], fb.bias[l])
			}
			fb.wih[l].mulAdd(g, prev[n*H:T*n*H], steps*n)
		}
		for t := 0; t < steps; t++ {
			gt := g[t*n*4*H : (t+1)*n*4*H]
			fb.whh[l].mulAdd(gt, s[t*n*H:(t+1)*n*H], n)
			kernels.LSTMCellTo(s[(t+1)*n*H:(t+2)*n*H], cw.cell, gt, cw.cell, n, H)
		}
		prev = s
		top = s
	}
	rows := T * n
	cw.ctxp = grow(cw.ctxp, rows*C*U)
	fb.ctx.dense(cw.ctxp, top[:rows*H], fb.ctxB, rows)
	for j := 0; j < C; j++ {
		f.coupling(cw, k, j, cw.y[:rows*F], cw.ld[:rows], rows, true)
	}
}

// coupling applies coupling layer j of block k to the rows×F matrix y in
// place: forward (data to base) or inverse, reading the context part of its
// first layer from cw.ctxp (rows×(C·U)). In the forward direction it adds
// each row's log-det to ld.
func (f *Flow) coupling(cw *chunkWork, k, j int, y []float32, ld []float64, rows int, forward bool) {
	cfg := f.cfg
	F, C, U, half := cfg.F, cfg.Couplings, cfg.U, cfg.Half()
	np := cfg.Transform.NumParams()
	layers := f.p.Blocks[k].Couplings[j].Layers
	condOff, transOff := 0, half
	if Reversed(k, j) {
		condOff, transOff = half, 0
	}
	cw.cond = grow(cw.cond, rows*half)
	cw.hidA = grow(cw.hidA, rows*U)
	cw.hidB = grow(cw.hidB, rows*U)
	cw.raw = grow(cw.raw, rows*half*np)
	for r := 0; r < rows; r++ {
		copy(cw.cond[r*half:(r+1)*half], y[r*F+condOff:r*F+condOff+half])
		copy(cw.hidA[r*U:(r+1)*U], cw.ctxp[r*C*U+j*U:r*C*U+(j+1)*U])
	}
	// First layer: [cond ; ctx]·W0 + b0, with the ctx part precomputed.
	fb := &f.blocks[k]
	fb.first[j].mulAdd(cw.hidA, cw.cond, rows)
	kernels.ReLU(cw.hidA)
	cur, other := cw.hidA, cw.hidB
	for d := 1; d < cfg.CouplingDepth; d++ {
		fb.rest[j][d-1].dense(other, cur, layers[d].B.Data, rows)
		kernels.ReLU(other)
		cur, other = other, cur
	}
	out := layers[cfg.CouplingDepth]
	fb.rest[j][cfg.CouplingDepth-1].dense(cw.raw, cur, out.B.Data, rows)
	for r := 0; r < rows; r++ {
		w := y[r*F+transOff : r*F+transOff+half]
		raw := cw.raw[r*half*np : (r+1)*half*np]
		var l float64
		switch {
		case cfg.Transform == NLSq && forward:
			l = kernels.NLSqForwardTo(w, w, raw, half)
		case cfg.Transform == NLSq && ld == nil: // decoding: no log-det wanted
			kernels.NLSqSolveTo(w, w, raw, half)
		case cfg.Transform == NLSq:
			l = kernels.NLSqInverseTo(w, w, raw, half)
		case forward:
			l = kernels.AffineForwardTo(w, w, raw, half)
		default:
			l = kernels.AffineInverseTo(w, w, raw, half)
		}
		if ld != nil {
			ld[r] += l
		}
	}
}

// inverse runs the generation direction for the B latents z (B×T×F), writing
// the data-side vectors to v (B×T×F) if not nil and the decoded ids to x
// (B×T) if not nil. Without v it decodes position by position and stops each
// sequence at its <stop> (decodeStopping).
func (f *Flow) inverse(ctx context.Context, x []int, v []float32, z []float32, B int, ws *Workspace) error {
	T, F, V := f.cfg.T, f.cfg.F, f.cfg.V
	if v == nil {
		return f.parallel(ctx, ws, B, maxDecodeChunk, func(cw *chunkWork, b0, b1 int) {
			f.decodeStopping(ctx, cw, x, z, b0, b1-b0)
		})
	}
	return f.parallel(ctx, ws, B, maxDecodeChunk, func(cw *chunkWork, b0, b1 int) {
		n := b1 - b0
		cw.y = grow(cw.y, T*n*F)
		for bi := 0; bi < n; bi++ {
			for t := 0; t < T; t++ {
				i := (b0+bi)*T + t
				copy(cw.y[(t*n+bi)*F:(t*n+bi+1)*F], z[i*F:(i+1)*F])
			}
		}
		for k := len(f.blocks) - 1; k >= 0; k-- {
			if ctx.Err() != nil {
				return
			}
			f.inverseBlock(cw, k, n)
		}
		if v != nil {
			for bi := 0; bi < n; bi++ {
				for t := 0; t < T; t++ {
					i := (b0+bi)*T + t
					copy(v[i*F:(i+1)*F], cw.y[(t*n+bi)*F:(t*n+bi+1)*F])
				}
			}
		}
		if x != nil {
			cw.ids = grow(cw.ids, n)
			cw.scores = grow(cw.scores, n*V)
			for t := 0; t < T; t++ {
				kernels.NearestCosineTo(cw.ids, cw.y[t*n*F:(t+1)*n*F], f.unit, cw.scores, n, F, V)
				for bi, id := range cw.ids {
					x[(b0+bi)*T+t] = id
				}
			}
			ForceStop(x[b0*T:b1*T], T)
		}
	})
}

// decodeStopping writes to x the ids of the n sequences from b0 (latents z,
// B×T×F), position-major: at each position every block, last to first, then
// the cosine-nearest token. A sequence whose token is <stop> leaves the batch,
// its remaining positions set to <stop> as ForceStop would: the tokens after
// <stop> never matter, and skipping them roughly halves a decode of molecules
// about half as long as T (issue #32). Each sequence meets the same arithmetic
// as in inverseBlock's block-major order, so the ids are the same.
func (f *Flow) decodeStopping(ctx context.Context, cw *chunkWork, x []int, z []float32, b0, n int) {
	cfg := f.cfg
	T, F, H, L, C, V, K := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.V, len(f.blocks)
	// Block k's layer-l state: h at slot 2(kL+l), c at slot 2(kL+l)+1, each n×H of which the first m rows live.
	cw.state = grow(cw.state, K*L*2*n*H)
	slots := make([][]float32, 2*K*L)
	for o := range slots {
		slots[o] = cw.state[o*n*H : (o+1)*n*H]
	}
	slot := func(k, l, c int) []float32 { return slots[2*(k*L+l)+c] }
	for k := range K {
		fb := &f.blocks[k]
		for l := range L {
			h, c := slot(k, l, 0), slot(k, l, 1)
			for bi := range n {
				copy(h[bi*H:(bi+1)*H], fb.h0[l])
				copy(c[bi*H:(bi+1)*H], fb.c0[l])
			}
		}
	}
	cw.rows = grow(cw.rows, n) // live row i decodes sequence b0+rows[i]
	for i := range cw.rows {
		cw.rows[i] = i
	}
	cw.y = grow(cw.y, n*F)
	cw.ctxp = grow(cw.ctxp, n*C*cfg.U)
	cw.gates = grow(cw.gates, n*4*H)
	cw.ids = grow(cw.ids, n)
	cw.scores = grow(cw.scores, n*V)
	m := n
	for t := 0; t < T && m > 0; t++ {
		if ctx.Err() != nil {
			return
		}
		yt := cw.y[:m*F]
		for i, r := range cw.rows[:m] {
			j := (b0+r)*T + t
			copy(yt[i*F:(i+1)*F], z[j*F:(j+1)*F])
		}
		for k := K - 1; k >= 0; k-- {
			fb := &f.blocks[k]
			fb.ctx.dense(cw.ctxp, slot(k, L-1, 0), fb.ctxB, m)
			for j := C - 1; j >= 0; j-- {
				f.coupling(cw, k, j, yt, nil, m, false)
			}
			if t+1 == T {
				continue
			}
			fb.lstmStep(0, slot(k, 0, 0), slot(k, 0, 1), cw.gates, yt, fb.stepBias[t*4*H:(t+1)*4*H], m, H)
			for l := 1; l < L; l++ {
				fb.lstmStep(l, slot(k, l, 0), slot(k, l, 1), cw.gates, slot(k, l-1, 0), fb.bias[l], m, H)
			}
		}
		kernels.NearestCosineTo(cw.ids[:m], yt, f.unit, cw.scores, m, F, V)
		m = DropStopped(x[b0*T:], T, t, cw.ids[:m], cw.rows, H, slots)
	}
}

// inverseBlock inverts block k on cw.y (T×n×F, time-major) in place,
// sequentially over positions: the context of position t comes from the
// LSTM state after steps 0..t−1, the couplings are inverted in reverse
// order, and the recovered y_t is then fed to the LSTM with c_{t+1}.
func (f *Flow) inverseBlock(cw *chunkWork, k, n int) {
	cfg := f.cfg
	T, F, H, L, C, U := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.U
	fb := &f.blocks[k]
	cw.state = grow(cw.state, L*2*n*H)
	hOf := func(l int) []float32 { return cw.state[(2*l)*n*H : (2*l+1)*n*H] }
	cOf := func(l int) []float32 { return cw.state[(2*l+1)*n*H : (2*l+2)*n*H] }
	for l := 0; l < L; l++ {
		h, c := hOf(l), cOf(l)
		for bi := 0; bi < n; bi++ {
			copy(h[bi*H:(bi+1)*H], fb.h0[l])
			copy(c[bi*H:(bi+1)*H], fb.c0[l])
		}
	}
	cw.ctxp = grow(cw.ctxp, n*C*U)
	cw.gates = grow(cw.gates, n*4*H)
	for t := 0; t < T; t++ {
		yt := cw.y[t*n*F : (t+1)*n*F]
		fb.ctx.dense(cw.ctxp, hOf(L-1), fb.ctxB, n)
		for j := C - 1; j >= 0; j-- {
			f.coupling(cw, k, j, yt, nil, n, false)
		}
		if t+1 == T {
			break
		}
		fb.lstmStep(0, hOf(0), cOf(0), cw.gates, yt, fb.stepBias[t*4*H:(t+1)*4*H], n, H)
		for l := 1; l < L; l++ {
			fb.lstmStep(l, hOf(l), cOf(l), cw.gates, hOf(l-1), fb.bias[l], n, H)
		}
	}
}

// lstmStep advances the n states (h, c: n×H, updated in place) of LSTM layer
// l of the block by one step on the input x (n×In) with the constant gate
// input bias (4H): kernels.LSTMStepTo with the block's matrices. gates is
// n×4H scratch.
func (fb *flowBlock) lstmStep(l int, h, c, gates, x, bias []float32, n, H int) {
	g := gates[:n*4*H]
	for i := range n {
		copy(g[i*4*H:(i+1)*4*H], bias[:4*H])
	}
	fb.wih[l].mulAdd(g, x, n)
	fb.whh[l].mulAdd(g, h, n)
	kernels.LSTMCellTo(h, c, g, c, n, H)
}
