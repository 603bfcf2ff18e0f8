package model

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/nfbo/nfbo/kernels"
)

// Flow is a SeqFlow prepared for pure-Go inference: it holds the weights
// plus what can be computed from them once (unit-norm embedding rows, the
// LSTM initial states, per-position LSTM biases, the coupling nets' context
// weights side by side and, where kernels.PackedAccelerated, a copy of every
// matrix its products use packed for kernels.MulPackedTo: as much memory
// again as the weights). It reads but never writes its Params; after the
// weights change (fine-tuning) build a new Flow with NewFlow.
//
// A Flow is safe for concurrent use by goroutines that each pass their own
// Workspace.
//
// Data layouts, all row-major and batch-major: token ids x are B×T, latents
// z and embeddings v are B×T×F (element (b, t, i) at (b·T + t)·F + i), and
// per-position values are B×T.
type Flow struct {
	cfg    Config
	p      *Params
	unit   []float32 // V×F: E[j]/‖E[j]‖
	blocks []flowBlock
}

// flowBlock holds the per-block values that do not depend on the input.
type flowBlock struct {
	// h0 and c0 are the initial LSTM states FF(c_0), per layer, each of length H.
	h0, c0 [][]float32
	// stepBias is T×4H: row t is the constant part of layer 0's gates at step
	// t, bih + bhh + the Wih rows picked by the one-hot code c_{t+1}
	// (c_T = 0, so row T−1 is bih + bhh). Treating the one-hot input as a row
	// lookup saves a (B·T)×P×4H product.
	stepBias []float32
	// bias[l] (l ≥ 1) is bih + bhh of LSTM layer l; bias[0] is unused.
	bias [][]float32
	// ctxW is H×(C·U): for coupling j, columns [jU, (j+1)U) are the rows of
	// its first layer that multiply the context, so one product serves all
	// C couplings. ctxB (C·U) holds the first layers' biases.
	ctxW, ctxB []float32

	// The matrices of the block's products: per LSTM layer wih (layer 0:
	// the F rows that meet y_t) and whh; ctx is ctxW; per coupling its first
	// layer's rows that meet the conditioning half (first), then its other
	// layers (rest: the hidden layers and the output layer).
	wih, whh []matrix
	ctx      matrix
	first    []matrix
	rest     [][]matrix
}

// NewFlow prepares p for inference. It fails if p's configuration is invalid
// or a tensor's length does not match it.
func NewFlow(p *Params) (*Flow, error) {
	cfg := p.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkShapes(p); err != nil {
		return nil, err
	}
	F, H, T, MaxT := cfg.F, cfg.H, cfg.T, cfg.MaxT
	half, U, C, L := cfg.Half(), cfg.U, cfg.Couplings, cfg.LSTMLayers
	f := &Flow{cfg: cfg, p: p, unit: make([]float32, cfg.V*F)}
	kernels.NormalizeRowsTo(f.unit, p.Embed.Data, cfg.V, F)
	for _, b := range p.Blocks {
		var fb flowBlock
		// Initial state from c_0 = [onehot(0); onehot(T−1)].
		init0, init1 := b.InitHidden[0], b.InitHidden[1]
		hid := make([]float32, H)
		copy(hid, init0.B.Data)
		addRow(hid, init0.W.Data, 0, H)
		addRow(hid, init0.W.Data, MaxT+T-1, H)
		kernels.ReLU(hid)
		out := make([]float32, 2*L*H)
		kernels.DenseTo(out, hid, init1.W.Data, init1.B.Data, 1, H, 2*L*H)
		for l := 0; l < L; l++ {
			h0, c0 := make([]float32, H), make([]float32, H)
			for u := 0; u < H; u++ {
				h0[u] = out[l*2*H+u*2]
				c0[u] = out[l*2*H+u*2+1]
			}
			fb.h0 = append(fb.h0, h0)
			fb.c0 = append(fb.c0, c0)
		}
		// Layer 0's per-step constant gates: input at step t is
		// [y_t ; c_{t+1}], c_{t+1} = [onehot(t+1); onehot(T−2−t)].
		l0 := b.LSTM[0]
		fb.stepBias = make([]float32, T*4*H)
		for t := 0; t < T; t++ {
			row := fb.stepBias[t*4*H : (t+1)*4*H]
			for i := range row {
				row[i] = l0.Bih.Data[i] + l0.Bhh.Data[i]
			}
			if t+1 < T {
				addRow(row, l0.Wih.Data, F+t+1, 4*H)
				addRow(row, l0.Wih.Data, F+MaxT+T-2-t, 4*H)
			}
		}
		fb.bias = make([][]float32, L)
		for l := 1; l < L; l++ {
			bs := make([]float32, 4*H)
			for i := range bs {
				bs[i] = b.LSTM[l].Bih.Data[i] + b.LSTM[l].Bhh.Data[i]
			}
			fb.bias[l] = bs
		}
		fb.ctxW = make([]float32, H*C*U)
		fb.ctxB = make([]float32, C*U)
		for j, c := range b.Couplings {
			w := c.Layers[0].W.Data // (half+H)×U
			for r := 0; r < H; r++ {
				copy(fb.ctxW[r*C*U+j*U:r*C*U+(j+1)*U], w[(half+r)*U:(half+r+1)*U])
			}
			copy(fb.ctxB[j*U:(j+1)*U], c.Layers[0].B.Data)
		}
		fb.ctx = newMatrix(fb.ctxW, H, C*U)
		for l, lw := range b.LSTM {
			in := H
			if l == 0 {
				in = F // the positional rows are in stepBias
			}
			fb.wih = append(fb.wih, newMatrix(lw.Wih.Data, in, 4*H))
			fb.whh = append(fb.whh, newMatrix(lw.Whh.Data, H, 4*H))
		}
		for _, c := range b.Couplings {
			fb.first = append(fb.first, newMatrix(c.Layers[0].W.Data, half, U))
			var rest []matrix
			for _, d := range c.Layers[1:] {
				rest = append(rest, newMatrix(d.W.Data, d.In(), d.Out()))
			}
			fb.rest = append(fb.rest, rest)
		}
		f.blocks = append(f.blocks, fb)
	}
	return f, nil
}

// addRow adds row r of the matrix m (with c columns) to dst (length c).
func addRow(dst, m []float32, r, c int) {
	for i, v := range m[r*c : (r+1)*c] {
		dst[i] += v
	}
}

// checkShapes verifies that every tensor of p has the shape ZeroParams
// gives p.Config, so that a hand-built or loaded Params cannot index out of
// range later.
func checkShapes(p *Params) error {
	want := ZeroParams(p.Config).Tensors()
	got := p.Tensors()
	if len(got) != len(want) {
		return fmt.Errorf("model: params have %d tensors, config implies %d", len(got), len(want))
	}
	for i := range want {
		if !equalShape(got[i].Shape, want[i].Shape) || len(got[i].Data) != want[i].Len() {
			return fmt.Errorf("model: tensor %d (%s) has shape %v and %d values, config implies %s %v",
				i, got[i].Name, got[i].Shape, len(got[i].Data), want[i].Name, want[i].Shape)
		}
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Config returns the flow's configuration.
func (f *Flow) Config() Config { return f.cfg }

// Params returns the weights the flow was built from; callers must not
// modify them while the Flow is in use.
func (f *Flow) Params() *Params { return f.p }

// UnitEmbedding returns the V×F embedding rows divided by their norms, the
// targets of the cosine-nearest decoding. Callers must not modify it.
func (f *Flow) UnitEmbedding() []float32 { return f.unit }

// ConfusedToken returns a token whose own unit embedding the decoder maps to another token, and that token;
// (−1, −1) when every token decodes to itself. Training can pull two embeddings together until they are equal
// in float32: from then on the decoder cannot produce one of them, and molecules with it no longer reconstruct.
func (f *Flow) ConfusedToken() (tok, as int) {
	V, F := f.cfg.V, f.cfg.F
	ids := make([]int, V)
	kernels.NearestCosineTo(ids, f.unit, f.unit, make([]float32, V*V), V, F, V)
	for v, id := range ids {
		if id != v {
			return v, id
		}
	}
	return -1, -1
}

// batchOf returns B for a slice holding B·per values, panicking on misuse.
func batchOf(fn, name string, n, per int) int {
	if n%per != 0 {
		panic(fmt.Sprintf("model: %s: len(%s) = %d is not a multiple of %d", fn, name, n, per))
	}
	return n / per
}

func checkLen(fn, name string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("model: %s: len(%s) = %d, want %d", fn, name, got, want))
	}
}

// checkIDs returns an error naming the first id of x (B×T) outside [0, V).
func (f *Flow) checkIDs(x []int) error {
	T := f.cfg.T
	for i, id := range x {
		if id < 0 || id >= f.cfg.V {
			return fmt.Errorf("model: token id %d at sequence %d position %d is outside [0, %d)", id, i/T, i%T, f.cfg.V)
		}
	}
	return nil
}

// EmbedTo writes to v (B×T×F) the unit-norm embeddings E[x]/‖E[x]‖ of the
// token ids x (B×T). It fails on an id outside [0, V).
func (f *Flow) EmbedTo(v []float32, x []int) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("EmbedTo", "x", len(x), T)
	checkLen("EmbedTo", "v", len(v), B*T*F)
	if err := f.checkIDs(x); err != nil {
		return err
	}
	for i, id := range x {
		copy(v[i*F:(i+1)*F], f.unit[id*F:(id+1)*F])
	}
	return nil
}

// EncodeTo writes to z (B×T×F) the latents of the token sequences x (B×T):
// the flow in the density direction applied to the unit-norm embeddings.
// It fails on an id outside [0, V) or when ctx is cancelled.
func (f *Flow) EncodeTo(ctx context.Context, z []float32, x []int, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("EncodeTo", "x", len(x), T)
	checkLen("EncodeTo", "z", len(z), B*T*F)
	if err := f.checkIDs(x); err != nil {
		return err
	}
	return f.forward(ctx, z, nil, nil, x, B, ws)
}

// ForwardTo applies the flow in the density direction to the continuous
// embeddings v (B×T×F), writing the latents z (B×T×F) and, when logDet is
// not nil, logDet (B×T): for each position the sum over blocks and couplings
// of log|∂z/∂v| of that position's scalars (the reference's −LD_t). z may
// not alias v. It fails only when ctx is cancelled.
func (f *Flow) ForwardTo(ctx context.Context, z []float32, logDet []float64, v []float32, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("ForwardTo", "v", len(v), T*F)
	checkLen("ForwardTo", "z", len(z), B*T*F)
	if logDet != nil {
		checkLen("ForwardTo", "logDet", len(logDet), B*T)
	}
	return f.forward(ctx, z, logDet, v, nil, B, ws)
}

// LogProbTo writes to logp (B) the log density log p(v) of the unit-norm
// embeddings of the sequences x (B×T) under the flow, and, when logpPos is
// not nil, the per-position terms (B×T) that sum to it:
// Σ_i log N(z_{t,i}; 0, 1) + log|∂z_t/∂v_t| (reference: lstm_flow.py,
// AFPrior, which returns the per-position value). Sums run in float64.
func (f *Flow) LogProbTo(ctx context.Context, logp, logpPos []float64, x []int, ws *Workspace) error {
	T := f.cfg.T
	B := batchOf("LogProbTo", "x", len(x), T)
	if err := f.checkIDs(x); err != nil {
		return err
	}
	v := make([]float32, B*T*f.cfg.F)
	if err := f.EmbedTo(v, x); err != nil {
		return err
	}
	return f.LogDensityTo(ctx, logp, logpPos, v, ws)
}

// LogDensityTo is LogProbTo for continuous embeddings v (B×T×F), such as the
// noisy v̂ = v + σ·n of training.
func (f *Flow) LogDensityTo(ctx context.Context, logp, logpPos []float64, v []float32, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("LogDensityTo", "v", len(v), T*F)
	checkLen("LogDensityTo", "logp", len(logp), B)
	if logpPos != nil {
		checkLen("LogDensityTo", "logpPos", len(logpPos), B*T)
	}
	z := make([]float32, B*T*F)
	ld := make([]float64, B*T)
	if err := f.forward(ctx, z, ld, v, nil, B, ws); err != nil {
		return err
	}
	logNorm := -0.5 * math.Log(2*math.Pi) * float64(F)
	for b := 0; b < B; b++ {
		sum := 0.0
		for t := 0; t < T; t++ {
			i := b*T + t
			lp := logNorm + ld[i]
			for _, e := range z[i*F : (i+1)*F] {
				lp -= 0.5 * float64(e) * float64(e)
			}
			if logpPos != nil {
				logpPos[i] = lp
			}
			sum += lp
		}
		logp[b] = sum
	}
	return nil
}

// InverseTo applies the flow in the generation direction to the latents z
// (B×T×F), writing the data-side vectors v (B×T×F): blocks in reverse order,
// each sequential over positions, couplings inverted in reverse order with
// the float64 cubic. v may not alias z. It fails only when ctx is cancelled.
func (f *Flow) InverseTo(ctx context.Context, v []float32, z []float32, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("InverseTo", "z", len(z), T*F)
	checkLen("InverseTo", "v", len(v), B*T*F)
	return f.inverse(ctx, nil, v, z, B, ws)
}

// DecodeTo writes to x (B×T) the token ids of the latents z (B×T×F): the
// inverse flow, then the cosine-nearest embedding row per position, then
// every position at or after the first <stop> (id 1) forced to <stop>, as in
// the reference's decoder. decode(encode(x)) == x for every x in which
// nothing but <stop> follows the first <stop>. It fails only when ctx is
// cancelled.
func (f *Flow) DecodeTo(ctx context.Context, x []int, z []float32, ws *Workspace) error {
	T, F := f.cfg.T, f.cfg.F
	B := batchOf("DecodeTo", "z", len(z), T*F)
	checkLen("DecodeTo", "x", len(x), B*T)
	return f.inverse(ctx, x, nil, z, B, ws)
}

// StopID is the id of <stop>, which also pads every sequence.
const StopID = 1

// ForceStop sets every position of each sequence in x (B×T) at or after its
// first <stop> to <stop>.
func ForceStop(x []int, T int) {
	for b := 0; b+T <= len(x); b += T {
		seq := x[b : b+T]
		stopped := false
		for t, id := range seq {
			if id == StopID {
				stopped = true
			}
			if stopped {
				seq[t] = StopID
			}
		}
	}
}

// DropStopped records the tokens ids decoded at position t for the live sequences rows[:len(ids)] of x (B×T).
// A sequence whose token is <stop> gets <stop> at every later position, as ForceStop would, and leaves the batch;
// the rows that go on move down in order, in rows and in each of states (rows of w values), and their count is
// returned. The decoders that stop at <stop> (Flow.DecodeTo, engine/ort's) share it.
func DropStopped(x []int, T, t int, ids, rows []int, w int, states [][]float32) int {
	live := 0
	for i, id := range ids {
		s := rows[i] * T
		x[s+t] = id
		if id == StopID {
			for u := t + 1; u < T; u++ {
				x[s+u] = StopID
			}
			continue
		}
		if live != i {
			rows[live] = rows[i]
			for _, st := range states {
				copy(st[live*w:(live+1)*w], st[i*w:(i+1)*w])
			}
		}
		live++
	}
	return live
}

// chunking: each worker takes whole chunks of sequences from a shared
// counter, so both cores stay busy whatever B is (above one chunk).
const (
	maxEncodeChunk = 64  // sequences; bounds the T×chunk×4H gate buffer
	maxDecodeChunk = 256 // sequences; decode buffers are chunk×(4H + C·U)
)

// parallel runs fn(w, b0, b1) over [0, B) in chunks of at most maxChunk
// sequences on ws's workers, each with its own chunk workspace, and returns
// ctx's error if it was cancelled.
func (f *Flow) parallel(ctx context.Context, ws *Workspace, B, maxChunk int, fn func(cw *chunkWork, b0, b1 int)) error {
	if ws == nil {
		ws = &Workspace{}
	}
	workers := ws.workers()
	chunk := (B + workers - 1) / workers
	chunk = max(1, min(chunk, maxChunk))
	nChunks := (B + chunk - 1) / chunk
	workers = min(workers, nChunks)
	ws.ensure(workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		cw := ws.chunks[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if ctx.Err() != nil {
					return
				}
				c := int(next.Add(1)) - 1
				if c >= nChunks {
					return
				}
				b0 := c * chunk
				fn(cw, b0, min(B, b0+chunk))
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// Workspace holds the scratch buffers of Flow's batch methods, so that
// repeated calls do not allocate. Buffers grow to the largest shape seen and
// are kept. The zero value is ready to use; a nil *Workspace allocates per
// call. A Workspace must not be used by two calls at the same time.
type Workspace struct {
	// Workers is the number of goroutines a call uses; 0 means
	// runtime.GOMAXPROCS(0).
	Workers int

	chunks []*chunkWork
}

func (ws *Workspace) workers() int {
	if ws.Workers > 0 {
		return ws.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (ws *Workspace) ensure(n int) {
	for len(ws.chunks) < n {
		ws.chunks = append(ws.chunks, &chunkWork{})
	}
}

// chunkWork is one worker's scratch space.
type chunkWork struct {
	y      []float32 // T×n×F time-major data being transformed
	gates  []float32 // (T−1)×n×4H encode, n×4H decode
	hs     [2][]float32
	cell   []float32
	ctxp   []float32 // rows×(C·U) context part of the coupling nets' first layers
	cond   []float32 // rows×F/2
	hidA   []float32 // rows×U
	hidB   []float32 // rows×U
	raw    []float32 // rows×(F/2·NumParams)
	ld     []float64 // T×n per-position log-det
	state  []float32 // decode: L×2×n×H
	ids    []int     // T×n
	scores []float32 // rows×V
	rows   []int     // decodeStopping: the chunk's sequence of each live row
}

// grow returns buf resliced to n, reallocating only when it is too small.
func grow[E any](buf []E, n int) []E {
	if cap(buf) < n {
		return make([]E, n)
	}
	return buf[:n]
}

// BlockConstants are the input-independent values of one block that Flow
// computes once from the weights; exporters to other backends (ONNX) use
// them so that every backend starts from the same float32 numbers.
type BlockConstants struct {
	// H0 and C0 are the initial LSTM states FF(c_0), one slice of length H
	// per LSTM layer.
	H0, C0 [][]float32
	// StepBias is T×4H: row t is bih + bhh of LSTM layer 0 plus the rows of
	// its Wih that the one-hot positional code c_{t+1} selects (c_T = 0).
	StepBias []float32
}

// Constants returns block k's precomputed values. Callers must not modify
// them.
func (f *Flow) Constants(k int) BlockConstants {
	b := &f.blocks[k]
	return BlockConstants{H0: b.h0, C0: b.c0, StepBias: b.stepBias}
}
