package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// blockOp copies a block of a matrix: x [R, C] → x[r0:r1, c0:c1] as a
// contiguous [r1−r0, c1−c0] matrix. It stands for gorgonia's slice in the
// fused graph (the coupling's column halves, the LSTM's input rows), whose
// forward pass copies through a generic iterator and whose gradient adds
// into a fresh zero matrix the same way, element by element; here both are
// row copies into buffers reused from run to run. The elementary graph keeps
// gorgonia's slices, the oracle the fused graph is checked against.
type blockOp[T float32 | float64] struct {
	name           string
	R, C           int
	r0, r1, c0, c1 int
	out            *[]T // the result, reused from run to run (every entry written)
}

func newBlockOp[T float32 | float64](name string, R, C, r0, r1, c0, c1 int) blockOp[T] {
	return blockOp[T]{name: name, R: R, C: C, r0: r0, r1: r1, c0: c0, c1: c1, out: new([]T)}
}

func (op blockOp[T]) rows() int { return op.r1 - op.r0 }
func (op blockOp[T]) cols() int { return op.c1 - op.c0 }

func (op blockOp[T]) Arity() int { return 1 }
func (op blockOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op blockOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.rows(), op.cols()}, nil
}
func (op blockOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 1 {
		return nil, fmt.Errorf("train: block %s: %d inputs, want 1", op.name, len(v))
	}
	x := dataOf[T](v[0])
	if len(x) != op.R*op.C {
		return nil, fmt.Errorf("train: block %s: input of %d entries, want %d×%d", op.name, len(x), op.R, op.C)
	}
	w := op.cols()
	out := resize(op.out, op.rows()*w)
	copyCols(out, w, 0, x[op.r0*op.C:], op.C, op.c0, op.rows(), w, false)
	return newDense(out, op.rows(), w), nil
}
func (op blockOp[T]) ReturnsPtr() bool     { return false }
func (op blockOp[T]) CallsExtern() bool    { return false }
func (op blockOp[T]) OverwritesInput() int { return -1 }
func (op blockOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "block(%s,%d,%d,%d:%d,%d:%d)", op.name, op.R, op.C, op.r0, op.r1, op.c0, op.c1)
}
func (op blockOp[T]) Hashcode() uint32   { return hashOf(op) }
func (op blockOp[T]) String() string     { return "Block(" + op.name + ")" }
func (op blockOp[T]) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns dx: zero but for the block, which is dOut.
func (op blockOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(blockGradOp[T]{op: op, out: new([]T)}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

// blockGradOp is blockOp's gradient: dOut [r1−r0, c1−c0] → [R, C], zero
// outside the block.
type blockGradOp[T float32 | float64] struct {
	op  blockOp[T]
	out *[]T
}

func (g blockGradOp[T]) Arity() int { return 1 }
func (g blockGradOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (g blockGradOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{g.op.R, g.op.C}, nil
}
func (g blockGradOp[T]) Do(v ...G.Value) (G.Value, error) {
	op := g.op
	if len(v) != 1 {
		return nil, fmt.Errorf("train: block %s gradient: %d inputs, want 1", op.name, len(v))
	}
	d := dataOf[T](v[0])
	w := op.cols()
	if len(d) != op.rows()*w {
		return nil, fmt.Errorf("train: block %s gradient: input of %d entries, want %d×%d", op.name, len(d), op.rows(), w)
	}
	out := resize(g.out, op.R*op.C)
	clear(out)
	copyCols(out[op.r0*op.C:], op.C, op.c0, d, w, 0, op.rows(), w, false)
	return newDense(out, op.R, op.C), nil
}
func (g blockGradOp[T]) ReturnsPtr() bool      { return false }
func (g blockGradOp[T]) CallsExtern() bool     { return false }
func (g blockGradOp[T]) OverwritesInput() int  { return -1 }
func (g blockGradOp[T]) WriteHash(h hash.Hash) { fmt.Fprint(h, "grad:"); g.op.WriteHash(h) }
func (g blockGradOp[T]) Hashcode() uint32      { return hashOf(g) }
func (g blockGradOp[T]) String() string        { return "BlockGrad(" + g.op.name + ")" }

// block adds x[r0:r1, c0:c1] of the matrix x as a blockOp; name is unique
// in the graph.
func (b *builder) block(name string, x *G.Node, r0, r1, c0, c1 int) *G.Node {
	if b.err != nil {
		return nil
	}
	R, C := x.Shape()[0], x.Shape()[1]
	if r0 < 0 || r1 > R || r0 >= r1 || c0 < 0 || c1 > C || c0 >= c1 {
		b.fail("block", fmt.Errorf("%s: [%d:%d, %d:%d] of a %d×%d matrix", name, r0, r1, c0, c1, R, C))
		return nil
	}
	var op G.Op
	if b.dt == tensor.Float32 {
		op = newBlockOp[float32](name, R, C, r0, r1, c0, c1)
	} else {
		op = newBlockOp[float64](name, R, C, r0, r1, c0, c1)
	}
	return b.do("block", func() (*G.Node, error) { return G.ApplyOp(op, x) })
}

// joinOp places two matrices side by side: (x [R, a], y [R, b]) → [x y]
// [R, a+b]. It stands for gorgonia's concatenation along columns in the
// fused graph, whose gradient is two strided slices; here it is two
// blockOps.
type joinOp[T float32 | float64] struct {
	name    string
	R, a, b int
	out     *[]T // the result, reused from run to run (every entry written)
}

func (op joinOp[T]) Arity() int { return 2 }
func (op joinOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op joinOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.R, op.a + op.b}, nil
}
func (op joinOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 2 {
		return nil, fmt.Errorf("train: join %s: %d inputs, want 2", op.name, len(v))
	}
	x, y := dataOf[T](v[0]), dataOf[T](v[1])
	if len(x) != op.R*op.a || len(y) != op.R*op.b {
		return nil, fmt.Errorf("train: join %s: inputs of %d and %d entries, want %d×%d and %d×%d", op.name, len(x), len(y), op.R, op.a, op.R, op.b)
	}
	w := op.a + op.b
	out := resize(op.out, op.R*w)
	copyCols(out, w, 0, x, op.a, 0, op.R, op.a, false)
	copyCols(out, w, op.a, y, op.b, 0, op.R, op.b, false)
	return newDense(out, op.R, w), nil
}
func (op joinOp[T]) ReturnsPtr() bool     { return false }
func (op joinOp[T]) CallsExtern() bool    { return false }
func (op joinOp[T]) OverwritesInput() int { return -1 }
func (op joinOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "join(%s,%d,%d,%d)", op.name, op.R, op.a, op.b)
}
func (op joinOp[T]) Hashcode() uint32   { return hashOf(op) }
func (op joinOp[T]) String() string     { return "Join(" + op.name + ")" }
func (op joinOp[T]) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff returns the gradient's two column blocks.
func (op joinOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	w := op.a + op.b
	dx, err := G.ApplyOp(newBlockOp[T](op.name+".dx", op.R, w, 0, op.R, 0, op.a), grad)
	if err != nil {
		return nil, err
	}
	dy, err := G.ApplyOp(newBlockOp[T](op.name+".dy", op.R, w, 0, op.R, op.a, w), grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dy}, nil
}

// join adds [x y] of the matrices x [R, a] and y [R, b] as a joinOp; name
// is unique in the graph.
func (b *builder) join(name string, x, y *G.Node) *G.Node {
	if b.err != nil {
		return nil
	}
	R, a, c := x.Shape()[0], x.Shape()[1], y.Shape()[1]
	if y.Shape()[0] != R {
		b.fail("join", fmt.Errorf("%s: %d and %d rows", name, R, y.Shape()[0]))
		return nil
	}
	var op G.Op
	if b.dt == tensor.Float32 {
		op = joinOp[float32]{name: name, R: R, a: a, b: c, out: new([]float32)}
	} else {
		op = joinOp[float64]{name: name, R: R, a: a, b: c, out: new([]float64)}
	}
	return b.do("join", func() (*G.Node, error) { return G.ApplyOp(op, x, y) })
}
