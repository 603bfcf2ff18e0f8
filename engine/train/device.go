package train

import (
	"fmt"
	"sync"

	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// CPU is the training step's Device (engine/step) on this machine's cores,
// the Trainer's device unless Options.Device names another: buffers are Go
// slices, and every kernel is a float32 loop of this package (gemm's
// products split over the cores, addBiasReLU, the NLSq and affine
// transforms of transformRows, the row gathers, the block copies, the
// dropout product; loops.go) or of kernels (the LSTM cell, Adam, and the
// loss's row-wise parts: NormalizeRowsTo, SimilarityTo, GaussNLLTo and their
// gradients). Calls run at once, so errors never arise; a wrong shape
// panics. The zero value is ready to use.
type CPU struct{}

var _ step.Device = CPU{}

// f32 returns the first n elements of b, panicking with the name of the
// kernel and argument when b is shorter.
func f32(fn, name string, b step.Buf, n int) []float32 {
	if b.Len() < n {
		panic(fmt.Sprintf("train: CPU.%s: %s has %d elements, want at least %d", fn, name, b.Len(), n))
	}
	return b.Mem().([]float32)[b.Off() : b.Off()+n]
}

// i32 is f32 for an IntBuf.
func i32(fn, name string, b step.IntBuf, n int) []int32 {
	if b.Len() < n {
		panic(fmt.Sprintf("train: CPU.%s: %s has %d elements, want at least %d", fn, name, b.Len(), n))
	}
	return b.Mem().([]int32)[b.Off() : b.Off()+n]
}

// all returns the whole view of b.
func all(b step.Buf) []float32 { return b.Mem().([]float32)[b.Off() : b.Off()+b.Len()] }

// Alloc returns n zeros.
func (CPU) Alloc(n int) step.Buf { return step.NewBuf(make([]float32, n), n) }

// AllocInt returns n int32 zeros.
func (CPU) AllocInt(n int) step.IntBuf { return step.NewIntBuf(make([]int32, n), n) }

// Free does nothing: the garbage collector frees.
func (CPU) Free(step.Buf) {}

// FreeInt does nothing.
func (CPU) FreeInt(step.IntBuf) {}

// Upload copies src into dst.
func (CPU) Upload(dst step.Buf, src []float32) { copy(f32("Upload", "dst", dst, len(src)), src) }

// UploadInt copies src into dst.
func (CPU) UploadInt(dst step.IntBuf, src []int32) {
	copy(i32("UploadInt", "dst", dst, len(src)), src)
}

// Download copies src into dst.
func (CPU) Download(dst []float32, src step.Buf) error {
	copy(dst, f32("Download", "src", src, len(dst)))
	return nil
}

// Zero clears dst.
func (CPU) Zero(dst step.Buf) { clear(all(dst)) }

// Copy copies src into dst.
func (CPU) Copy(dst, src step.Buf) {
	if dst.Len() != src.Len() {
		panic(fmt.Sprintf("train: CPU.Copy: %d elements into %d", src.Len(), dst.Len()))
	}
	copy(all(dst), all(src))
}

// Gemm is gemm.
func (CPU) Gemm(tA, tB bool, alpha float32, a step.Buf, ar, ac int, b step.Buf, br, bc int, beta float32, c step.Buf) {
	m, n, _, ok := step.GemmShape(tA, tB, ar, ac, br, bc)
	if !ok {
		panic(fmt.Sprintf("train: CPU.Gemm: a %d×%d (transposed %t) times b %d×%d (transposed %t)", ar, ac, tA, br, bc, tB))
	}
	gemm(tA, tB, alpha, f32("Gemm", "a", a, ar*ac), ar, ac, f32("Gemm", "b", b, br*bc), br, bc, beta, f32("Gemm", "c", c, m*n))
}

// Add sets dst = a + b over n elements.
func (CPU) Add(dst, a, b step.Buf, n int) {
	d, x, y := f32("Add", "dst", dst, n), f32("Add", "a", a, n), f32("Add", "b", b, n)
	parallelRows(n, 1, func(lo, hi int) { addTo(d[lo:hi], x[lo:hi], y[lo:hi]) })
}

// Mul sets dst = a⊙b over n elements (mulRows).
func (CPU) Mul(dst, a, b step.Buf, n int) {
	mulRows(f32("Mul", "dst", dst, n), f32("Mul", "a", a, n), f32("Mul", "b", b, n), n, 1)
}

// BiasAct is addBiasReLU.
func (CPU) BiasAct(y, bias step.Buf, n, w int, relu bool) {
	addBiasReLU(f32("BiasAct", "y", y, n*w), f32("BiasAct", "bias", bias, w), n, w, relu)
}

// ReLUGrad is reluGradRows.
func (CPU) ReLUGrad(d, h step.Buf, n int) {
	reluGradRows(f32("ReLUGrad", "d", d, n), f32("ReLUGrad", "h", h, n), n, 1)
}

// ColSums is colSums.
func (CPU) ColSums(dst, x step.Buf, n, w int) {
	colSums(f32("ColSums", "dst", dst, w), f32("ColSums", "x", x, n*w), n, w)
}

// CopyCols is copyCols.
func (CPU) CopyCols(dst step.Buf, dstW, dstOff int, src step.Buf, srcW, srcOff, n, w int, acc bool) {
	if n == 0 || w == 0 {
		return
	}
	if dstOff+w > dstW || srcOff+w > srcW {
		panic(fmt.Sprintf("train: CPU.CopyCols: columns [%d, %d) of %d into [%d, %d) of %d", srcOff, srcOff+w, srcW, dstOff, dstOff+w, dstW))
	}
	copyCols(f32("CopyCols", "dst", dst, (n-1)*dstW+dstOff+w), dstW, dstOff, f32("CopyCols", "src", src, (n-1)*srcW+srcOff+w), srcW, srcOff, n, w, acc)
}

// GatherRows is gatherRows.
func (CPU) GatherRows(dst, table step.Buf, idx step.IntBuf, n, k, w int) {
	gatherRows(f32("GatherRows", "dst", dst, n*w), all(table), i32("GatherRows", "idx", idx, n*k), n, k, w)
}

// ScatterAddRows is scatterAddRows.
func (CPU) ScatterAddRows(dst, src step.Buf, idx step.IntBuf, n, k, w int) {
	scatterAddRows(all(dst), f32("ScatterAddRows", "src", src, n*w), i32("ScatterAddRows", "idx", idx, n*k), n, k, w)
}

// LSTMCellForward is kernels.LSTMCellForward32, rows split over the cores.
func (CPU) LSTMCellForward(act, bias step.Buf, biasRows int, cPrev, c, tc, h step.Buf, B, H int) {
	if biasRows != 1 && biasRows != B {
		panic(fmt.Sprintf("train: CPU.LSTMCellForward: %d bias rows for %d sequences", biasRows, B))
	}
	H4 := 4 * H
	a, bi := f32("LSTMCellForward", "act", act, B*H4), f32("LSTMCellForward", "bias", bias, biasRows*H4)
	cp, cn := f32("LSTMCellForward", "cPrev", cPrev, B*H), f32("LSTMCellForward", "c", c, B*H)
	t, hh := f32("LSTMCellForward", "tc", tc, B*H), f32("LSTMCellForward", "h", h, B*H)
	perRow := biasRows > 1
	parallelRows(B, H4, func(lo, hi int) {
		b := bi
		if perRow {
			b = bi[lo*H4 : hi*H4]
		}
		kernels.LSTMCellForward32(a[lo*H4:hi*H4], cn[lo*H:hi*H], t[lo*H:hi*H], hh[lo*H:hi*H], cp[lo*H:hi*H], b, hi-lo, H, perRow)
	})
}

// LSTMForward runs the layer's recurrence: each
// core runs the whole recurrence of its own sequences (no step waits for
// another core), the recurrent products on Whh packed once
// (kernels.MulPackedTo) where the packed micro-kernel has assembly, the
// cells kernels.LSTMCellForward32.
func (CPU) LSTMForward(act, bias step.Buf, biasRows int, whh, c0, c, tc, out step.Buf, S, B, H int) {
	const fn = "LSTMForward"
	if biasRows != 1 && biasRows != S*B {
		panic(fmt.Sprintf("train: CPU.LSTMForward: %d bias rows for %d steps of %d sequences", biasRows, S, B))
	}
	H4 := 4 * H
	a, bi, w := f32(fn, "act", act, S*B*H4), f32(fn, "bias", bias, biasRows*H4), f32(fn, "whh", whh, H*H4)
	c0s, cs, ts, o := f32(fn, "c0", c0, B*H), f32(fn, "c", c, S*B*H), f32(fn, "tc", tc, S*B*H), f32(fn, "out", out, (S+1)*B*H)
	var pk *kernels.Packed
	if kernels.PackedAccelerated() {
		pk = new(kernels.Packed)
		pk.Pack(w, H4, H, H4, false)
	}
	perRow := biasRows > 1
	parallelRows(B, S*H, func(b0, b1 int) {
		for s := range S {
			r0, r1 := s*B+b0, s*B+b1
			hPrev, g := o[r0*H:r1*H], a[r0*H4:r1*H4] // out's rows s·B.. are h before step s
			if pk != nil {
				kernels.MulPackedTo(g, H4, hPrev, H, b1-b0, pk, true)
			} else {
				gemmBlock(false, false, b1-b0, H4, H, 1, hPrev, H, w, H4, 1, g, H4)
			}
			cPrev := c0s[b0*H : b1*H]
			if s > 0 {
				cPrev = cs[(r0-B)*H : (r1-B)*H]
			}
			bb := bi
			if perRow {
				bb = bi[r0*H4 : r1*H4]
			}
			kernels.LSTMCellForward32(g, cs[r0*H:r1*H], ts[r0*H:r1*H], o[(B+r0)*H:(B+r1)*H], cPrev, bb, b1-b0, H, perRow)
		}
	})
}

// LSTMBackward runs the recurrence's gradient:
// each core its own sequences backwards, kernels.LSTMCellGrad32 per row
// and the products on Whhᵀ packed once.
func (CPU) LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut step.Buf, S, B, H int) {
	const fn = "LSTMBackward"
	H4 := 4 * H
	g, dhs, dcs, a := f32(fn, "dG", dG, S*B*H4), f32(fn, "dh", dh, B*H), f32(fn, "dc", dc, B*H), f32(fn, "act", act, S*B*H4)
	ts, cs, c0s, w, do := f32(fn, "tc", tc, S*B*H), f32(fn, "c", c, S*B*H), f32(fn, "c0", c0, B*H), f32(fn, "whh", whh, H*H4), f32(fn, "dOut", dOut, S*B*H)
	var pk *kernels.Packed
	if kernels.PackedAccelerated() {
		pk = new(kernels.Packed)
		pk.Pack(w, H4, H4, H, true)
	}
	parallelRows(B, S*H, func(b0, b1 int) {
		for s := S - 1; s >= 0; s-- {
			for b := b0; b < b1; b++ {
				r, q := (s*B+b)*H, s*B+b
				cp := c0s[b*H : (b+1)*H]
				if s > 0 {
					cp = cs[r-B*H : r-B*H+H]
				}
				kernels.LSTMCellGrad32(g[q*H4:(q+1)*H4], dcs[b*H:(b+1)*H], a[q*H4:(q+1)*H4], ts[r:r+H], cp, do[r:r+H], dhs[b*H:(b+1)*H])
			}
			// dh for step s−1 (for s = 0, dL/dh0): dG_s·Whhᵀ.
			dGs := g[(s*B+b0)*H4 : (s*B+b1)*H4]
			if pk != nil {
				kernels.MulPackedTo(dhs[b0*H:b1*H], H, dGs, H4, b1-b0, pk, false)
			} else {
				gemmBlock(false, true, b1-b0, H, H4, 1, dGs, H4, w, H4, 0, dhs[b0*H:b1*H], H)
			}
		}
	})
}

// LSTMCellBackward is kernels.LSTMCellGrad32 on every row, rows split over
// the cores.
func (CPU) LSTMCellBackward(dg, dc, act, tc, cPrev, dout, dh step.Buf, B, H int) {
	H4 := 4 * H
	g, a := f32("LSTMCellBackward", "dg", dg, B*H4), f32("LSTMCellBackward", "act", act, B*H4)
	c, t := f32("LSTMCellBackward", "dc", dc, B*H), f32("LSTMCellBackward", "tc", tc, B*H)
	cp, o, h := f32("LSTMCellBackward", "cPrev", cPrev, B*H), f32("LSTMCellBackward", "dout", dout, B*H), f32("LSTMCellBackward", "dh", dh, B*H)
	parallelRows(B, H4, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			r := b * H
			kernels.LSTMCellGrad32(g[b*H4:(b+1)*H4], c[r:r+H], a[b*H4:(b+1)*H4], t[r:r+H], cp[r:r+H], o[r:r+H], h[r:r+H])
		}
	})
}

// transform runs transformRows with tr.
func transform(fn string, tr model.Transform, out, o, w step.Buf, n, half int) {
	np := tr.NumParams()
	transformRows(tr, f32(fn, "out", out, n*(half+1)), f32(fn, "o", o, n*half*np), f32(fn, "w", w, n*half), n, half)
}

// transformGrad runs transformGradRows with tr.
func transformGrad(fn string, tr model.Transform, dO, dw, o, w, dOut step.Buf, n, half int) {
	np := tr.NumParams()
	transformGradRows(tr, f32(fn, "dO", dO, n*half*np), f32(fn, "dw", dw, n*half), f32(fn, "o", o, n*half*np),
		f32(fn, "w", w, n*half), f32(fn, "dOut", dOut, n*(half+1)), n, half)
}

// NLSqForward is transformRows for the NLSq map.
func (CPU) NLSqForward(out, o, w step.Buf, n, half int) {
	transform("NLSqForward", model.NLSq, out, o, w, n, half)
}

// AffineForward is transformRows for the affine map.
func (CPU) AffineForward(out, o, w step.Buf, n, half int) {
	transform("AffineForward", model.Affine, out, o, w, n, half)
}

// NLSqBackward is transformGradRows for the NLSq map.
func (CPU) NLSqBackward(dO, dw, o, w, dOut step.Buf, n, half int) {
	transformGrad("NLSqBackward", model.NLSq, dO, dw, o, w, dOut, n, half)
}

// AffineBackward is transformGradRows for the affine map.
func (CPU) AffineBackward(dO, dw, o, w, dOut step.Buf, n, half int) {
	transformGrad("AffineBackward", model.Affine, dO, dw, o, w, dOut, n, half)
}

// NormalizeRows is kernels.NormalizeRowsTo.
func (CPU) NormalizeRows(dst, src step.Buf, n, w int) {
	kernels.NormalizeRowsTo(f32("NormalizeRows", "dst", dst, n*w), f32("NormalizeRows", "src", src, n*w), n, w)
}

// NormalizeRowsGrad is kernels.NormalizeRowsGradTo.
func (CPU) NormalizeRowsGrad(dsrc, ddst, src step.Buf, n, w int) {
	kernels.NormalizeRowsGradTo(f32("NormalizeRowsGrad", "dsrc", dsrc, n*w), f32("NormalizeRowsGrad", "ddst", ddst, n*w),
		f32("NormalizeRowsGrad", "src", src, n*w), n, w)
}

// Similarity is kernels.SimilarityTo, rows split over the cores.
func (CPU) Similarity(sim, v, ex, ej step.Buf, n, w int) {
	s, x, e, j := f32("Similarity", "sim", sim, n), f32("Similarity", "v", v, n*w), f32("Similarity", "ex", ex, n*w), f32("Similarity", "ej", ej, n*w)
	parallelRows(n, 3*w, func(lo, hi int) {
		kernels.SimilarityTo(s[lo:hi], x[lo*w:hi*w], e[lo*w:hi*w], j[lo*w:hi*w], hi-lo, w)
	})
}

// SimilarityGrad is kernels.SimilarityGradTo, rows split over the cores.
func (CPU) SimilarityGrad(dex, dej, dv, v, ex, ej, coef step.Buf, n, w int) {
	const fn = "SimilarityGrad"
	dx, dj, d := f32(fn, "dex", dex, n*w), f32(fn, "dej", dej, n*w), f32(fn, "dv", dv, n*w)
	x, e, j, c := f32(fn, "v", v, n*w), f32(fn, "ex", ex, n*w), f32(fn, "ej", ej, n*w), f32(fn, "coef", coef, n)
	parallelRows(n, 6*w, func(lo, hi int) {
		kernels.SimilarityGradTo(dx[lo*w:hi*w], dj[lo*w:hi*w], d[lo*w:hi*w], x[lo*w:hi*w], e[lo*w:hi*w], j[lo*w:hi*w], c[lo:hi], hi-lo, w)
	})
}

// GaussNLL is kernels.GaussNLLTo.
func (CPU) GaussNLL(nll, y, logdet step.Buf, n, w int) {
	kernels.GaussNLLTo(f32("GaussNLL", "nll", nll, n), f32("GaussNLL", "y", y, n*w), f32("GaussNLL", "logdet", logdet, n), n, w)
}

// GaussNLLGrad is kernels.ScaleRowsTo, rows split over the cores.
func (CPU) GaussNLLGrad(dy, y, s step.Buf, n, w int) {
	d, x, k := f32("GaussNLLGrad", "dy", dy, n*w), f32("GaussNLLGrad", "y", y, n*w), f32("GaussNLLGrad", "s", s, n)
	parallelRows(n, w, func(lo, hi int) {
		kernels.ScaleRowsTo(d[lo*w:hi*w], x[lo*w:hi*w], k[lo:hi], hi-lo, w)
	})
}

// acc returns the accumulators of a.
func acc(a step.Acc) []float64 { return a.Mem().([]float64) }

// AllocAcc returns n zero accumulators.
func (CPU) AllocAcc(n int) step.Acc { return step.NewAcc(make([]float64, n), n) }

// FreeAcc does nothing.
func (CPU) FreeAcc(step.Acc) {}

// ZeroAcc zeroes a.
func (CPU) ZeroAcc(a step.Acc) { clear(acc(a)) }

// ReadAcc copies a into dst.
func (CPU) ReadAcc(dst []float64, a step.Acc) error {
	copy(dst, acc(a))
	return nil
}

// SumLoss adds step.LossSums to a[slot..slot+4).
func (CPU) SumLoss(a step.Acc, slot int, nll, sim, wt step.Buf, n int, simCoef float64) {
	l, ns, ss, rows := step.LossSums(f32("SumLoss", "nll", nll, n), f32("SumLoss", "sim", sim, n), f32("SumLoss", "wt", wt, n), simCoef)
	s := acc(a)[slot : slot+4]
	s[0] += l
	s[1] += ns
	s[2] += ss
	s[3] += rows
}

// SumSquares adds GradNorm's sum of squares of x to a[slot].
func (CPU) SumSquares(a step.Acc, slot int, x step.Buf, n int) {
	acc(a)[slot] += gradSumSquares([][]float32{f32("SumSquares", "x", x, n)})
}

// Layout is step.LayoutTo.
func (CPU) Layout(wt, negWt, simC step.Buf, pos step.IntBuf, pos0 step.Buf, lens step.IntBuf, B, T, maxT, real int, simCoef float32) {
	const fn = "Layout"
	N := T * B
	step.LayoutTo(f32(fn, "wt", wt, N), f32(fn, "negWt", negWt, N), f32(fn, "simC", simC, N), i32(fn, "pos", pos, 2*(T-1)*B),
		f32(fn, "pos0", pos0, B*2*maxT), i32(fn, "lens", lens, B), T, maxT, real, simCoef)
}

// DrawNegatives is step.NegativesTo.
func (CPU) DrawNegatives(neg, tok step.IntBuf, wt step.Buf, n, V int, key kernels.PhiloxKey) {
	step.NegativesTo(i32("DrawNegatives", "neg", neg, n), i32("DrawNegatives", "tok", tok, n), f32("DrawNegatives", "wt", wt, n), V, key)
}

// DrawNoise is step.NoiseTo, the rows split over the cores.
func (CPU) DrawNoise(eps step.Buf, tok step.IntBuf, wt, en step.Buf, n, F, V int, sigma float64, rounds int, key kernels.PhiloxKey, a step.Acc, slot int) {
	const fn = "DrawNoise"
	e, tk, w, em := f32(fn, "eps", eps, n*F), i32(fn, "tok", tok, n), f32(fn, "wt", wt, n), f32(fn, "en", en, V*F)
	var mu sync.Mutex
	var rejected int
	parallelRows(n, V*F, func(lo, hi int) {
		k := step.NoiseRows(e, tk, w, em, F, sigma, rounds, key, lo, hi)
		mu.Lock()
		rejected += k
		mu.Unlock()
	})
	acc(a)[slot] += float64(rejected)
}

// DrawDropout is step.DropoutTo, its words split over the cores.
func (CPU) DrawDropout(mask step.Buf, n int, p float64, key kernels.PhiloxKey, stream int) {
	m := f32("DrawDropout", "mask", mask, n)
	parallelRows((n+3)/4, 16, func(lo, hi int) { step.DropoutWords(m, p, key, stream, lo, hi) })
}

// AdamClipped is Adam with the clipping scale of the accumulated norm, and
// nothing when the loss or the norm is not finite.
func (c CPU) AdamClipped(p, g, m, v step.Buf, n int, co kernels.AdamCoeffs, clip float64, a step.Acc, lossSlot, sqSlot int) {
	s := acc(a)
	if !step.Finite(s[lossSlot], s[sqSlot]) {
		return
	}
	co.Scale = step.ClipScale(s[sqSlot], clip)
	c.Adam(p, g, m, v, n, co)
}

// Adam is kernels.AdamUpdate, the entries split over the cores.
func (CPU) Adam(p, g, m, v step.Buf, n int, c kernels.AdamCoeffs) {
	pp, gg, mm, vv := f32("Adam", "p", p, n), f32("Adam", "g", g, n), f32("Adam", "m", m, n), f32("Adam", "v", v, n)
	parallelRows(n, 1, func(lo, hi int) {
		kernels.AdamUpdate(pp[lo:hi], gg[lo:hi], mm[lo:hi], vv[lo:hi], &c)
	})
}
