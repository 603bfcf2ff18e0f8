package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/nfbo/nfbo/engine/step"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file is the positional part of the first LSTM layer's gates as a
// gather: the positional code c = [onehot(t) ; onehot(MaxT + T_b − 1 − t)]
// has two ones, so c·Wpos is the sum of two rows of Wpos. Each sequence b
// of a batch has its own padded length T_b (Options.RandomPad), so the rows
// differ per sequence, and a one-hot product [S·B, P]·[P, 4H] would cost more
// than the LSTM itself.

// posIndex holds the padded length of every sequence of the batch being run
// and the Wpos rows each input row of layer 0 adds. The graph's ops read it
// when they run; the trainer sets it before each run (setLengths).
type posIndex struct {
	S, B, MaxT int
	lens       []int   // [B] padded length T_b of each sequence
	rows       []int32 // [S·B·2]: the two Wpos rows of input row r = s·B + b
}

func newPosIndex(S, B, maxT int) *posIndex {
	q := &posIndex{S: S, B: B, MaxT: maxT, lens: make([]int, B), rows: make([]int32, 2*S*B)}
	full := make([]int, B)
	for b := range full {
		full[b] = S + 1
	}
	q.setLengths(full)
	return q
}

// setLengths records the padded length of each sequence (len(lens) = B,
// 2 ≤ lens[b] ≤ S+1). Step s of sequence b reads code c_{s+1}; steps past
// the sequence's end, whose rows carry no loss, read the code of distance 0.
func (q *posIndex) setLengths(lens []int) {
	copy(q.lens, lens)
	step.PosRows(q.rows, q.lens, q.S, q.MaxT)
}

// code0 writes the code c_0 of each sequence into dst [B, P] (zeroed first).
func (q *posIndex) code0(dst []float64) { step.PosCode0(dst, q.lens, q.MaxT) }

// posGatherOp: (Wpos [P, W], bias [1, W]) → [S·B, W], row r = Wpos[rows[2r]]
// + Wpos[rows[2r+1]] + bias, the sum in that order (as the one-hot product
// followed by the bias row computes it).
type posGatherOp[T float32 | float64] struct {
	q    *posIndex
	W    int
	name string
	out  *[]T // the result, reused from run to run (every entry written)
}

func (op posGatherOp[T]) Arity() int { return 2 }
func (op posGatherOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op posGatherOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.q.S * op.q.B, op.W}, nil
}
func (op posGatherOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 2 {
		return nil, fmt.Errorf("train: positional gates %s: %d inputs, want 2", op.name, len(v))
	}
	wpos, bias := dataOf[T](v[0]), dataOf[T](v[1])
	W := op.W
	n := op.q.S * op.q.B
	out := resize(op.out, n*W)
	// (a + c) + bias, as the one-hot product and the bias row sum.
	gatherRows(out, wpos, op.q.rows, n, 2, W)
	addBiasReLU(out, bias, n, W, false)
	return newDense(out, n, W), nil
}
func (op posGatherOp[T]) ReturnsPtr() bool      { return false }
func (op posGatherOp[T]) CallsExtern() bool     { return false }
func (op posGatherOp[T]) OverwritesInput() int  { return -1 }
func (op posGatherOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "pos.gather(%s)", op.name) }
func (op posGatherOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op posGatherOp[T]) String() string        { return "PosGather(" + op.name + ")" }
func (op posGatherOp[T]) DiffWRT(int) []bool    { return []bool{true, true} }

// SymDiff returns dWpos (the gradient rows scattered back) and dbias (the
// gradient's column sums, read from dWpos: see posScatterOp).
func (op posGatherOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	P := in[0].Shape()[0]
	dW, err := G.ApplyOp(posScatterOp[T]{g: op, P: P, out: new([]T)}, grad)
	if err != nil {
		return nil, err
	}
	db, err := G.ApplyOp(posScatterOp[T]{g: op, P: P, which: 1, out: new([]T)}, dW)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dW, db}, nil
}

// posScatterOp: the gradient dOut [S·B, W] of a posGatherOp → dWpos [P, W]
// (which = 0), or that dWpos → dbias [1, W] (which = 1). Every input row
// adds to exactly one of the rows 1..S of dWpos (its first code row, s+1
// for step s; the second lies at MaxT or above), so dbias, the column sums
// of dOut, is the sum of those S rows: a pass over [S, W] instead of a
// second one over [S·B, W].
type posScatterOp[T float32 | float64] struct {
	g     posGatherOp[T]
	P     int
	which int
	out   *[]T // the result, reused from run to run (cleared first)
}

func (op posScatterOp[T]) Arity() int { return 1 }
func (op posScatterOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op posScatterOp[T]) shape() tensor.Shape {
	if op.which == 0 {
		return tensor.Shape{op.P, op.g.W}
	}
	return tensor.Shape{1, op.g.W}
}
func (op posScatterOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape(), nil }
func (op posScatterOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 1 {
		return nil, fmt.Errorf("train: positional gates %s backward: %d inputs, want 1", op.g.name, len(v))
	}
	d := dataOf[T](v[0])
	W := op.g.W
	q := op.g.q
	n := q.S * q.B
	if op.which == 1 {
		out := resize(op.out, W)
		colSums(out, d[W:(q.S+1)*W], q.S, W)
		return newDense(out, 1, W), nil
	}
	out := resize(op.out, op.P*W)
	clear(out)
	scatterAddRows(out, d, q.rows, n, 2, W)
	return newDense(out, op.P, W), nil
}
func (op posScatterOp[T]) ReturnsPtr() bool     { return false }
func (op posScatterOp[T]) CallsExtern() bool    { return false }
func (op posScatterOp[T]) OverwritesInput() int { return -1 }
func (op posScatterOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "pos.scatter%d(%s)", op.which, op.g.name)
}
func (op posScatterOp[T]) Hashcode() uint32 { return hashOf(op) }
func (op posScatterOp[T]) String() string {
	return fmt.Sprintf("PosGatherGrad%d(%s)", op.which, op.g.name)
}

// posGates adds block k's positional gates [S·B, W] of layer 0 to the graph.
func (b *builder) posGates(q *posIndex, k int, wpos, bias *G.Node) *G.Node {
	W := wpos.Shape()[1]
	name := fmt.Sprint(k)
	var op G.Op
	if b.dt == tensor.Float32 {
		op = posGatherOp[float32]{q: q, W: W, name: name, out: new([]float32)}
	} else {
		op = posGatherOp[float64]{q: q, W: W, name: name, out: new([]float64)}
	}
	return b.do("positional gates", func() (*G.Node, error) { return G.ApplyOp(op, wpos, bias) })
}
