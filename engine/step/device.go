package step

import (
	"fmt"

	"github.com/nfbo/nfbo/kernels"
)

// Buf is a float32 array on a Device, or a contiguous part of one: the
// handle of the device's allocation (Mem), an offset and a length, all in
// elements. It is a small value; copying or slicing it copies no data, so
// the step's loops take views without allocating. The zero Buf is empty.
type Buf struct {
	mem    any
	off, n int
}

// NewBuf returns the handle of a whole allocation of n float32 values whose
// device-side identity is mem ([]float32 on the CPU, a device pointer on a
// GPU). Only Device implementations call it.
func NewBuf(mem any, n int) Buf { return Buf{mem: mem, n: n} }

// Mem returns the allocation's device-side identity, as given to NewBuf.
func (b Buf) Mem() any { return b.mem }

// Off returns the view's first element within the allocation.
func (b Buf) Off() int { return b.off }

// Len returns the view's number of elements.
func (b Buf) Len() int { return b.n }

// Slice returns elements [lo, hi) of b. It panics when they are not within
// b.
func (b Buf) Slice(lo, hi int) Buf {
	if lo < 0 || hi < lo || hi > b.n {
		panic(fmt.Sprintf("step: slice [%d:%d] of a buffer of %d", lo, hi, b.n))
	}
	return Buf{mem: b.mem, off: b.off + lo, n: hi - lo}
}

// Rows returns rows [r0, r1) of b read as a row-major matrix of w columns.
func (b Buf) Rows(r0, r1, w int) Buf { return b.Slice(r0*w, r1*w) }

// IntBuf is an int32 array on a Device (token and row indices), a handle
// like Buf.
type IntBuf struct {
	mem    any
	off, n int
}

// NewIntBuf returns the handle of a whole allocation of n int32 values
// (see NewBuf).
func NewIntBuf(mem any, n int) IntBuf { return IntBuf{mem: mem, n: n} }

// Mem returns the allocation's device-side identity.
func (b IntBuf) Mem() any { return b.mem }

// Off returns the view's first element within the allocation.
func (b IntBuf) Off() int { return b.off }

// Len returns the view's number of elements.
func (b IntBuf) Len() int { return b.n }

// Slice returns elements [lo, hi) of b. It panics when they are not within
// b.
func (b IntBuf) Slice(lo, hi int) IntBuf {
	if lo < 0 || hi < lo || hi > b.n {
		panic(fmt.Sprintf("step: slice [%d:%d] of an index buffer of %d", lo, hi, b.n))
	}
	return IntBuf{mem: b.mem, off: b.off + lo, n: hi - lo}
}

// Acc is a few float64 accumulators on a Device (a step's sums: loss,
// gradient norm, rejected draws), a handle like Buf, read back together in
// one transfer (Device.ReadAcc).
type Acc struct {
	mem any
	n   int
}

// NewAcc returns the handle of an allocation of n float64 accumulators
// (see NewBuf).
func NewAcc(mem any, n int) Acc { return Acc{mem: mem, n: n} }

// Mem returns the allocation's device-side identity.
func (a Acc) Mem() any { return a.mem }

// Len returns the number of accumulators.
func (a Acc) Len() int { return a.n }

// Device is what the training step needs of a processor: float32 buffers
// and the step's kernels, one method per kernel, in device terms. Matrices
// are row-major; "n×w" is n rows of w, element (i, j) at i·w + j of the
// buffer's view; every shape is an argument, and a buffer may be longer
// than its shape needs (its first elements are used).
//
// Calls run in order, each seeing the results of the calls before it. A
// GPU queues them: its calls return before the work is done, and an error
// (a failed launch or allocation) is kept, later calls do nothing, and the
// next call that waits for the device, Download or ReadAcc, returns it.
// Uploads do not wait (a GPU copies src before returning). A wrong shape or a buffer too short is a programmer error and
// panics, as in kernels.
//
// engine/train.CPU is the CPU's implementation, on kernels and the float32
// loops of engine/train (loops.go).
type Device interface {
	// Alloc returns a new buffer of n zeros, and AllocInt one of n int32
	// zeros.
	Alloc(n int) Buf
	AllocInt(n int) IntBuf
	// Free and FreeInt release the whole allocation of a buffer returned by
	// Alloc or AllocInt; its views are invalid afterwards.
	Free(b Buf)
	FreeInt(b IntBuf)
	// Upload copies src into dst, and UploadInt likewise (len(src) ≤ the
	// view's length).
	Upload(dst Buf, src []float32)
	UploadInt(dst IntBuf, src []int32)
	// Download copies src into dst (len(dst) ≤ src.Len()) once every
	// earlier call is done, and returns the first error of any call since
	// the last Download or ReadAcc.
	Download(dst []float32, src Buf) error
	// Zero sets every element of dst to 0, and Copy copies src into dst
	// (equal lengths; no overlap).
	Zero(dst Buf)
	Copy(dst, src Buf)

	// Gemm sets c = alpha·op(a)·op(b) + beta·c, with a stored ar×ac and b
	// stored br×bc, op transposing when tA or tB is set; c is m×n for
	// op(a) m×k and op(b) k×n. beta = 0 ignores c's contents.
	Gemm(tA, tB bool, alpha float32, a Buf, ar, ac int, b Buf, br, bc int, beta float32, c Buf)

	// Add sets dst = a + b and Mul dst = a⊙b over n elements (a dropout
	// mask's application and its gradient); dst may be a or b.
	Add(dst, a, b Buf, n int)
	Mul(dst, a, b Buf, n int)
	// BiasAct adds the row bias [w] to every row of y (n×w) and, with
	// relu, clamps at zero (to +0).
	BiasAct(y, bias Buf, n, w int, relu bool)
	// ReLUGrad zeroes d[i] wherever the ReLU output h[i] is zero, over n
	// elements.
	ReLUGrad(d, h Buf, n int)
	// ColSums sets dst [w] to the column sums of x (n×w): a bias gradient.
	ColSums(dst, x Buf, n, w int)
	// CopyCols copies, for n rows, columns [srcOff, srcOff+w) of src (rows
	// of srcW) to columns [dstOff, dstOff+w) of dst (rows of dstW), adding
	// to what dst holds when acc is set: the coupling halves, their join,
	// the log-determinant column, the initial LSTM states.
	CopyCols(dst Buf, dstW, dstOff int, src Buf, srcW, srcOff, n, w int, acc bool)
	// GatherRows sets row r of dst (n×w) to the sum of the k rows
	// idx[k·r .. k·r+k) of table (rows of w), an index −1 adding nothing
	// (a zero row for k = 1): embedding lookups (k = 1) and layer 0's
	// positional gates (k = 2).
	GatherRows(dst, table Buf, idx IntBuf, n, k, w int)
	// ScatterAddRows adds row r of src (n×w) to each row idx[k·r .. k·r+k)
	// of dst (rows of w), skipping −1: GatherRows's gradient.
	ScatterAddRows(dst, src Buf, idx IntBuf, n, k, w int)

	// LSTMCellForward is one step of an LSTM layer for B sequences
	// (kernels.LSTMCellForward32): act [B, 4H] holds x·Wih + h·Whh and
	// receives the activations; bias is [biasRows, 4H] (1 or B rows);
	// cPrev [B, H] is the previous cell state; c, tc = tanh(c) and h are
	// written ([B, H]). c may alias cPrev.
	LSTMCellForward(act, bias Buf, biasRows int, cPrev, c, tc, h Buf, B, H int)
	// LSTMCellBackward is one step of its gradient (kernels.LSTMCellGrad32):
	// from act, tc and cPrev of the step, the gradient dout [B, H] of its
	// output and dh [B, H] from the later steps, it writes the gate
	// gradients dg [B, 4H] and replaces dc [B, H], the cell's gradient
	// from the later steps, by the one for the earlier step.
	LSTMCellBackward(dg, dc, act, tc, cPrev, dout, dh Buf, B, H int)

	// LSTMForward runs an LSTM layer's recurrence over S steps for B
	// sequences (RecurrenceForward: at each step the recurrent product
	// h·Whh added to act's rows, then LSTMCellForward): act [S·B, 4H] holds
	// each row's input product and receives its activations; bias is
	// [biasRows, 4H], biasRows 1 or S·B (a row per step and sequence);
	// whh [H, 4H]; out [(S+1)·B, H] holds h0 in its first B rows and
	// receives h_1..h_S; c0 [B, H]; c and tc [S·B, H] receive the cell
	// states and their tanh. A Device may run the whole recurrence its own
	// way (the CPU: each core the recurrence of its sequences, Whh packed
	// once).
	LSTMForward(act, bias Buf, biasRows int, whh, c0, c, tc, out Buf, S, B, H int)
	// LSTMBackward runs its gradient backwards over the S steps
	// (RecurrenceBackward): from the outputs' gradient dOut [S·B, H] it
	// writes the gate gradients dG [S·B, 4H] and leaves dL/dh0 and dL/dc0
	// in dh and dc [B, H], which are zero on entry.
	LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut Buf, S, B, H int)

	// NLSqForward transforms w (n×half) with the raw parameters o
	// [n, half, 5] (parameter fastest) and writes out (n×(half+1)): u, then
	// the row's Σ log du/dw. AffineForward does the same for the affine
	// map, o [n, half, 2].
	NLSqForward(out, o, w Buf, n, half int)
	AffineForward(out, o, w Buf, n, half int)
	// NLSqBackward writes the gradients dO (shaped as o) and dw (n×half)
	// from dOut (n×(half+1)), the gradient of NLSqForward's out; and
	// AffineBackward for AffineForward.
	NLSqBackward(dO, dw, o, w, dOut Buf, n, half int)
	AffineBackward(dO, dw, o, w, dOut Buf, n, half int)

	// NormalizeRows sets dst (n×w) to the rows of src divided by their
	// norms, and NormalizeRowsGrad sets dsrc to the gradient through it of
	// Σ ddst·dst (kernels.NormalizeRowsGradTo); a zero row stays zero.
	NormalizeRows(dst, src Buf, n, w int)
	NormalizeRowsGrad(dsrc, ddst, src Buf, n, w int)
	// Similarity writes the similarity loss sim [n] of rows v against ex
	// and ej (n×w, kernels.SimilarityTo), and SimilarityGrad the gradients
	// dex and dej of Σ coef·sim for v = ex + ε, dv being the rest of the
	// loss's gradient with respect to v (kernels.SimilarityGradTo).
	Similarity(sim, v, ex, ej Buf, n, w int)
	SimilarityGrad(dex, dej, dv, v, ex, ej, coef Buf, n, w int)
	// GaussNLL writes nll [n] = ½·Σ y² + ½·w·log 2π − logdet for y (n×w)
	// and logdet [n], and GaussNLLGrad dy = s_r·y_r, the gradient of
	// Σ s_r·nll_r with respect to y.
	GaussNLL(nll, y, logdet Buf, n, w int)
	GaussNLLGrad(dy, y, s Buf, n, w int)

	// AllocAcc returns n float64 accumulators (zero), FreeAcc releases
	// them, ZeroAcc zeroes them, and ReadAcc copies them into dst once
	// every earlier call is done, returning the first error of any call
	// since the last Download or ReadAcc: a step's one wait.
	AllocAcc(n int) Acc
	FreeAcc(a Acc)
	ZeroAcc(a Acc)
	ReadAcc(dst []float64, a Acc) error
	// SumLoss adds LossSums of rows nll, sim and wt [n] to acc[slot ..
	// slot+4); SumSquares adds Σ x_i² over x's first n elements (float64)
	// to acc[slot].
	SumLoss(acc Acc, slot int, nll, sim, wt Buf, n int, simCoef float64)
	SumSquares(acc Acc, slot int, x Buf, n int)

	// Layout writes LayoutTo's weights, positional rows and initial codes
	// from the B padded lengths lens for T positions.
	Layout(wt, negWt, simC Buf, pos IntBuf, pos0 Buf, lens IntBuf, B, T, maxT, real int, simCoef float32)
	// DrawNegatives is NegativesTo over n rows, DrawNoise NoiseTo (rows
	// [n, F], normalised embeddings en [V, F]) adding its rejected rows to
	// acc[slot], and DrawDropout DropoutTo over n entries.
	DrawNegatives(neg, tok IntBuf, wt Buf, n, V int, key kernels.PhiloxKey)
	DrawNoise(eps Buf, tok IntBuf, wt, en Buf, n, F, V int, sigma float64, rounds int, key kernels.PhiloxKey, acc Acc, slot int)
	DrawDropout(mask Buf, n int, p float64, key kernels.PhiloxKey, stream int)

	// Adam applies one Adam update with the coefficients c to n parameters
	// p, gradients g and moments m, v (kernels.AdamUpdate).
	Adam(p, g, m, v Buf, n int, c kernels.AdamCoeffs)
	// AdamClipped is Adam with c.Scale replaced by ClipScale(acc[sqSlot],
	// clip), and no update at all unless Finite(acc[lossSlot],
	// acc[sqSlot]): the clipping and the guard computed where the sums are.
	AdamClipped(p, g, m, v Buf, n int, c kernels.AdamCoeffs, clip float64, acc Acc, lossSlot, sqSlot int)
}

// GemmShape returns the shape of Device.Gemm's product for a (ar×ac) and b (br×bc), transposed as tA and tB say:
// op(a) is m×k, op(b) k×n, c m×n; ok is false when the inner dimensions differ. Every Device checks its
// arguments with it.
func GemmShape(tA, tB bool, ar, ac, br, bc int) (m, n, k int, ok bool) {
	m, k = ar, ac
	if tA {
		m, k = ac, ar
	}
	n, kb := bc, br
	if tB {
		n, kb = br, bc
	}
	return m, n, k, k == kb
}

// RecurrenceForward is Device.LSTMForward in terms of the Device's Gemm and
// LSTMCellForward, step by step: what a Device without a recurrence of its
// own runs.
func RecurrenceForward(d Device, act, bias Buf, biasRows int, whh, c0, c, tc, out Buf, S, B, H int) {
	if biasRows != 1 && biasRows != S*B {
		panic(fmt.Sprintf("step: LSTMForward: %d bias rows for %d steps of %d sequences", biasRows, S, B))
	}
	H4 := 4 * H
	for st := range S {
		a := act.Rows(st, st+1, B*H4)
		d.Gemm(false, false, 1, out.Rows(st, st+1, B*H), B, H, whh, H, H4, 1, a)
		cPrev := c0
		if st > 0 {
			cPrev = c.Rows(st-1, st, B*H)
		}
		bias, rows := bias, 1
		if biasRows > 1 {
			bias, rows = bias.Rows(st, st+1, B*H4), B
		}
		d.LSTMCellForward(a, bias, rows, cPrev, c.Rows(st, st+1, B*H), tc.Rows(st, st+1, B*H), out.Rows(st+1, st+2, B*H), B, H)
	}
}

// RecurrenceBackward is Device.LSTMBackward in terms of the Device's Gemm
// and LSTMCellBackward, step by step.
func RecurrenceBackward(d Device, dG, dh, dc, act, tc, c, c0, whh, dOut Buf, S, B, H int) {
	H4 := 4 * H
	for st := S - 1; st >= 0; st-- {
		cPrev := c0
		if st > 0 {
			cPrev = c.Rows(st-1, st, B*H)
		}
		dg := dG.Rows(st, st+1, B*H4)
		d.LSTMCellBackward(dg, dc, act.Rows(st, st+1, B*H4), tc.Rows(st, st+1, B*H), cPrev, dOut.Rows(st, st+1, B*H), dh, B, H)
		d.Gemm(false, true, 1, dg, B, H4, whh, H, H4, 0, dh)
	}
}
