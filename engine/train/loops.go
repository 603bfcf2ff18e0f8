package train

import (
	"iter"
	"unsafe"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// This file holds the float32 (and float64, for the tests' references) loops
// that CPU's kernels run: the coupling net's bias, ReLU and column sums, the
// NLSq and affine transforms and their gradients, the row gathers and
// scatters of the embeddings and positional gates, the block copies and the
// dropout product. The gorgonia ops of the tests' graph (oracle_*_test.go)
// call the same loops, so the graph checks the step's backward pass, not
// the loops' arithmetic, which the float64 references check.

// addBiasReLU adds the row b [1, w] to every row of dst [n, w] and, with
// relu, clamps the result at zero (+0: reluGrad relies on it); rows are
// split over the cores. The clamp is the builtin max, which compiles
// without a branch: on the half-negative inputs of a ReLU a branch
// mispredicts so often that it made these loops several times slower.
func addBiasReLU[T float32 | float64](dst, b []T, n, w int, relu bool) {
	d32, is32 := any(dst).([]float32)
	parallelRows(n, w, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := dst[r*w : (r+1)*w]
			switch {
			case !relu:
				addTo(row, row, b[:w])
			case is32:
				row32 := d32[r*w : (r+1)*w]
				kernels.AddReLU32s(row32, row32, any(b).([]float32)[:w])
			default:
				for j, v := range b[:w] {
					row[j] = max(row[j]+v, 0)
				}
			}
		}
	})
}

// reluGrad zeroes d[j] wherever the ReLU output h[j] is zero (h ≥ 0, its
// zeros +0 as addBiasReLU writes them). The float32 form selects with a
// bit mask rather than a branch, for addBiasReLU's reason.
func reluGrad[T float32 | float64](d, h []T) {
	if d32, ok := any(d).([]float32); ok {
		kernels.ReLUGrad32s(d32, any(h).([]float32))
		return
	}
	for j, v := range h[:len(d)] {
		if v <= 0 {
			d[j] = 0
		}
	}
}

// transformRows applies the transform tr to w [N, half] with the raw
// parameters o [N·half, np] and writes out [N, half+1]: u, then the row's
// Σ log du/dw; rows are split over the cores.
func transformRows[T float32 | float64](tr model.Transform, out, o, w []T, N, half int) {
	np := tr.NumParams()
	parallelRows(N, half, func(lo, hi int) {
		if o32, ok := any(o).([]float32); ok && tr == model.NLSq && half <= nlsqChunk {
			nlsqForwardRows32(any(out).([]float32), o32, any(w).([]float32), half, lo, hi)
			return
		}
		for r := lo; r < hi; r++ {
			var ld float64
			for i := range half {
				u, l := transformForward(tr, o[(r*half+i)*np:][:np], float64(w[r*half+i]))
				out[r*(half+1)+i] = T(u)
				ld += l
			}
			out[r*(half+1)+half] = T(ld)
		}
	})
}

// transformForward returns u(w) and log du/dw for the raw parameters o of
// one scalar (nfbo_reference.md a.4; graph.go's transform is the unfused
// form). The arithmetic is float64; the exponentials, tanh and log are
// float32 (kernels.Exp32, Tanh32, Log32) in the float32 graph, whose values are
// float32 anyway, and the math package's in the float64 one. They were
// a tenth of a small-preset training step in float64; the derivative's
// log loses at most a factor 31 to cancellation (u′ ≥ (1 − 0.968)·b), so
// float32 keeps it to a few parts in a million.
func transformForward[T float32 | float64](tr model.Transform, o []T, w float64) (u, ld float64) {
	f32 := unsafe.Sizeof(o[0]) == 4 // a constant of each instantiation
	if tr == model.Affine {
		e := expOf(f32, 0.5*float64(o[1]))
		return float64(o[0]) + e*w, 0.5 * float64(o[1])
	}
	e1, e3, eE, t2 := nlsqArgs(o)
	u, D := nlsqForward(float64(o[0]), expOf(f32, e1), expOf(f32, e3), tanhOf(f32, t2), expOf(f32, eE), float64(o[4]), w)
	return u, logOf(f32, D)
}

// nlsqArgs returns the arguments of NLSq's exponentials and tanh for the
// raw parameters o: 0.4·o1 (of b), 0.4·o3 (of d), logA + 0.4·o1 − 0.4·o3
// (of E) and 0.3·o2 (of th).
func nlsqArgs[T float32 | float64](o []T) (e1, e3, eE, t2 float64) {
	const r, rt = kernels.NLSqExpRate, kernels.NLSqTanhRate
	return r * float64(o[1]), r * float64(o[3]), kernels.NLSqLogA + r*float64(o[1]) - r*float64(o[3]), rt * float64(o[2])
}

// nlsqForward returns u(w) and u′(w) from o0, o4 and the values of NLSq's
// exponentials and tanh (see transformBackward for the names).
func nlsqForward(a, bb, dd, th, E, f, w float64) (u, D float64) {
	cc := th * E
	s := dd*w + f
	inv := 1 / (1 + s*s) // one division: they cost several times a product
	ci := cc * inv
	return a + bb*w + ci, bb - 2*ci*dd*s*inv
}

// transformBackward writes into do (len np) the gradient with respect to
// the raw parameters o of du·u(w) + dl·log u'(w), and returns the gradient
// with respect to w.
//
// For NLSq the derivatives are kernels.NLSqGrad's (its comment has them).
func transformBackward[T float32 | float64](tr model.Transform, do, o []T, w, du, dl float64) (dw float64) {
	f32 := unsafe.Sizeof(o[0]) == 4 // as in transformForward
	if tr == model.Affine {
		e := expOf(f32, 0.5*float64(o[1]))
		do[0] = T(du)
		do[1] = T(du*0.5*e*w + dl*0.5)
		return du * e
	}
	e1, e3, eE, t2 := nlsqArgs(o)
	return nlsqBackward(do, expOf(f32, e1), expOf(f32, e3), tanhOf(f32, t2), expOf(f32, eE), float64(o[4]), w, du, dl)
}

// nlsqBackward is transformBackward's NLSq from the values of its
// exponentials and tanh (kernels.NLSqGrad).
func nlsqBackward[T float32 | float64](do []T, bb, dd, th, E, f, w, du, dl float64) (dw float64) {
	d1, d2, d3, d4, dw := kernels.NLSqGrad(bb, dd, th, E, f, w, du, dl)
	do[0], do[1], do[2], do[3], do[4] = T(du), T(d1), T(d2), T(d3), T(d4)
	return dw
}

// transformGradRows is transformRows' gradient: from dOut [N, half+1], the
// gradient of its out, it writes the gradients dO [N·half, np] of the raw
// parameters o and dw [N, half] of w; rows are split over the cores.
func transformGradRows[T float32 | float64](tr model.Transform, dO, dw, o, w, dOut []T, N, half int) {
	np := tr.NumParams()
	parallelRows(N, half, func(lo, hi int) {
		if o32, ok := any(o).([]float32); ok && tr == model.NLSq && half <= nlsqChunk {
			nlsqBackwardRows32(any(dw).([]float32), any(dO).([]float32), o32, any(w).([]float32), any(dOut).([]float32), half, lo, hi)
			return
		}
		for r := lo; r < hi; r++ {
			dl := float64(dOut[r*(half+1)+half])
			for i := range half {
				k := r*half + i
				dw[k] = T(transformBackward(tr, dO[k*np:][:np], o[k*np:][:np], float64(w[k]), float64(dOut[r*(half+1)+i]), dl))
			}
		}
	})
}

// reluGradRows is reluGrad over the n rows of w of d and h, split over the
// cores.
func reluGradRows[T float32 | float64](d, h []T, n, w int) {
	parallelRows(n, w, func(lo, hi int) {
		reluGrad(d[lo*w:hi*w], h[lo*w:hi*w])
	})
}

// colSums sets dst [1, w] to the column sums of x [n, w]. The columns are
// split over the cores, each summed in row order, so the result does not
// depend on the split.
func colSums[T float32 | float64](dst, x []T, n, w int) {
	parallelRows(w, n, func(lo, hi int) {
		d := dst[lo:hi]
		clear(d)
		for r := range n {
			addTo(d, d, x[r*w+lo:r*w+hi])
		}
	})
}

// nlsqChunk is the number of scalars whose exponentials, tanh and log the
// batched float32 NLSq computes at a time (whole rows of them).
const nlsqChunk = 256

// nlsqChunk32 is rows [r0, r1) of a batched NLSq, scalars [k0, k0+n).
type nlsqChunk32 struct{ r0, r1, k0, n int }

// nlsqChunks yields rows [lo, hi) of half scalars each in chunks of whole
// rows of at most nlsqChunk scalars.
func nlsqChunks(half, lo, hi int) iter.Seq[nlsqChunk32] {
	return func(yield func(nlsqChunk32) bool) {
		rows := nlsqChunk / half
		for r0 := lo; r0 < hi; r0 += rows {
			r1 := min(r0+rows, hi)
			if !yield(nlsqChunk32{r0, r1, r0 * half, (r1 - r0) * half}) {
				return
			}
		}
	}
}

// nlsqValues32 sets ex [3n] to NLSq's b, d and E (in three runs of n)
// and th [n] to its tanh for the n scalars whose raw parameters o
// [n, 5] holds: kernels' float32 forms of transformForward's, over the
// whole chunk at once.
func nlsqValues32(ex, th, o []float32) {
	n := len(th)
	for j := range n {
		e1, e3, eE, t2 := nlsqArgs(o[j*5:][:5])
		ex[j], ex[n+j], ex[2*n+j], th[j] = float32(e1), float32(e3), float32(eE), float32(t2)
	}
	kernels.Exp32s(ex, ex)
	kernels.Tanh32s(th, th)
}

// nlsqForwardRows32 is forward's NLSq transform for rows [lo, hi) of the
// float32 graph (o [N·half, 5], w [N, half], out [N, half+1]), with the
// same values as transformForward's loop but its exponentials, tanh and
// log computed a chunk of rows at a time by kernels' slice forms, eight
// lanes at a time where the assembly runs; the algebra between stays in
// float64. half ≤ nlsqChunk.
func nlsqForwardRows32(out, o, w []float32, half, lo, hi int) {
	var ex [3 * nlsqChunk]float32 // b, d and E of each scalar, in three runs
	var th, lg [nlsqChunk]float32
	for c := range nlsqChunks(half, lo, hi) {
		r0, r1, k0, n := c.r0, c.r1, c.k0, c.n
		nlsqValues32(ex[:3*n], th[:n], o[k0*5:])
		for j := range n {
			k := k0 + j
			r, i := k/half, k%half
			u, D := nlsqForward(float64(o[k*5]), float64(ex[j]), float64(ex[n+j]), float64(th[j]), float64(ex[2*n+j]), float64(o[k*5+4]), float64(w[k]))
			out[r*(half+1)+i] = float32(u)
			lg[j] = float32(D)
		}
		kernels.Log32s(lg[:n], lg[:n])
		for r := r0; r < r1; r++ {
			var ld float64
			for _, l := range lg[(r-r0)*half : (r-r0+1)*half] {
				ld += float64(l)
			}
			out[r*(half+1)+half] = float32(ld)
		}
	}
}

// nlsqBackwardRows32 is backward's NLSq transform for rows [lo, hi) of the
// float32 graph, as nlsqForwardRows32 is forward's: it writes dw [N, half]
// and do [N·half, 5] from dOut [N, half+1].
func nlsqBackwardRows32(dw, do, o, w, dOut []float32, half, lo, hi int) {
	// The runs kernels.NLSqGrad32s reads (b, d, E, th, f, w, du, dl) and
	// writes (do1..do4, dw).
	var in [8 * nlsqChunk]float32
	var out [5 * nlsqChunk]float32
	for c := range nlsqChunks(half, lo, hi) {
		k0, n := c.k0, c.n
		nlsqValues32(in[:3*n], in[3*n:4*n], o[k0*5:])
		f, wk, du, dl := in[4*n:5*n], in[5*n:6*n], in[6*n:7*n], in[7*n:8*n]
		copy(wk, w[k0:k0+n])
		for j := range n {
			k := k0 + j
			r, i := k/half, k%half
			f[j], du[j], dl[j] = o[k*5+4], dOut[r*(half+1)+i], dOut[r*(half+1)+half]
		}
		kernels.NLSqGrad32s(out[:5*n], in[:8*n], n)
		for j := range n {
			d := do[(k0+j)*5:][:5]
			d[0], d[1], d[2], d[3], d[4] = du[j], out[j], out[n+j], out[2*n+j], out[3*n+j]
		}
		copy(dw[k0:k0+n], out[4*n:5*n])
	}
}

// gatherRows sets row r of out [n, W] to the sum of the k rows
// idx[k·r .. k·r+k) of table (rows of W), in that order, an index −1
// adding nothing (a zero row when all are −1); rows are split over the
// cores. It is the embedding lookup (k = 1) and the positional gather
// (k = 2) of the CPU Device (and of the tests' graph ops).
func gatherRows[T float32 | float64](out, table []T, idx []int32, n, k, W int) {
	parallelRows(n, k*W, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst := out[r*W : (r+1)*W]
			first := true
			for _, j := range idx[k*r : k*r+k] {
				if j < 0 {
					continue
				}
				src := table[int(j)*W:][:W]
				if first {
					copy(dst, src)
				} else {
					addTo(dst, dst, src)
				}
				first = false
			}
			if first {
				clear(dst)
			}
		}
	})
}

// scatterAddRows adds row r of src [n, W] to each of the rows
// idx[k·r .. k·r+k) of dst (rows of W), skipping −1: gatherRows's
// gradient. Rows of src land on shared rows of dst, so the cores split the
// columns; each entry sums in row order whatever the split.
func scatterAddRows[T float32 | float64](dst, src []T, idx []int32, n, k, W int) {
	parallelRows(W, k*n, func(lo, hi int) {
		for r := range n {
			s := src[r*W+lo : r*W+hi]
			for _, j := range idx[k*r : k*r+k] {
				if j >= 0 {
					d := dst[int(j)*W+lo:][:hi-lo]
					addTo(d, d, s)
				}
			}
		}
	})
}

// copyCols copies, for n rows, columns [srcOff, srcOff+w) of src (rows of
// srcW) to columns [dstOff, dstOff+w) of dst (rows of dstW), or adds them
// to dst's when acc is set: the block copies of the CPU Device (and of the
// tests' fused graph).
func copyCols[T float32 | float64](dst []T, dstW, dstOff int, src []T, srcW, srcOff, n, w int, acc bool) {
	for r := range n {
		d, s := dst[r*dstW+dstOff:][:w], src[r*srcW+srcOff:][:w]
		if acc {
			addTo(d, d, s)
		} else {
			copy(d, s)
		}
	}
}

// mulRows sets dst = x⊙m for n rows of w, rows split over the cores: a
// dropout mask's application (dst may be x).
func mulRows[T float32 | float64](dst, x, m []T, n, w int) {
	parallelRows(n, w, func(lo, hi int) {
		mulTo(dst[lo*w:hi*w], x[lo*w:hi*w], m[lo*w:hi*w])
	})
}
