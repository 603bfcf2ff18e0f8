package train

import (
	"fmt"
	"hash"
	"iter"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file is one affine coupling layer of the flow (its conditioning net
// and its element-wise transform) as a gorgonia op with a hand-written
// backward pass, an alternative to building it from ~40 elementary nodes
// (graphOpts.couplingOp). Unfused, gorgonia allocates every intermediate of
// the NLSq map ([N, half] each) on every step and runs each on one core;
// here the forward pass keeps what the backward pass needs in buffers owned
// by the op and reused across steps.
//
// The op maps (cond [N, half], ctx [N, H], w [N, half], W0c [half, U],
// W0x [H, U], b0 [1, U], W1, b1, …, WD, bD) to [N, half+1]: columns 0..half−1
// are u, the transformed w, and column half is Σ_i log|du_i/dw_i| of the row.
// The net is h0 = ReLU(cond·W0c + ctx·W0x + b0), h_i = ReLU(h_{i−1}·W_i + b_i)
// and o = h_{D−1}·WD + bD, o [N, half·np] read as [N, half, np].

// couplingSeq holds one coupling's sizes and the state its forward op saves
// for its backward op (each graph owns its own, and runs forward before
// backward).
type couplingSeq[T float32 | float64] struct {
	N, Half, H int
	widths     []int // output width of each dense layer; the last is Half·np
	tr         model.Transform
	name       string

	hs [][]T // [layer][N·width]: post-ReLU outputs of the hidden layers, then o
	ds [][]T // [layer][N·width]: gradients of the layers' outputs, scratch of backward

	// The op's results, reused from run to run (every entry is written
	// anew by each run, so gorgonia may sum gradients into them in place):
	// out [N, Half+1], dcond [N, Half], and the gradients of the last
	// backward pass in input order from ctx on (dctx, dw, dW0c, dW0x, db0,
	// dW1, db1, …), read by couplingPickOp.
	out, dcond []T
	grads      [][]T
}

func newCouplingSeq[T float32 | float64](name string, N, half, H int, widths []int, tr model.Transform) *couplingSeq[T] {
	q := &couplingSeq[T]{N: N, Half: half, H: H, widths: widths, tr: tr, name: name,
		grads: make([][]T, 2*len(widths)+3)}
	for _, w := range widths {
		q.hs = append(q.hs, make([]T, N*w))
		q.ds = append(q.ds, make([]T, N*w))
	}
	return q
}

// layers returns the number of dense layers.
func (q *couplingSeq[T]) layers() int { return len(q.widths) }

// arity is the number of inputs: cond, ctx, w, W0c, W0x, b0 and a weight
// and a bias per later layer.
func (q *couplingSeq[T]) arity() int { return 6 + 2*(q.layers()-1) }

// inShape returns the shape of input i.
func (q *couplingSeq[T]) inShape(i int) tensor.Shape {
	switch i {
	case 0, 2:
		return tensor.Shape{q.N, q.Half}
	case 1:
		return tensor.Shape{q.N, q.H}
	case 3:
		return tensor.Shape{q.Half, q.widths[0]}
	case 4:
		return tensor.Shape{q.H, q.widths[0]}
	case 5:
		return tensor.Shape{1, q.widths[0]}
	}
	l := (i-6)/2 + 1
	if (i-6)%2 == 0 {
		return tensor.Shape{q.widths[l-1], q.widths[l]}
	}
	return tensor.Shape{1, q.widths[l]}
}

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

// forward runs the net and the transform and returns [N, Half+1].
func (q *couplingSeq[T]) forward(in [][]T) []T {
	N, half := q.N, q.Half
	cond, ctx, w := in[0], in[1], in[2]
	U := q.widths[0]
	h := q.hs[0]
	gemm(false, false, 1, cond, N, half, in[3], half, U, 0, h)
	gemm(false, false, 1, ctx, N, q.H, in[4], q.H, U, 1, h)
	addBiasReLU(h, in[5], N, U, true)
	for l := 1; l < q.layers(); l++ {
		prev, width := q.widths[l-1], q.widths[l]
		h = q.hs[l]
		gemm(false, false, 1, q.hs[l-1], N, prev, in[6+2*(l-1)], prev, width, 0, h)
		addBiasReLU(h, in[7+2*(l-1)], N, width, l < q.layers()-1)
	}
	out := resize(&q.out, N*(half+1))
	transformRows(q.tr, out, h, w, N, half)
	return out
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

// backward returns dcond [N, Half] for the output gradient dOut [N, Half+1]
// and stores the other inputs' gradients in q.grads.
func (q *couplingSeq[T]) backward(in [][]T, dOut []T) []T {
	N, half := q.N, q.Half
	cond, ctx, w := in[0], in[1], in[2]
	L := q.layers()
	grads := q.grads // dctx, dw, dW0c, dW0x, db0, then dW_l, db_l
	dw := resize(&grads[1], N*half)
	dh := q.ds[L-1] // gradient of the current layer's output (every entry written)
	transformGradRows(q.tr, dh, dw, q.hs[L-1], w, dOut, N, half)
	for l := L - 1; l >= 1; l-- {
		prev, width := q.widths[l-1], q.widths[l]
		gemm(true, false, 1, q.hs[l-1], N, prev, dh, N, width, 0, resize(&grads[5+2*(l-1)], prev*width))
		colSums(resize(&grads[6+2*(l-1)], width), dh, N, width)
		dprev := q.ds[l-1]
		gemm(false, true, 1, dh, N, width, in[6+2*(l-1)], prev, width, 0, dprev)
		// Every layer below the output one is ReLU'd: h = 0 where it cut.
		reluGradRows(dprev, q.hs[l-1], N, prev)
		dh = dprev
	}
	U := q.widths[0]
	gemm(true, false, 1, cond, N, half, dh, N, U, 0, resize(&grads[2], half*U))
	gemm(true, false, 1, ctx, N, q.H, dh, N, U, 0, resize(&grads[3], q.H*U))
	colSums(resize(&grads[4], U), dh, N, U)
	gemm(false, true, 1, dh, N, U, in[4], q.H, U, 0, resize(&grads[0], N*q.H))
	dcond := resize(&q.dcond, N*half)
	gemm(false, true, 1, dh, N, U, in[3], half, U, 0, dcond)
	return dcond
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

func values[T float32 | float64](v []G.Value) [][]T {
	out := make([][]T, len(v))
	for i, x := range v {
		out[i] = dataOf[T](x)
	}
	return out
}

// couplingFwdOp: see the file comment.
type couplingFwdOp[T float32 | float64] struct{ q *couplingSeq[T] }

func (op couplingFwdOp[T]) Arity() int { return op.q.arity() }
func (op couplingFwdOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, op.q.arity()+1)
	for i := range ts {
		ts[i] = a
	}
	return hm.NewFnType(ts...)
}
func (op couplingFwdOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.q.N, op.q.Half + 1}, nil
}
func (op couplingFwdOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != op.q.arity() {
		return nil, fmt.Errorf("train: coupling %s: %d inputs, want %d", op.q.name, len(v), op.q.arity())
	}
	return newDense(op.q.forward(values[T](v)), op.q.N, op.q.Half+1), nil
}
func (op couplingFwdOp[T]) ReturnsPtr() bool      { return false }
func (op couplingFwdOp[T]) CallsExtern() bool     { return false }
func (op couplingFwdOp[T]) OverwritesInput() int  { return -1 }
func (op couplingFwdOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "coupling.fwd(%s)", op.q.name) }
func (op couplingFwdOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op couplingFwdOp[T]) String() string        { return "Coupling(" + op.q.name + ")" }
func (op couplingFwdOp[T]) DiffWRT(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// SymDiff returns a backward node, which computes every gradient and
// returns dcond, and a node per other input that reads its gradient.
func (op couplingFwdOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	args := append(append(G.Nodes{}, in...), grad)
	bw, err := G.ApplyOp(couplingBwdOp[T](op), args...)
	if err != nil {
		return nil, err
	}
	res := G.Nodes{bw}
	for which := 1; which < len(in); which++ {
		n, err := G.ApplyOp(couplingPickOp[T]{q: op.q, which: which}, bw)
		if err != nil {
			return nil, err
		}
		res = append(res, n)
	}
	return res, nil
}

// couplingBwdOp: (the forward op's inputs, dOut) → dcond [N, Half]; stores
// the other gradients for couplingPickOp.
type couplingBwdOp[T float32 | float64] struct{ q *couplingSeq[T] }

func (op couplingBwdOp[T]) Arity() int { return op.q.arity() + 1 }
func (op couplingBwdOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, op.q.arity()+2)
	for i := range ts {
		ts[i] = a
	}
	return hm.NewFnType(ts...)
}
func (op couplingBwdOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.q.N, op.q.Half}, nil
}
func (op couplingBwdOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != op.q.arity()+1 {
		return nil, fmt.Errorf("train: coupling %s backward: %d inputs, want %d", op.q.name, len(v), op.q.arity()+1)
	}
	vals := values[T](v)
	n := len(vals) - 1
	return newDense(op.q.backward(vals[:n], vals[n]), op.q.N, op.q.Half), nil
}
func (op couplingBwdOp[T]) ReturnsPtr() bool      { return false }
func (op couplingBwdOp[T]) CallsExtern() bool     { return false }
func (op couplingBwdOp[T]) OverwritesInput() int  { return -1 }
func (op couplingBwdOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "coupling.bwd(%s)", op.q.name) }
func (op couplingBwdOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op couplingBwdOp[T]) String() string        { return "CouplingGrad(" + op.q.name + ")" }

// couplingPickOp returns the gradient of input which (≥ 1) stored by the
// backward op whose node is its input (which also orders it after that op).
type couplingPickOp[T float32 | float64] struct {
	q     *couplingSeq[T]
	which int
}

func (op couplingPickOp[T]) Arity() int { return 1 }
func (op couplingPickOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op couplingPickOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.q.inShape(op.which), nil
}
func (op couplingPickOp[T]) Do(...G.Value) (G.Value, error) {
	// No copy: gorgonia may sum gradients into the slice it is handed,
	// which backward writes anew on every run.
	return newDense(op.q.grads[op.which-1], op.q.inShape(op.which)...), nil
}
func (op couplingPickOp[T]) ReturnsPtr() bool     { return false }
func (op couplingPickOp[T]) CallsExtern() bool    { return false }
func (op couplingPickOp[T]) OverwritesInput() int { return -1 }
func (op couplingPickOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "coupling.pick%d(%s)", op.which, op.q.name)
}
func (op couplingPickOp[T]) Hashcode() uint32 { return hashOf(op) }
func (op couplingPickOp[T]) String() string {
	return fmt.Sprintf("CouplingGrad%d(%s)", op.which, op.q.name)
}

// coupling adds one coupling as a single op and returns u [N, half] and the
// row sums of log|du/dw| [N]. params are W0c, W0x, b0, W1, b1, ….
func (b *builder) coupling(name string, tr model.Transform, cond, ctx, w *G.Node, params []*G.Node) (u, ldRow *G.Node) {
	if b.err != nil {
		return nil, nil
	}
	N, half, H := cond.Shape()[0], cond.Shape()[1], ctx.Shape()[1]
	widths := []int{params[0].Shape()[1]}
	for i := 3; i < len(params); i += 2 {
		widths = append(widths, params[i].Shape()[1])
	}
	var op G.Op
	if b.dt == tensor.Float32 {
		op = couplingFwdOp[float32]{newCouplingSeq[float32](name, N, half, H, widths, tr)}
	} else {
		op = couplingFwdOp[float64]{newCouplingSeq[float64](name, N, half, H, widths, tr)}
	}
	args := append(G.Nodes{cond, ctx, w}, params...)
	out := b.do("coupling", func() (*G.Node, error) { return G.ApplyOp(op, args...) })
	// Block copies: gorgonia's strided slices iterate entry by entry.
	u = b.block(name+".u", out, 0, N, 0, half)
	ldRow = b.reshape(b.block(name+".ld", out, 0, N, half, half+1), N)
	return u, ldRow
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
