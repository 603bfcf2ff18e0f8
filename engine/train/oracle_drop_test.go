package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// maskOp applies a fed dropout mask: (x [n, w], m [n, w]) → x ⊙ m. It is
// gorgonia's element-wise product without its costs: the result lives in a
// buffer reused from run to run, the rows are split over the cores, and the
// mask, an input fed each run, is not differentiated (gorgonia's product
// would also compute dOut ⊙ x for it on every step). Its gradient is the
// same op on (dOut, m).
type maskOp[T float32 | float64] struct {
	n, w int
	name string
	out  *[]T // the result, reused from run to run (every entry written)
}

func newMaskOp[T float32 | float64](name string, n, w int) maskOp[T] {
	return maskOp[T]{n: n, w: w, name: name, out: new([]T)}
}

func (op maskOp[T]) Arity() int { return 2 }
func (op maskOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op maskOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.w}, nil
}
func (op maskOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 2 {
		return nil, fmt.Errorf("train: dropout %s: %d inputs, want 2", op.name, len(v))
	}
	x, m := dataOf[T](v[0]), dataOf[T](v[1])
	if len(x) != op.n*op.w || len(m) != op.n*op.w {
		return nil, fmt.Errorf("train: dropout %s: inputs of %d and %d entries, want %d", op.name, len(x), len(m), op.n*op.w)
	}
	out := resize(op.out, op.n*op.w)
	mulRows(out, x, m, op.n, op.w)
	return newDense(out, op.n, op.w), nil
}
func (op maskOp[T]) ReturnsPtr() bool      { return false }
func (op maskOp[T]) CallsExtern() bool     { return false }
func (op maskOp[T]) OverwritesInput() int  { return -1 }
func (op maskOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "mask(%s)", op.name) }
func (op maskOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op maskOp[T]) String() string        { return "Mask(" + op.name + ")" }
func (op maskOp[T]) DiffWRT(int) []bool    { return []bool{true, false} }

// SymDiff returns dx = dOut ⊙ m, and nothing for the mask.
func (op maskOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(newMaskOp[T](op.name+".grad", op.n, op.w), grad, in[1])
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, nil}, nil
}

// dropout applies the fed mask m [n, w] to x [n, w]; name is unique in the
// graph.
func (b *builder) dropout(name string, x, m *G.Node) *G.Node {
	if b.err != nil {
		return nil
	}
	n, w := x.Shape()[0], x.Shape()[1]
	var op G.Op
	if b.dt == tensor.Float32 {
		op = newMaskOp[float32](name, n, w)
	} else {
		op = newMaskOp[float64](name, n, w)
	}
	return b.do("dropout", func() (*G.Node, error) { return G.ApplyOp(op, x, m) })
}
