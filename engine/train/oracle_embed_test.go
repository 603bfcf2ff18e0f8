package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file is the embedding lookup of the fused graph as a gather: row r
// of e_x is row tok[r] of the normalised embeddings, row r of e_j row
// neg[r] (zero where the row has no negative). The elementary graph
// multiplies one-hot [N, V] inputs by the embeddings instead, which is the
// same lookup (a one-hot row picks a row exactly) and the gather's oracle;
// as products they cost a [N, V] input built, converted and multiplied on
// one core for each lookup and each of their gradients.

// rowIndex holds the embedding row each input row of a batch reads (−1:
// none, a zero row). The gather ops read it when they run; the trainer
// sets it before each run.
type rowIndex struct {
	rows []int32 // [N]
}

// rowGatherOp: (table [V, W]) → [N, W], row r = table[rows[r]] or zeros.
type rowGatherOp[T float32 | float64] struct {
	idx  *rowIndex
	W    int
	name string
	out  *[]T // the result, reused from run to run (every entry written)
}

func (op rowGatherOp[T]) Arity() int { return 1 }
func (op rowGatherOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op rowGatherOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{len(op.idx.rows), op.W}, nil
}
func (op rowGatherOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 1 {
		return nil, fmt.Errorf("train: embedding lookup %s: %d inputs, want 1", op.name, len(v))
	}
	table := dataOf[T](v[0])
	W, V := op.W, len(table)/op.W
	for r, j := range op.idx.rows {
		if int(j) >= V {
			return nil, fmt.Errorf("train: embedding lookup %s: row %d reads token %d of %d", op.name, r, j, V)
		}
	}
	n := len(op.idx.rows)
	out := resize(op.out, n*W)
	gatherRows(out, table, op.idx.rows, n, 1, W)
	return newDense(out, n, W), nil
}
func (op rowGatherOp[T]) ReturnsPtr() bool      { return false }
func (op rowGatherOp[T]) CallsExtern() bool     { return false }
func (op rowGatherOp[T]) OverwritesInput() int  { return -1 }
func (op rowGatherOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "rows.gather(%s)", op.name) }
func (op rowGatherOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op rowGatherOp[T]) String() string        { return "RowGather(" + op.name + ")" }
func (op rowGatherOp[T]) DiffWRT(int) []bool    { return []bool{true} }

// SymDiff returns the gradient rows summed back into the table's shape.
func (op rowGatherOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	n, err := G.ApplyOp(rowScatterOp[T]{g: op, V: in[0].Shape()[0], out: new([]T)}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{n}, nil
}

// rowScatterOp: the gradient dOut [N, W] of a rowGatherOp → dtable [V, W],
// each row the sum, in row order, of the gradient rows that read it.
type rowScatterOp[T float32 | float64] struct {
	g   rowGatherOp[T]
	V   int
	out *[]T // the result, reused from run to run (cleared first)
}

func (op rowScatterOp[T]) Arity() int { return 1 }
func (op rowScatterOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op rowScatterOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.V, op.g.W}, nil
}
func (op rowScatterOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 1 {
		return nil, fmt.Errorf("train: embedding lookup %s backward: %d inputs, want 1", op.g.name, len(v))
	}
	d := dataOf[T](v[0])
	W := op.g.W
	out := resize(op.out, op.V*W)
	clear(out)
	scatterAddRows(out, d, op.g.idx.rows, len(op.g.idx.rows), 1, W)
	return newDense(out, op.V, W), nil
}
func (op rowScatterOp[T]) ReturnsPtr() bool      { return false }
func (op rowScatterOp[T]) CallsExtern() bool     { return false }
func (op rowScatterOp[T]) OverwritesInput() int  { return -1 }
func (op rowScatterOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "rows.scatter(%s)", op.g.name) }
func (op rowScatterOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op rowScatterOp[T]) String() string        { return "RowGatherGrad(" + op.g.name + ")" }

// gatherRows adds the lookup of idx's rows of table [V, W] to the graph.
func (b *builder) gatherRows(name string, idx *rowIndex, table *G.Node) *G.Node {
	W := table.Shape()[1]
	var op G.Op
	if b.dt == tensor.Float32 {
		op = rowGatherOp[float32]{idx: idx, W: W, name: name, out: new([]float32)}
	} else {
		op = rowGatherOp[float64]{idx: idx, W: W, name: name, out: new([]float64)}
	}
	return b.do("embedding lookup", func() (*G.Node, error) { return G.ApplyOp(op, table) })
}

// setOneHot writes the one-hot rows of rows (−1: a zero row) into f
// [len(rows), V].
func (f *feed) setOneHot(rows []int32) {
	switch d := f.val.Data().(type) {
	case []float32:
		setOneHot(d, rows)
	case []float64:
		setOneHot(d, rows)
	}
}

func setOneHot[T float32 | float64](dst []T, rows []int32) {
	clear(dst)
	V := len(dst) / len(rows)
	for r, j := range rows {
		if j >= 0 {
			dst[r*V+int(j)] = 1
		}
	}
}
