package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
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
