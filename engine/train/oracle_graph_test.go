package train

import (
	"fmt"
	"math"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file and the other oracle_*_test.go files hold the SeqFlow training
// loss as a gorgonia graph: the automatic-differentiation reference that the
// hand-written backward passes of engine/step and of this package's loops
// are checked against (TestStepMatchesGraph), itself checked against
// float64 loop references (ref_test.go) and model.Flow. The graph was the
// CPU trainer before engine/step; graphTrainer (oracle_trainer_test.go)
// keeps that trainer for the benchmarks' comparison.

// graphKind selects what a flowGraph computes.
type graphKind int

const (
	// kindTrain builds the loss, its gradients with respect to every
	// parameter and, when the config asks for it, dropout-mask inputs.
	kindTrain graphKind = iota
	// kindEval builds the forward pass only (no gradient nodes, no dropout):
	// gorgonia's gradients pile up across Reset+RunAll, so evaluation must
	// never run on the training machine.
	kindEval
)

// slot binds one gorgonia parameter node to a contiguous range of a model
// tensor. Some model tensors are split over two slots (the layer-0 LSTM
// input weight into its token and positional rows; the first coupling layer
// into its conditioning and context rows) because the rows of a row-major
// [in, out] matrix are contiguous.
type slot struct {
	t     *model.Tensor
	off   int   // first element of the range in t.Data
	shape []int // [rows, cols]; biases are [1, out]
	node  *G.Node
	val   *tensor.Dense
	grad  *G.Node
}

func (s *slot) size() int { return s.shape[0] * s.shape[1] }

// feed is an input node whose value is overwritten before each run.
type feed struct {
	node *G.Node
	val  *tensor.Dense
}

// set copies src (len = the node's size) into the node's value.
func (f *feed) set(src []float64) {
	switch d := f.val.Data().(type) {
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	case []float64:
		copy(d, src)
	}
}

// flowGraph is the SeqFlow loss for a fixed batch size B and the config's T,
// compiled once and run once per batch.
//
// Rows are t-major: row r = t·B + b holds position t of sequence b, so the
// N = T·B rows of a position are contiguous.
//
// Inputs (fed per batch):
//
//	tok  [N, V]  one-hot of the true tokens
//	neg  [N, V]  one-hot of the random negative token (zero row when it equals the true one)
//	eps  [N, F]  dequantisation noise σ·n, already rejection-sampled
//	wt   [N]     weight of each row in the loss: 1/B_real for real sequences, 0 for padding
//	drop masks   [B, H] per inter-layer connection and step, [N, H] per block for the context;
//	             entries are 0 or 1/(1−p) (inverted dropout), present only in training graphs with p > 0
//
// Outputs: loss (scalar, Σ_r wt_r·(nll_r + λ·sim_r)), nll [N] (−log p of each row's
// position) and sim [N] (the similarity loss of each row).
type flowGraph struct {
	cfg   model.Config
	kind  graphKind
	dt    tensor.Dtype
	B, N  int
	g     *G.ExprGraph
	vm    G.VM
	slots []*slot

	eps, wt feed
	// The embedding rows of the true and the negative tokens: one-hot
	// inputs [N, V] (tok, neg) in the elementary graph, row indices read by
	// gather ops (tokRows, negRows) in the fused one (embedop.go).
	tok, neg         feed
	tokRows, negRows *rowIndex
	oneHot           bool
	pos0             feed       // [B, P] positional code c_0 of each sequence
	pos              *posIndex  // padded length of each sequence, for the later codes
	interMask        [][][]feed // [block][layer-1][step]
	ctxMask          []feed     // [block]
	dropout          bool
	posDense         bool
	lstmOp           bool
	couplingOp       bool

	loss, nll, sim *G.Node
	// nllVal and simVal receive copies of nll and sim during the run: the
	// tape machine reuses the memory of intermediate nodes, so their own
	// values are not meaningful after RunAll.
	nllVal, simVal G.Value
	nodes          int
}

// builder wraps gorgonia calls with a sticky error, so the graph code reads
// like the maths; the first failing call's error is kept with its label.
type builder struct {
	g   *G.ExprGraph
	dt  tensor.Dtype
	err error
}

func (b *builder) fail(what string, err error) {
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("train: graph %s: %w", what, err)
	}
}

func (b *builder) do(what string, f func() (*G.Node, error)) *G.Node {
	if b.err != nil {
		return nil
	}
	n, err := f()
	b.fail(what, err)
	return n
}

// c returns a scalar constant of the graph's dtype (a bare float64 constant
// in a float32 graph fails type unification).
func (b *builder) c(v float64) *G.Node {
	if b.dt == tensor.Float32 {
		return G.NewConstant(float32(v))
	}
	return G.NewConstant(v)
}

func (b *builder) mul(x, y *G.Node) *G.Node {
	return b.do("matmul", func() (*G.Node, error) { return G.Mul(x, y) })
}
func (b *builder) add(x, y *G.Node) *G.Node {
	return b.do("add", func() (*G.Node, error) { return G.Add(x, y) })
}
func (b *builder) sub(x, y *G.Node) *G.Node {
	return b.do("sub", func() (*G.Node, error) { return G.Sub(x, y) })
}
func (b *builder) had(x, y *G.Node) *G.Node {
	return b.do("hadamard", func() (*G.Node, error) { return G.HadamardProd(x, y) })
}
func (b *builder) div(x, y *G.Node) *G.Node {
	return b.do("div", func() (*G.Node, error) { return G.HadamardDiv(x, y) })
}
func (b *builder) scale(x *G.Node, v float64) *G.Node { return b.had(x, b.c(v)) }
func (b *builder) exp(x *G.Node) *G.Node {
	return b.do("exp", func() (*G.Node, error) { return G.Exp(x) })
}
func (b *builder) log(x *G.Node) *G.Node {
	return b.do("log", func() (*G.Node, error) { return G.Log(x) })
}
func (b *builder) tanh(x *G.Node) *G.Node {
	return b.do("tanh", func() (*G.Node, error) { return G.Tanh(x) })
}
func (b *builder) sigmoid(x *G.Node) *G.Node {
	return b.do("sigmoid", func() (*G.Node, error) { return G.Sigmoid(x) })
}
func (b *builder) relu(x *G.Node) *G.Node {
	return b.do("relu", func() (*G.Node, error) { return G.Rectify(x) })
}
func (b *builder) square(x *G.Node) *G.Node {
	return b.do("square", func() (*G.Node, error) { return G.Square(x) })
}
func (b *builder) sqrt(x *G.Node) *G.Node {
	return b.do("sqrt", func() (*G.Node, error) { return G.Sqrt(x) })
}
func (b *builder) sum(x *G.Node, along ...int) *G.Node {
	return b.do("sum", func() (*G.Node, error) { return G.Sum(x, along...) })
}
func (b *builder) reshape(x *G.Node, shape ...int) *G.Node {
	return b.do("reshape", func() (*G.Node, error) { return G.Reshape(x, tensor.Shape(shape)) })
}
func (b *builder) concat(axis int, xs ...*G.Node) *G.Node {
	if len(xs) == 1 {
		return xs[0]
	}
	return b.do("concat", func() (*G.Node, error) { return G.Concat(axis, xs...) })
}

// addRow adds a [1, n] row to every row of an [m, n] matrix.
func (b *builder) addRow(x, row *G.Node) *G.Node {
	return b.do("broadcast add", func() (*G.Node, error) { return G.BroadcastAdd(x, row, nil, []byte{0}) })
}

// pick returns x[i] along axis 0 (dropping that axis) for a small index.
//
// gorgonia v0.9.18 hashes a slice's bounds as single bytes and merges nodes
// with equal hashes, so x[0] and x[256] of the same node would silently
// become one node. Indices ≥ 255 therefore go through an intermediate slice
// x[128:], whose bounds cannot collide with a direct single-row slice
// (valid up to an axis length of 383; MaxT is at most 288 in practice).
func (b *builder) pick(x *G.Node, i int) *G.Node {
	n := x.Shape()[0]
	if i >= 255 {
		if n > 383 {
			b.fail("pick", fmt.Errorf("axis of length %d > 383 cannot be sliced safely", n))
			return nil
		}
		x = b.do("slice", func() (*G.Node, error) { return G.Slice(x, G.S(128, n)) })
		i -= 128
	}
	return b.do("slice", func() (*G.Node, error) { return G.Slice(x, G.S(i)) })
}

// pickCol returns column block q of x viewed as [m, parts, n/parts], i.e.
// columns [q·w, (q+1)·w) with w = n/parts, as an [m, w] matrix. Reshaping
// first keeps the slice index small (see pick).
func (b *builder) pickCol(x *G.Node, parts, q int) *G.Node {
	m, n := x.Shape()[0], x.Shape()[1]
	w := n / parts
	x3 := b.reshape(x, m, parts, w)
	return b.do("slice", func() (*G.Node, error) { return G.Slice(x3, nil, G.S(q)) })
}

func (b *builder) input(name string, shape ...int) feed {
	if b.err != nil {
		return feed{}
	}
	v := tensor.New(tensor.Of(b.dt), tensor.WithShape(shape...))
	var n *G.Node
	if len(shape) == 1 {
		n = G.NewVector(b.g, b.dt, G.WithShape(shape...), G.WithName(name), G.WithValue(v))
	} else {
		n = G.NewTensor(b.g, b.dt, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(v))
	}
	return feed{node: n, val: v}
}

// param binds rows [row0, row0+rows) of the model tensor t (viewed as
// [t.Shape[0], cols]; a 1-D bias is one row) to a new parameter node. In a
// float32 graph the node's value shares t.Data, so the optimiser's in-place
// updates are the graph's weights; in a float64 graph (gradient checks) it
// holds a copy made here.
func (b *builder) param(fg *flowGraph, t *model.Tensor, row0, rows int) *G.Node {
	if b.err != nil {
		return nil
	}
	cols := t.Shape[len(t.Shape)-1]
	if len(t.Shape) == 1 {
		rows = 1
	}
	s := &slot{t: t, off: row0 * cols, shape: []int{rows, cols}}
	data := t.Data[s.off : s.off+rows*cols]
	switch b.dt {
	case tensor.Float32:
		s.val = tensor.New(tensor.WithBacking(data), tensor.WithShape(rows, cols))
	default:
		c := make([]float64, len(data))
		for i, v := range data {
			c[i] = float64(v)
		}
		s.val = tensor.New(tensor.WithBacking(c), tensor.WithShape(rows, cols))
	}
	name := fmt.Sprintf("%s[%d:%d]", t.Name, row0, row0+rows)
	s.node = G.NewMatrix(b.g, b.dt, G.WithShape(rows, cols), G.WithName(name), G.WithValue(s.val))
	fg.slots = append(fg.slots, s)
	return s.node
}

// posCodes returns the positional codes of positions from..to-1 as a
// [to−from, P] row-major matrix: c_t = [onehot_MaxT(t) ; onehot_MaxT(T−1−t)]
// (nfbo_reference.md a.2; the distance is measured from the padded end).
func posCodes(cfg model.Config, from, to int) []float64 {
	p := cfg.P()
	out := make([]float64, (to-from)*p)
	for t := from; t < to; t++ {
		r := out[(t-from)*p : (t-from+1)*p]
		r[t] = 1
		r[cfg.MaxT+cfg.T-1-t] = 1
	}
	return out
}

// graphOpts are construction variants kept for measurements.
type graphOpts struct {
	// posDense feeds layer 0 the dense [B, F+P] input [y_t ; c_{t+1}] per
	// step, as PyTorch does, instead of gathering c_{t+1}·Wih[F:] rows
	// (BenchmarkPositionalInput compares the two).
	posDense bool
	// lstmOp runs each LSTM layer as one op over all steps (lstmop.go)
	// instead of unrolled per-step nodes, and applies the dropout masks
	// with maskOp (dropop.go) instead of gorgonia's element-wise product.
	lstmOp bool
	// couplingOp runs each coupling (net and transform) as one op
	// (couplingop.go) instead of elementary nodes.
	couplingOp bool
}

// buildGraphOpts builds and compiles the SeqFlow loss of params p for batches
// of B sequences in dtype dt (tensor.Float32 for training, tensor.Float64 for
// gradient checks) with the construction variants opts. Dropout-mask inputs
// exist only when kind is kindTrain and p.Config.Dropout > 0.
func buildGraphOpts(p *model.Params, B int, dt tensor.Dtype, kind graphKind, opts graphOpts) (*flowGraph, error) {
	cfg := p.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if B <= 0 {
		return nil, fmt.Errorf("train: batch size %d must be positive", B)
	}
	if cfg.T < 2 {
		return nil, fmt.Errorf("train: seq_len %d must be at least 2", cfg.T)
	}
	T, F, V := cfg.T, cfg.F, cfg.V
	N := T * B

	fg := &flowGraph{cfg: cfg, kind: kind, dt: dt, B: B, N: N,
		dropout: kind == kindTrain && cfg.Dropout > 0, posDense: opts.posDense, lstmOp: opts.lstmOp, couplingOp: opts.couplingOp}
	b := &builder{g: G.NewGraph(), dt: dt}
	fg.g = b.g

	// The elementary graph (couplingOp unset, the fused one's oracle)
	// looks the embeddings up by one-hot products.
	fg.oneHot = !opts.couplingOp
	if fg.oneHot {
		fg.tok = b.input("tok", N, V)
		fg.neg = b.input("neg", N, V)
	} else {
		fg.tokRows = &rowIndex{rows: make([]int32, N)}
		fg.negRows = &rowIndex{rows: make([]int32, N)}
	}
	fg.eps = b.input("eps", N, F)
	fg.wt = b.input("wt", N)

	// Positional codes depend on each sequence's padded length (T unless
	// the trainer draws shorter ones, Options.RandomPad): c_0 of every
	// sequence is an input, the codes of the later steps are row indices
	// read by the positional-gate ops (posop.go). run sets both.
	fg.pos = newPosIndex(T-1, B, cfg.MaxT)
	fg.pos0 = b.input("pos0", B, cfg.P())
	fg.setLengths(nil)

	// Embeddings: E / ‖E‖ per row.
	E := b.param(fg, p.Embed, 0, V)
	norm := b.reshape(b.sqrt(b.sum(b.square(E), 1)), V, 1)
	En := b.do("normalise", func() (*G.Node, error) { return G.BroadcastHadamardDiv(E, norm, nil, []byte{1}) })
	var ex, ej *G.Node // [N, F] e_x, and e_j with zero rows where j = x
	if fg.oneHot {
		ex, ej = b.mul(fg.tok.node, En), b.mul(fg.neg.node, En)
	} else {
		ex, ej = b.gatherRows("tok", fg.tokRows, En), b.gatherRows("neg", fg.negRows, En)
	}
	vhat := b.add(ex, fg.eps.node) // [N, F]

	// Similarity loss (CosineEmbeddingLoss, margin 0): e_x and e_j are unit
	// vectors, so cos(v̂, e) = v̂·e/‖v̂‖. Dropping ‖e‖ changes the gradient
	// with respect to e only along e, which the normalisation's Jacobian
	// removes, so the gradients with respect to E are exact.
	vnorm := b.sqrt(b.sum(b.square(vhat), 1))
	cosP := b.div(b.sum(b.had(vhat, ex), 1), vnorm)
	cosN := b.div(b.sum(b.had(vhat, ej), 1), vnorm)
	fg.sim = b.add(b.sub(b.c(1), cosP), b.relu(cosN))

	y := vhat
	var logdet *G.Node // [N], Σ over blocks, couplings and dims of log|du/dw|
	for k, blk := range p.Blocks {
		y, logdet = fg.flowBlock(b, k, blk, y, logdet)
	}

	// log p_t = Σ_i log N(ε_i; 0, 1) + Σ log|du/dw|; nll = −log p_t.
	sq := b.sum(b.square(y), 1)
	logp := b.sub(b.add(b.scale(sq, -0.5), logdet), b.c(0.5*float64(F)*math.Log(2*math.Pi)))
	fg.nll = b.scale(logp, -1)
	perRow := b.add(fg.nll, b.scale(fg.sim, cfg.SimCoef))
	fg.loss = b.sum(b.had(perRow, fg.wt.node))
	if b.err != nil {
		return nil, b.err
	}
	if kind == kindTrain {
		wrt := make(G.Nodes, len(fg.slots))
		for i, s := range fg.slots {
			wrt[i] = s.node
		}
		grads, err := G.Grad(fg.loss, wrt...)
		if err != nil {
			return nil, fmt.Errorf("train: gradient graph: %w", err)
		}
		for i, s := range fg.slots {
			s.grad = grads[i]
		}
	}
	fg.nllVal = tensor.New(tensor.Of(dt), tensor.WithShape(N))
	fg.simVal = tensor.New(tensor.Of(dt), tensor.WithShape(N))
	G.Read(fg.nll, &fg.nllVal)
	G.Read(fg.sim, &fg.simVal)
	fg.nodes = len(fg.g.AllNodes())
	fg.vm = G.NewTapeMachine(fg.g)
	return fg, nil
}

// flowBlock adds block k of the flow to the graph: its LSTM context (with dropout when training) and its
// couplings over y's two halves; it returns the block's output and logdet with the couplings' log-determinant
// rows added (logdet nil before the first).
func (fg *flowGraph) flowBlock(b *builder, k int, blk model.Block, y, logdet *G.Node) (*G.Node, *G.Node) {
	N, H, F := fg.N, fg.cfg.H, fg.cfg.F
	ctx := fg.lstm(b, k, blk, y)
	if fg.dropout {
		m := b.input(fmt.Sprintf("dropctx.%d", k), N, H)
		fg.ctxMask = append(fg.ctxMask, m)
		if fg.lstmOp {
			ctx = b.dropout(fmt.Sprintf("ctx.%d", k), ctx, m.node)
		} else {
			ctx = b.had(ctx, m.node) // the elementary form, the fused one's oracle
		}
	}
	var lo, hi *G.Node
	if fg.couplingOp {
		lo, hi = b.block(fmt.Sprintf("lo.%d", k), y, 0, N, 0, F/2), b.block(fmt.Sprintf("hi.%d", k), y, 0, N, F/2, F)
	} else {
		lo, hi = b.pickCol(y, 2, 0), b.pickCol(y, 2, 1) // the elementary form, the fused one's oracle
	}
	for j, cp := range blk.Couplings {
		rev := model.Reversed(k, j)
		cond, w := lo, hi
		if rev {
			cond, w = hi, lo
		}
		var u, ldRow *G.Node
		if fg.couplingOp {
			u, ldRow = fg.fusedCoupling(b, fmt.Sprintf("%d.%d", k, j), cp, cond, ctx, w)
		} else {
			u, ldRow = fg.nodeCoupling(b, cp, cond, ctx, w)
		}
		if logdet == nil {
			logdet = ldRow
		} else {
			logdet = b.add(logdet, ldRow)
		}
		if rev {
			lo = u
		} else {
			hi = u
		}
	}
	if fg.couplingOp {
		y = b.join(fmt.Sprintf("y.%d", k), lo, hi)
	} else {
		y = b.concat(1, lo, hi)
	}
	return y, logdet
}

// setLengths sets the padded length of each of the B sequences (nil: T
// for all) for the next run: c_0 and the positional-gate rows.
func (fg *flowGraph) setLengths(lens []int) {
	if lens == nil {
		lens = make([]int, fg.B)
		for b := range lens {
			lens[b] = fg.cfg.T
		}
	}
	fg.pos.setLengths(lens)
	c0 := make([]float64, fg.B*fg.cfg.P())
	fg.pos.code0(c0)
	fg.pos0.set(c0)
}

// fusedCoupling adds coupling cp as one op (couplingop.go) and returns u
// [N, half] and the row sums of log|du/dw| [N].
func (fg *flowGraph) fusedCoupling(b *builder, name string, cp model.Coupling, cond, ctx, w *G.Node) (u, ldRow *G.Node) {
	half, H := fg.cfg.Half(), fg.cfg.H
	d0 := cp.Layers[0]
	params := []*G.Node{b.param(fg, d0.W, 0, half), b.param(fg, d0.W, half, H), b.param(fg, d0.B, 0, 1)}
	for _, d := range cp.Layers[1:] {
		params = append(params, b.param(fg, d.W, 0, d.In()), b.param(fg, d.B, 0, 1))
	}
	return b.coupling(name, fg.cfg.Transform, cond, ctx, w, params)
}

// nodeCoupling adds coupling cp from elementary nodes and returns what
// fusedCoupling returns.
func (fg *flowGraph) nodeCoupling(b *builder, cp model.Coupling, cond, ctx, w *G.Node) (u, ldRow *G.Node) {
	half, H, N := fg.cfg.Half(), fg.cfg.H, fg.N
	np := fg.cfg.Transform.NumParams()
	// First layer split into conditioning and context rows, so
	// [cond ; ctx] is never materialised.
	d0 := cp.Layers[0]
	h := b.add(b.mul(cond, b.param(fg, d0.W, 0, half)), b.mul(ctx, b.param(fg, d0.W, half, H)))
	h = b.relu(b.addRow(h, b.param(fg, d0.B, 0, 1)))
	for i, d := range cp.Layers[1:] {
		h = b.addRow(b.mul(h, b.param(fg, d.W, 0, d.In())), b.param(fg, d.B, 0, 1))
		// ReLU after every layer but the output layer, told by its
		// index: its width half·np may equal U (the paper preset's
		// 20·5 = 100).
		if i < len(cp.Layers)-2 {
			h = b.relu(h)
		}
	}
	// h is [N, half·np] read as [N, half, np], parameter fastest.
	raw := b.reshape(h, N*half, np)
	o := make([]*G.Node, np)
	for q := range np {
		o[q] = b.reshape(b.do("slice", func() (*G.Node, error) { return G.Slice(raw, nil, G.S(q)) }), N, half)
	}
	u, ld := b.transform(fg.cfg.Transform, o, w)
	return u, b.sum(ld, 1)
}

// set1 sets element i of the feed's value.
func (f *feed) set1(i int, v float64) {
	switch d := f.val.Data().(type) {
	case []float32:
		d[i] = float32(v)
	case []float64:
		d[i] = v
	}
}

// lstm builds block k's initial-state MLP and LSTM over the T−1 steps whose
// outputs are used, and returns the context [N, H]: row block t holds the
// top layer's h0 for t = 0 and the LSTM output of step t−1 otherwise.
//
// Layer 0's input at step t is [y_t ; c_{t+1}]; its positional part
// c_{t+1}·Wih[F:] is the sum of two rows of Wih[F:], gathered for every step
// and sequence at once ([T−1·B, 4H], posop.go), instead of a [B, F+P]
// matmul per step.
func (fg *flowGraph) lstm(b *builder, k int, blk model.Block, y *G.Node) *G.Node {
	cfg := fg.cfg
	T, F, H, L, B := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, fg.B

	// Initial state: ReLU MLP of c_0, output index layer·2H + unit·2 + {h, c}.
	i0, i1 := blk.InitHidden[0], blk.InitHidden[1]
	hid := b.relu(b.addRow(b.mul(fg.pos0.node, b.param(fg, i0.W, 0, i0.In())), b.param(fg, i0.B, 0, 1)))
	st := b.addRow(b.mul(hid, b.param(fg, i1.W, 0, i1.In())), b.param(fg, i1.B, 0, 1)) // [B, 2LH]
	st = b.reshape(st, B*L*H, 2)
	h := make([]*G.Node, L)
	c := make([]*G.Node, L)
	for q, dst := range [2][]*G.Node{h, c} {
		if fg.lstmOp {
			// Block copies: gorgonia's strided slices iterate entry by entry.
			hq := b.reshape(b.block(fmt.Sprintf("init.%d.%d", k, q), st, 0, B*L*H, q, q+1), B, L*H)
			for l := range L {
				dst[l] = hq
				if L > 1 {
					dst[l] = b.block(fmt.Sprintf("init.%d.%d.%d", k, q, l), hq, 0, B, l*H, (l+1)*H)
				}
			}
			continue
		}
		hq := b.reshape(b.do("slice", func() (*G.Node, error) { return G.Slice(st, nil, G.S(q)) }), B, L, H)
		for l := range L {
			dst[l] = b.do("slice", func() (*G.Node, error) { return G.Slice(hq, nil, G.S(l)) }) // [B, H]
		}
	}
	ctxRows := []*G.Node{h[L-1]}

	wih := make([]*G.Node, L)
	whh := make([]*G.Node, L)
	bias := make([]*G.Node, L)
	var wpos *G.Node // Wih[F:] of layer 0
	for l, lp := range blk.LSTM {
		if l == 0 && fg.posDense {
			wih[0] = b.param(fg, lp.Wih, 0, F+cfg.P())
		} else if l == 0 {
			wih[0] = b.param(fg, lp.Wih, 0, F)
			wpos = b.param(fg, lp.Wih, F, cfg.P())
		} else {
			wih[l] = b.param(fg, lp.Wih, 0, H)
		}
		whh[l] = b.param(fg, lp.Whh, 0, H)
		bias[l] = b.add(b.param(fg, lp.Bih, 0, 1), b.param(fg, lp.Bhh, 0, 1))
	}
	var posGates *G.Node // [(T−1)·B, 4H]: c_{t+1}·Wih[F:] + bih + bhh for layer 0
	if !fg.posDense {
		posGates = b.posGates(fg.pos, k, wpos, bias[0])
	}
	if fg.lstmOp && !fg.posDense {
		// Inputs of steps 0..T−2 are the first T−1 positions, the first
		// S·B rows of y.
		S := T - 1
		x := b.block(fmt.Sprintf("in.%d", k), y, 0, S*B, 0, F)
		var out *G.Node
		for l := range L {
			in, bl := H, bias[l]
			if l == 0 {
				in, bl = F, posGates
			}
			// The top layer's output is the context [h0 ; h_1..h_S].
			out = b.lstmLayer(fmt.Sprintf("%d.%d", k, l), S, B, in, H, l == L-1, x, wih[l], whh[l], bl, h[l], c[l])
			x = out
			if l < L-1 && fg.dropout {
				for len(fg.interMask) <= k {
					fg.interMask = append(fg.interMask, make([][]feed, L-1))
				}
				m := b.input(fmt.Sprintf("drop.%d.%d", k, l), S*B, H)
				fg.interMask[k][l] = append(fg.interMask[k][l], m)
				x = b.dropout(fmt.Sprintf("%d.%d", k, l), x, m.node)
			}
		}
		return out
	}
	Y := b.reshape(y, T, B*cfg.F)
	for t := 0; t < T-1; t++ {
		x := b.reshape(b.pick(Y, t), B, F)
		if fg.posDense {
			pc := b.input(fmt.Sprintf("posdense.%d.%d", k, t), B, cfg.P())
			code := posCodes(cfg, t+1, t+2)
			for r := range B {
				for i, v := range code {
					if v != 0 {
						pc.set1(r*cfg.P()+i, v)
					}
				}
			}
			x = b.concat(1, x, pc.node)
		}
		for l := range L {
			gates := b.add(b.mul(x, wih[l]), b.mul(h[l], whh[l]))
			if l == 0 && fg.posDense {
				gates = b.addRow(gates, bias[0])
			} else if l == 0 {
				gates = b.add(gates, b.reshape(b.pick(b.reshape(posGates, T-1, B*4*H), t), B, 4*H))
			} else {
				gates = b.addRow(gates, bias[l])
			}
			ig := b.sigmoid(b.pickCol(gates, 4, 0))
			fgt := b.sigmoid(b.pickCol(gates, 4, 1))
			gg := b.tanh(b.pickCol(gates, 4, 2))
			og := b.sigmoid(b.pickCol(gates, 4, 3))
			c[l] = b.add(b.had(fgt, c[l]), b.had(ig, gg))
			h[l] = b.had(og, b.tanh(c[l]))
			x = h[l]
			if l < L-1 && fg.dropout {
				for len(fg.interMask) <= k {
					fg.interMask = append(fg.interMask, make([][]feed, L-1))
				}
				m := b.input(fmt.Sprintf("drop.%d.%d.%d", k, l, t), B, H)
				fg.interMask[k][l] = append(fg.interMask[k][l], m)
				x = b.had(x, m.node)
			}
		}
		ctxRows = append(ctxRows, h[L-1])
	}
	return b.concat(0, ctxRows...)
}

// transform applies the coupling's element-wise map to w [N, half] with raw
// parameters o[q] [N, half] and returns u and log|du/dw| (both [N, half]).
func (b *builder) transform(tr model.Transform, o []*G.Node, w *G.Node) (u, logDeriv *G.Node) {
	switch tr {
	case model.Affine:
		// u = a + exp(0.5·o1)·w.
		ls := b.scale(o[1], 0.5)
		return b.add(o[0], b.had(b.exp(ls), w)), ls
	default:
		// NLSq (nfbo_reference.md a.4): u = a + b·w + c/(1 + (d·w + f)²),
		// du/dw = b − 2·c·d·(d·w + f)/(1 + (d·w + f)²)².
		logB := b.scale(o[1], kernels.NLSqExpRate)
		logD := b.scale(o[3], kernels.NLSqExpRate)
		bb := b.exp(logB)
		dd := b.exp(logD)
		ff := o[4]
		cc := b.had(b.tanh(b.scale(o[2], kernels.NLSqTanhRate)), b.exp(b.add(b.sub(logB, logD), b.c(kernels.NLSqLogA))))
		s := b.add(b.had(dd, w), ff)
		den := b.add(b.c(1), b.square(s))
		u = b.add(b.add(o[0], b.had(bb, w)), b.div(cc, den))
		deriv := b.sub(bb, b.div(b.scale(b.had(b.had(cc, dd), s), 2), b.square(den)))
		return u, b.log(deriv)
	}
}
