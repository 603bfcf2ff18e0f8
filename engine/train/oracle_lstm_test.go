package train

import (
	"fmt"
	"hash"
	"hash/fnv"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/nfbo/nfbo/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file is a whole LSTM layer over S steps as three gorgonia ops, an
// alternative to unrolling it into per-step nodes (graphOpts.lstmOp).
// Unrolled, gorgonia keeps one weight-gradient partial per step (S copies of
// [H, 4H]) plus an add chain, and compiles tens of nodes per step; here the
// backward pass accumulates dW in one product over all steps, and the graph
// has three nodes per layer.
//
// Rows are step-major: row s·B + b is step s of sequence b.

// lstmSeq holds one layer's sizes and the state the forward op saves for the
// backward op. Each graph owns its own lstmSeq values and runs forward
// before backward, so the sharing is safe.
type lstmSeq[T float32 | float64] struct {
	S, B, In, H int
	// biasRows is the number of rows of the bias input: 1 (one [1, 4H] row
	// for every step), or S·B (layer 0, the positional part included: row
	// s·B + b for step s of sequence b).
	biasRows int
	// lead is the number of rows of h0 the output starts with: 0, or B for
	// the top layer, whose output is the flow's context [h0 ; h_1..h_S]
	// (saving the graph a concatenation and its gradient's slices).
	lead int
	name string // unique in the graph, for hashing and printing

	act []T // [S·B, 4H]: σ(i), σ(f), tanh(g), σ(o)
	c   []T // [S·B, H] cell states
	tc  []T // [S·B, H] tanh(c)

	// The op's results, reused from run to run: every entry is written
	// anew by each run, so gorgonia may sum gradients into them in place.
	out, dX                     []T // [(S+1)·B, H] h0 and the outputs, [S·B, In] input gradient
	dWih, dWhh, dBias, dh0, dc0 []T // from the last backward pass (dBias may be dG)

	cRun []T // [B, H] running cell state, scratch of forward
	dG   []T // [S·B, 4H] gate gradients, scratch of backward

	// whhP is Whh (forward) or Whhᵀ (backward) packed for the recurrent
	// products when packedRecurrent says so, repacked by every pass.
	whhP kernels.Packed
}

// packedRecurrent returns Whh [H, 4H], or with trans Whhᵀ, packed for
// kernels.MulPackedTo, or nil where the step products go to the BLAS: in
// float64, and where the packed micro-kernel has no assembly. A recurrent
// step multiplies 16-32 rows by the same Whh T−1 times in sequence; a BLAS
// packs Whh again on every call, which at these shapes costs about as much
// as the arithmetic (BENCHMARKS.md, "The recurrence on packed weights").
func (q *lstmSeq[T]) packedRecurrent(Whh []T, trans bool) *kernels.Packed {
	w, ok := any(Whh).([]float32)
	if !ok || !kernels.PackedAccelerated() {
		return nil
	}
	H, H4 := q.H, 4*q.H
	if trans {
		q.whhP.Pack(w, H4, H4, H, true)
	} else {
		q.whhP.Pack(w, H4, H, H4, false)
	}
	return &q.whhP
}

func newLSTMSeq[T float32 | float64](name string, S, B, in, H, biasRows, lead int) *lstmSeq[T] {
	return &lstmSeq[T]{S: S, B: B, In: in, H: H, biasRows: biasRows, lead: lead, name: name,
		act: make([]T, S*B*4*H), c: make([]T, S*B*H), tc: make([]T, S*B*H)}
}

// biasRow returns the bias of step s of sequence b.
func (q *lstmSeq[T]) biasRow(bias []T, s, b int) []T {
	H4 := 4 * q.H
	if q.biasRows == 1 {
		return bias[:H4]
	}
	r := s*q.B + b
	return bias[r*H4 : (r+1)*H4]
}

// resize returns *buf with length n, allocating only when its capacity is
// short: the fused ops' results and scratch live from run to run.
func resize[T float32 | float64](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

func dataOf[T float32 | float64](v G.Value) []T { return v.Data().([]T) }

func newDense[T float32 | float64](data []T, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithBacking(data), tensor.WithShape(shape...))
}

// outRows returns the number of rows of the layer's output, lead + S·B.
func (q *lstmSeq[T]) outRows() int { return q.lead + q.S*q.B }

// forward runs the layer: inputs X [S·B, In], Wih [In, 4H], Whh [H, 4H],
// bias [biasRows, 4H], h0 and c0 [B, H]; it returns the outputs
// [lead + S·B, H], the first lead rows h0.
func (q *lstmSeq[T]) forward(X, Wih, Whh, bias, h0, c0 []T) []T {
	S, B, H := q.S, q.B, q.H
	H4 := 4 * H
	gemm(false, false, 1, X, S*B, q.In, Wih, q.In, H4, 0, q.act)
	// q.out is [h0 ; h_1..h_S] whatever the lead: its first S·B rows are h
	// before each step, which backward's dWhh reads, and the result is its
	// last lead + S·B rows.
	buf := resize(&q.out, (S+1)*B*H)
	copy(buf, h0[:B*H])
	all, out := buf[(B-q.lead)*H:], buf[B*H:]
	c := resize(&q.cRun, B*H)
	copy(c, c0)
	// The sequences of the batch are independent, so each core runs the
	// whole recurrence for its own rows: no step waits for another core
	// (starting goroutines for every step cost more than a step's
	// parallel work on the 2-core VMs measured, BENCHMARKS.md).
	q32, is32 := any(q).(*lstmSeq[float32])
	pk := q.packedRecurrent(Whh, false)
	parallelRows(B, S*H, func(b0, b1 int) {
		for s := range S {
			hPrev := h0[b0*H : b1*H]
			if s > 0 {
				hPrev = out[((s-1)*B+b0)*H : ((s-1)*B+b1)*H]
			}
			g := q.act[(s*B+b0)*H4 : (s*B+b1)*H4]
			if pk != nil {
				kernels.MulPackedTo(any(g).([]float32), H4, any(hPrev).([]float32), H, b1-b0, pk, true)
			} else {
				gemmBlock(false, false, b1-b0, H4, H, 1, hPrev, H, Whh, H4, 1, g, H4)
			}
			if is32 {
				cellRows32(q32, s, b0, b1, any(bias).([]float32), any(c0).([]float32), any(out).([]float32))
				continue
			}
			for b := b0; b < b1; b++ {
				gb := q.act[(s*B+b)*H4 : (s*B+b+1)*H4]
				brow := q.biasRow(bias, s, b)
				r := (s*B + b) * H
				for u := range H {
					i := sigmoid(gb[u] + brow[u])
					f := sigmoid(gb[H+u] + brow[H+u])
					gg := tanhT(gb[2*H+u] + brow[2*H+u])
					o := sigmoid(gb[3*H+u] + brow[3*H+u])
					gb[u], gb[H+u], gb[2*H+u], gb[3*H+u] = i, f, gg, o
					cn := f*c[b*H+u] + i*gg
					tc := tanhT(cn)
					c[b*H+u] = cn
					q.c[r+u], q.tc[r+u] = cn, tc
					out[r+u] = o * tc
				}
			}
		}
	})
	return all
}

// cellRows32 is the float32 form of forward's cell update at step s for the
// sequences [b0, b1): kernels.LSTMCellForward32, the same arithmetic in the
// same order as the generic loop (the generic scalar functions are neither
// inlined nor specialised; the kernel's slice forms may differ from them in
// the last place or two). q.act holds the step's gate inputs without the
// bias and receives the activations; the cell state before the step is c0
// or the previous step's saved one, and the new one is saved in place; out
// is the layer's output after its lead rows.
func cellRows32(q *lstmSeq[float32], s, b0, b1 int, bias, c0, out []float32) {
	B, H := q.B, q.H
	H4 := 4 * H
	cPrev := c0[b0*H : b1*H]
	if s > 0 {
		cPrev = q.c[((s-1)*B+b0)*H : ((s-1)*B+b1)*H]
	}
	r0, r1 := s*B+b0, s*B+b1
	perRow := q.biasRows != 1
	if perRow {
		bias = bias[r0*H4 : r1*H4]
	}
	kernels.LSTMCellForward32(q.act[r0*H4:r1*H4], q.c[r0*H:r1*H], q.tc[r0*H:r1*H], out[r0*H:r1*H], cPrev, bias, b1-b0, H, perRow)
}

// backward returns dX [S·B, In] for the output gradient dOut
// [lead + S·B, H] and stores the other gradients in q.
func (q *lstmSeq[T]) backward(X, Wih, Whh, c0, dAll []T) []T {
	S, B, H, In := q.S, q.B, q.H, q.In
	H4 := 4 * H
	dLead, dOut := dAll[:q.lead*H], dAll[q.lead*H:]
	dG := resize(&q.dG, S*B*H4) // every entry is written below
	dh := resize(&q.dh0, B*H)   // dL/dh entering the step from later steps
	dcn := resize(&q.dc0, B*H)  // dL/dc from later steps
	clear(dh)
	clear(dcn)
	pk := q.packedRecurrent(Whh, true)
	f32 := unsafe.Sizeof(dh[0]) == 4 // the cell's gradient in kernels' float32 form (the same operations)
	// Each core runs the recurrence backwards for its own sequences, as in
	// forward.
	parallelRows(B, S*H, func(b0, b1 int) {
		for s := S - 1; s >= 0; s-- {
			for b := b0; b < b1; b++ {
				r := (s*B + b) * H
				a := q.act[(s*B+b)*H4 : (s*B+b+1)*H4]
				dg := dG[(s*B+b)*H4 : (s*B+b+1)*H4]
				if f32 {
					cp := c0[b*H : (b+1)*H]
					if s > 0 {
						cp = q.c[r-B*H : r-B*H+H]
					}
					kernels.LSTMCellGrad32(any(dg).([]float32), any(dcn[b*H:(b+1)*H]).([]float32), any(a).([]float32),
						any(q.tc[r:r+H]).([]float32), any(cp).([]float32), any(dOut[r:r+H]).([]float32), any(dh[b*H:(b+1)*H]).([]float32))
					continue
				}
				for u := range H {
					i, f, gg, o := a[u], a[H+u], a[2*H+u], a[3*H+u]
					tc := q.tc[r+u]
					var cp T
					if s > 0 {
						cp = q.c[r-B*H+u]
					} else {
						cp = c0[b*H+u]
					}
					dht := dOut[r+u] + dh[b*H+u]
					dc := dht*o*(1-tc*tc) + dcn[b*H+u]
					dg[u] = dc * gg * i * (1 - i)
					dg[H+u] = dc * cp * f * (1 - f)
					dg[2*H+u] = dc * i * (1 - gg*gg)
					dg[3*H+u] = dht * tc * o * (1 - o)
					dcn[b*H+u] = dc * f
				}
			}
			// dh for step s−1 (for s = 0, dL/dh0): dG_s·Whhᵀ.
			dGs := dG[(s*B+b0)*H4 : (s*B+b1)*H4]
			if pk != nil {
				kernels.MulPackedTo(any(dh[b0*H:b1*H]).([]float32), H, any(dGs).([]float32), H4, b1-b0, pk, false)
			} else {
				gemmBlock(false, true, b1-b0, H, H4, 1, dGs, H4, Whh, H4, 0, dh[b0*H:b1*H], H)
			}
		}
	})
	for i, v := range dLead { // the h0 rows of the output
		dh[i] += v
	}
	dX := resize(&q.dX, S*B*In)
	gemm(false, true, 1, dG, S*B, H4, Wih, In, H4, 0, dX)
	gemm(true, false, 1, X, S*B, In, dG, S*B, H4, 0, resize(&q.dWih, In*H4))
	gemm(true, false, 1, q.out[:S*B*H], S*B, H, dG, S*B, H4, 0, resize(&q.dWhh, H*H4)) // h before each step
	if q.biasRows == 1 {
		colSums(resize(&q.dBias, H4), dG, S*B, H4)
	} else {
		// A bias row per step and sequence: its gradient is dG itself,
		// which nothing reads again before the next backward rewrites it.
		q.dBias = dG
	}
	return dX
}

// lstmFwdOp: (X, Wih, Whh, bias, h0, c0) → outputs [S·B, H].
type lstmFwdOp[T float32 | float64] struct{ q *lstmSeq[T] }

func (op lstmFwdOp[T]) Arity() int { return 6 }
func (op lstmFwdOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a, a, a, a, a)
}
func (op lstmFwdOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.q.outRows(), op.q.H}, nil
}
func (op lstmFwdOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 6 {
		return nil, fmt.Errorf("train: LSTM layer %s: %d inputs, want 6", op.q.name, len(v))
	}
	out := op.q.forward(dataOf[T](v[0]), dataOf[T](v[1]), dataOf[T](v[2]), dataOf[T](v[3]), dataOf[T](v[4]), dataOf[T](v[5]))
	return newDense(out, op.q.outRows(), op.q.H), nil
}
func (op lstmFwdOp[T]) ReturnsPtr() bool      { return false }
func (op lstmFwdOp[T]) CallsExtern() bool     { return false }
func (op lstmFwdOp[T]) OverwritesInput() int  { return -1 }
func (op lstmFwdOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "lstm.fwd(%s)", op.q.name) }
func (op lstmFwdOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op lstmFwdOp[T]) String() string        { return "LSTM(" + op.q.name + ")" }
func (op lstmFwdOp[T]) DiffWRT(int) []bool    { return []bool{true, true, true, true, true, true} }

// SymDiff returns the gradients of the six inputs: a backward node that
// computes all of them (returning dX) and five nodes that read the others.
func (op lstmFwdOp[T]) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	bw, err := G.ApplyOp(lstmBwdOp[T](op), in[0], in[1], in[2], in[5], grad)
	if err != nil {
		return nil, err
	}
	res := G.Nodes{bw}
	for which := 1; which <= 5; which++ {
		n, err := G.ApplyOp(lstmPickOp[T]{q: op.q, which: which}, bw)
		if err != nil {
			return nil, err
		}
		res = append(res, n)
	}
	return res, nil
}

// lstmBwdOp: (X, Wih, Whh, c0, dOut) → dX [S·B, In]; stores the other
// gradients for lstmPickOp.
type lstmBwdOp[T float32 | float64] struct{ q *lstmSeq[T] }

func (op lstmBwdOp[T]) Arity() int { return 5 }
func (op lstmBwdOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a, a, a, a)
}
func (op lstmBwdOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.q.S * op.q.B, op.q.In}, nil
}
func (op lstmBwdOp[T]) Do(v ...G.Value) (G.Value, error) {
	if len(v) != 5 {
		return nil, fmt.Errorf("train: LSTM layer %s backward: %d inputs, want 5", op.q.name, len(v))
	}
	dX := op.q.backward(dataOf[T](v[0]), dataOf[T](v[1]), dataOf[T](v[2]), dataOf[T](v[3]), dataOf[T](v[4]))
	return newDense(dX, op.q.S*op.q.B, op.q.In), nil
}
func (op lstmBwdOp[T]) ReturnsPtr() bool      { return false }
func (op lstmBwdOp[T]) CallsExtern() bool     { return false }
func (op lstmBwdOp[T]) OverwritesInput() int  { return -1 }
func (op lstmBwdOp[T]) WriteHash(h hash.Hash) { fmt.Fprintf(h, "lstm.bwd(%s)", op.q.name) }
func (op lstmBwdOp[T]) Hashcode() uint32      { return hashOf(op) }
func (op lstmBwdOp[T]) String() string        { return "LSTMGrad(" + op.q.name + ")" }

// lstmPickOp returns one of the gradients stored by the backward op whose
// node is its input (which also orders it after that op): 1 dWih, 2 dWhh,
// 3 dBias, 4 dh0, 5 dc0.
type lstmPickOp[T float32 | float64] struct {
	q     *lstmSeq[T]
	which int
}

func (op lstmPickOp[T]) Arity() int { return 1 }
func (op lstmPickOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op lstmPickOp[T]) shape() tensor.Shape {
	q := op.q
	switch op.which {
	case 1:
		return tensor.Shape{q.In, 4 * q.H}
	case 2:
		return tensor.Shape{q.H, 4 * q.H}
	case 3:
		return tensor.Shape{q.biasRows, 4 * q.H}
	}
	return tensor.Shape{q.B, q.H}
}
func (op lstmPickOp[T]) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape(), nil }
func (op lstmPickOp[T]) Do(...G.Value) (G.Value, error) {
	var src []T
	switch op.which {
	case 1:
		src = op.q.dWih
	case 2:
		src = op.q.dWhh
	case 3:
		src = op.q.dBias
	case 4:
		src = op.q.dh0
	default:
		src = op.q.dc0
	}
	// No copy: gorgonia may sum gradients into the slice it is handed,
	// which backward writes anew on every run.
	return newDense(src, op.shape()...), nil
}
func (op lstmPickOp[T]) ReturnsPtr() bool     { return false }
func (op lstmPickOp[T]) CallsExtern() bool    { return false }
func (op lstmPickOp[T]) OverwritesInput() int { return -1 }
func (op lstmPickOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "lstm.pick%d(%s)", op.which, op.q.name)
}
func (op lstmPickOp[T]) Hashcode() uint32 { return hashOf(op) }
func (op lstmPickOp[T]) String() string {
	return fmt.Sprintf("LSTMGrad%d(%s)", op.which, op.q.name)
}

func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// lstmLayer adds one LSTM layer over S steps as a single op to the graph;
// bias is [1, 4H] or [S·B, 4H] (a row per step and sequence). Its output is
// [S·B, H], or [(S+1)·B, H] with h0 first when withH0 is set.
func (b *builder) lstmLayer(name string, S, B, in, H int, withH0 bool, X, wih, whh, bias, h0, c0 *G.Node) *G.Node {
	if b.err != nil {
		return nil
	}
	rows := bias.Shape()[0]
	if rows != 1 && rows != S*B {
		b.fail("lstm layer", fmt.Errorf("bias of %d rows, want 1 or S·B = %d", rows, S*B))
		return nil
	}
	lead := 0
	if withH0 {
		lead = B
	}
	var op G.Op
	if b.dt == tensor.Float32 {
		op = lstmFwdOp[float32]{newLSTMSeq[float32](name, S, B, in, H, rows, lead)}
	} else {
		op = lstmFwdOp[float64]{newLSTMSeq[float64](name, S, B, in, H, rows, lead)}
	}
	return b.do("lstm layer", func() (*G.Node, error) { return G.ApplyOp(op, X, wih, whh, bias, h0, c0) })
}
