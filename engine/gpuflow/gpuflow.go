//go:build cgo

package gpuflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/model"
)

// Engine is an open GPU with cuBLAS and the compiled kernels; LatentCodecs for any number of flows share it. Open
// it once per program (compiling the kernels takes about a second) and Close it last.
type Engine struct {
	dev  *cuda.Device
	blas *cuda.BLAS
	ks   map[string]*cuda.Kernel
}

// Open opens GPU ordinal with the libraries found through env (cuda.SearchDirs) and compiles the embedded
// kernels for it.
func Open(env cuda.Env, ordinal int) (*Engine, error) {
	n, err := cuda.LoadNVRTC(env)
	if err != nil {
		return nil, fmt.Errorf("gpuflow: %w", err)
	}
	d, err := cuda.OpenDevice(env, ordinal)
	if err != nil {
		return nil, fmt.Errorf("gpuflow: %w", err)
	}
	b, err := d.OpenBLAS(env)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gpuflow: %w", err)
	}
	ks, err := d.LoadKernels(n)
	if err != nil {
		b.Close()
		d.Close()
		return nil, fmt.Errorf("gpuflow: %w", err)
	}
	return &Engine{dev: d, blas: b, ks: ks}, nil
}

// Device describes the GPU.
func (e *Engine) Device() cuda.DeviceInfo { return e.dev.Info }

// Close releases cuBLAS and the GPU; LatentCodecs of the engine must be closed first.
func (e *Engine) Close() error {
	return errors.Join(e.blas.Close(), e.dev.Close())
}

// LatentCodec encodes and decodes with one flow's weights on the GPU. It is not safe for concurrent use.
type LatentCodec struct {
	e       *Engine
	flow    *model.Flow
	cfg     model.Config
	unit    cuda.Ptr
	blocks  []gpuBlock
	owned   []cuda.Ptr // every allocation, freed by Close
	batch   int        // sequences per pass on the device; the buffers below hold batch rows
	buf     buffers
	enc     encBuffers
	zHost   []float32 // T×batch×F, time-major
	idsHost []int32
}

// gpuBlock holds one block's weights on the device, in model.Flow's inference layout.
type gpuBlock struct {
	h0, c0   []cuda.Ptr // per LSTM layer, [H]
	stepBias cuda.Ptr   // [T, 4H]: layer 0's constant gate part per step
	bias     []cuda.Ptr // per LSTM layer ≥ 1, [4H]; bias[0] unused
	wih, whh []cuda.Ptr // layer 0: Wih's first F rows [F, 4H]; layers ≥ 1 [H, 4H]; whh [H, 4H]
	ctxW     cuda.Ptr   // [H, C·U]
	ctxB     cuda.Ptr   // [C·U]
	coup     []gpuCoupling
}

// gpuCoupling is one coupling net: the first layer's rows that meet the conditioning half, then the deeper
// layers and the output layer with their biases.
type gpuCoupling struct {
	w0cond cuda.Ptr   // [half, U]
	w, b   []cuda.Ptr // layers 1..depth−1: [U, U], [U]; then the output layer [U, half·np], [half·np]
}

// scratch is a coupling net's working memory for some number of rows.
type scratch struct {
	ctxp       cuda.Ptr // [rows, C·U]: every coupling's context part of its first layer, with its bias
	cond       cuda.Ptr // [rows, half]
	hidA, hidB cuda.Ptr // [rows, U]
	raw        cuda.Ptr // [rows, half·np]
}

// buffers are the decoder's working memory for batch sequences.
type buffers struct {
	y         cuda.Ptr // [T, batch, F], time-major
	h, c      []cuda.Ptr
	tc, gates cuda.Ptr // [batch, H], [batch, 4H]
	s         scratch  // rows = batch
	ids       cuda.Ptr // [T, batch] int32
}

// encBuffers are the encoder's, for encBatch sequences; allocated at the first EncodeTo.
type encBuffers struct {
	y      cuda.Ptr   // [T, n, F]
	hs     []cuda.Ptr // per layer [T, n, H]: slot 0 the initial h, slot t+1 the output of step t
	c, tc  cuda.Ptr   // [n, H]
	gates  cuda.Ptr   // [T−1, n, 4H]
	s      scratch    // rows = T·n
	loaded bool
}

// encBatch is the number of sequences encoded per pass: the encoder keeps every position's gates and
// coupling activations, T times the decoder's per sequence.
const encBatch = 512

var _ model.LatentCodec = (*LatentCodec)(nil)

// NewLatentCodec uploads flow's weights to the engine's GPU. batch is the number of sequences decoded per pass (0:
// DefaultBatch).
func (e *Engine) NewLatentCodec(flow *model.Flow, batch int) (*LatentCodec, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	c := &LatentCodec{e: e, flow: flow, cfg: flow.Config(), batch: batch}
	if err := c.upload(); err != nil {
		c.Close()
		return nil, fmt.Errorf("gpuflow: %w", err)
	}
	return c, nil
}

// alloc uploads src (or allocates n floats of zeros when src is nil) and records the allocation.
func (c *LatentCodec) alloc(src []float32, n int) (cuda.Ptr, error) {
	if src != nil {
		n = len(src)
	}
	p, err := c.e.dev.Alloc(4 * max(1, n))
	if err != nil {
		return 0, err
	}
	c.owned = append(c.owned, p)
	if src == nil {
		src = make([]float32, max(1, n))
	}
	return p, c.e.dev.Upload(p, src)
}

// uploader allocates a LatentCodec's device memory, keeping the first error: after one, it allocates nothing more,
// so that a run of allocations is checked once.
type uploader struct {
	c   *LatentCodec
	err error
}

// up uploads src (n floats of zeros when src is nil) to new memory the LatentCodec owns.
func (u *uploader) up(src []float32, n int) cuda.Ptr {
	if u.err != nil {
		return 0
	}
	var p cuda.Ptr
	p, u.err = u.c.alloc(src, n)
	return p
}

// newScratch allocates a coupling scratch for rows rows through up.
func (c *LatentCodec) newScratch(up func([]float32, int) cuda.Ptr, rows int) scratch {
	cfg := c.cfg
	half, U := cfg.Half(), cfg.U
	return scratch{ctxp: up(nil, rows*cfg.Couplings*U), cond: up(nil, rows*half), hidA: up(nil, rows*U),
		hidB: up(nil, rows*U), raw: up(nil, rows*half*cfg.Transform.NumParams())}
}

// allocEnc allocates the encoder's buffers.
func (c *LatentCodec) allocEnc() error {
	cfg := c.cfg
	T, F, H, n := cfg.T, cfg.F, cfg.H, encBatch
	u := &uploader{c: c}
	up := u.up
	e := &c.enc
	e.y = up(nil, T*n*F)
	for range cfg.LSTMLayers {
		e.hs = append(e.hs, up(nil, T*n*H))
	}
	e.c, e.tc = up(nil, n*H), up(nil, n*H)
	e.gates = up(nil, max(1, T-1)*n*4*H)
	e.s = c.newScratch(up, T*n)
	e.loaded = u.err == nil
	return u.err
}

func (c *LatentCodec) upload() error {
	cfg := c.cfg
	T, F, H, L, C, U := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.U
	half := cfg.Half()
	p := c.flow.Params()
	u := &uploader{c: c}
	up := u.up
	c.unit = up(c.flow.UnitEmbedding(), 0)
	for k, blk := range p.Blocks {
		k0 := c.flow.Constants(k)
		var g gpuBlock
		for l := 0; l < L; l++ {
			g.h0 = append(g.h0, up(k0.H0[l], 0))
			g.c0 = append(g.c0, up(k0.C0[l], 0))
			lw := blk.LSTM[l]
			if l == 0 {
				g.wih = append(g.wih, up(lw.Wih.Data[:F*4*H], 0))
				g.bias = append(g.bias, 0)
			} else {
				g.wih = append(g.wih, up(lw.Wih.Data, 0))
				bs := make([]float32, 4*H)
				for i := range bs {
					bs[i] = lw.Bih.Data[i] + lw.Bhh.Data[i]
				}
				g.bias = append(g.bias, up(bs, 0))
			}
			g.whh = append(g.whh, up(lw.Whh.Data, 0))
		}
		g.stepBias = up(k0.StepBias[:T*4*H], 0)
		// The context rows of every coupling's first layer side by side, as model.NewFlow builds ctxW.
		ctxW, ctxB := make([]float32, H*C*U), make([]float32, C*U)
		for j, cp := range blk.Couplings {
			w := cp.Layers[0].W.Data // (half+H)×U
			for r := 0; r < H; r++ {
				copy(ctxW[r*C*U+j*U:r*C*U+(j+1)*U], w[(half+r)*U:(half+r+1)*U])
			}
			copy(ctxB[j*U:(j+1)*U], cp.Layers[0].B.Data)
			gc := gpuCoupling{w0cond: up(w[:half*U], 0)}
			for _, ly := range cp.Layers[1:] {
				gc.w = append(gc.w, up(ly.W.Data, 0))
				gc.b = append(gc.b, up(ly.B.Data, 0))
			}
			g.coup = append(g.coup, gc)
		}
		g.ctxW, g.ctxB = up(ctxW, 0), up(ctxB, 0)
		c.blocks = append(c.blocks, g)
	}
	n := c.batch
	b := &c.buf
	b.y = up(nil, T*n*F)
	for l := 0; l < L; l++ {
		b.h = append(b.h, up(nil, n*H))
		b.c = append(b.c, up(nil, n*H))
	}
	b.tc, b.gates = up(nil, n*H), up(nil, n*4*H)
	b.s = c.newScratch(up, n)
	b.ids = up(nil, T*n) // int32, the same size as float32
	if u.err != nil {
		return u.err
	}
	if len(p.Blocks) > 0 && len(p.Blocks[0].Couplings) > 0 && len(p.Blocks[0].Couplings[0].Layers) != cfg.CouplingDepth+1 {
		return fmt.Errorf("coupling nets have %d layers, config says %d", len(p.Blocks[0].Couplings[0].Layers), cfg.CouplingDepth+1)
	}
	return nil
}

// Backend names the implementation.
func (c *LatentCodec) Backend() string { return "cuda" }

// Close frees the flow's device memory; the engine stays open.
func (c *LatentCodec) Close() error {
	var errs []error
	for _, p := range c.owned {
		errs = append(errs, c.e.dev.Free(p))
	}
	c.owned = nil
	return errors.Join(errs...)
}

// EncodeTo writes the latents (B×T×F) of the token ids x (B×T) into z, as model.Flow.EncodeTo computes them.
func (c *LatentCodec) EncodeTo(ctx context.Context, z []float32, x []int) error {
	T, F, V := c.cfg.T, c.cfg.F, c.cfg.V
	if len(x)%T != 0 || len(z) != len(x)/T*T*F {
		return fmt.Errorf("gpuflow: encode: %d token ids and %d latent values for T = %d, F = %d", len(x), len(z), T, F)
	}
	for i, id := range x {
		if id < 0 || id >= V {
			return fmt.Errorf("gpuflow: encode: sequence %d, position %d: token id %d outside [0, %d)", i/T, i%T, id, V)
		}
	}
	if !c.enc.loaded {
		if err := c.allocEnc(); err != nil {
			return fmt.Errorf("gpuflow: encode: %w", err)
		}
	}
	B := len(x) / T
	for b0 := 0; b0 < B; b0 += encBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		b1 := min(B, b0+encBatch)
		if err := c.encodePass(ctx, z[b0*T*F:b1*T*F], x[b0*T:b1*T], b1-b0); err != nil {
			return fmt.Errorf("gpuflow: encode: %w", err)
		}
	}
	return nil
}

// encodePass encodes n ≤ encBatch sequences: their unit embeddings, time-major, through every block.
func (c *LatentCodec) encodePass(ctx context.Context, z []float32, x []int, n int) error {
	T, F := c.cfg.T, c.cfg.F
	unit := c.flow.UnitEmbedding()
	c.zHost = grow(c.zHost, T*n*F)
	for bi := 0; bi < n; bi++ {
		for t := 0; t < T; t++ {
			id := x[bi*T+t]
			copy(c.zHost[(t*n+bi)*F:(t*n+bi+1)*F], unit[id*F:(id+1)*F])
		}
	}
	d := c.e.dev
	if err := d.Upload(c.enc.y, c.zHost); err != nil {
		return err
	}
	for k := range c.blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.forwardBlock(k, n); err != nil {
			return fmt.Errorf("block %d: %w", k, err)
		}
	}
	if err := d.Download(c.zHost, c.enc.y); err != nil {
		return err
	}
	swapAxes(z, c.zHost, T, n, F)
	return nil
}

// forwardBlock is model.Flow.forwardBlock on the device for the n sequences of enc.y: the LSTM over all
// positions with teacher forcing (one product for every step's input, then the recurrence step by step), the
// context product for all rows, then the couplings on all rows at once.
func (c *LatentCodec) forwardBlock(k, n int) error {
	cfg := c.cfg
	T, F, H, L, C, U := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.U
	g, e, ks, bl := &c.blocks[k], &c.enc, c.e.ks, c.e.blas
	grid := func(m int) cuda.Grid { return cuda.GridFor(m, 256) }
	steps := T - 1
	var prev cuda.Ptr
	for l := 0; l < L; l++ {
		s := e.hs[l]
		if err := ks["fill_rows"].Launch(grid(n*H), s, g.h0[l], n, H); err != nil {
			return err
		}
		if err := ks["fill_rows"].Launch(grid(n*H), e.c, g.c0[l], n, H); err != nil {
			return err
		}
		if steps == 0 {
			continue
		}
		in, inW := e.y, F
		if l > 0 {
			in, inW = off(prev, n*H), H // the outputs of steps 0..T−2
		}
		if err := bl.Gemm(false, false, 1, in, steps*n, inW, g.wih[l], inW, 4*H, 0, e.gates); err != nil {
			return err
		}
		for t := 0; t < steps; t++ {
			gt := off(e.gates, t*n*4*H)
			if err := bl.Gemm(false, false, 1, off(s, t*n*H), n, H, g.whh[l], H, 4*H, 1, gt); err != nil {
				return err
			}
			bias := g.bias[l]
			if l == 0 {
				bias = off(g.stepBias, t*4*H)
			}
			if err := ks["lstm_cell_step"].Launch(grid(n*H), gt, bias, 0, e.c, e.c, e.tc, off(s, (t+1)*n*H), n, H); err != nil {
				return err
			}
		}
		prev = s
	}
	rows := T * n
	if err := bl.Gemm(false, false, 1, e.hs[L-1], rows, H, g.ctxW, H, C*U, 0, e.s.ctxp); err != nil {
		return err
	}
	if err := ks["bias_act"].Launch(grid(rows*C*U), e.s.ctxp, g.ctxB, rows, C*U, 0); err != nil {
		return err
	}
	for j := 0; j < C; j++ {
		if err := c.coupling(k, j, e.y, rows, &e.s, true); err != nil {
			return err
		}
	}
	return nil
}

// DecodeTo writes to x (B×T) the token ids of the latents z (B×T×F), as model.Flow.DecodeTo computes them:
// the inverse flow, the cosine-nearest embedding per position, <stop> forced after the first <stop>. The GPU's
// sums run in another order than the CPU's, so a position whose two best tokens are within float32 rounding of
// each other may decode differently (the parity test measures how often).
func (c *LatentCodec) DecodeTo(ctx context.Context, x []int, z []float32) error {
	T := c.cfg.T
	B, err := c.batchOf("decode", z)
	if err != nil {
		return err
	}
	if len(x) != B*T {
		return fmt.Errorf("gpuflow: decode: %d token slots for %d sequences of T = %d", len(x), B, T)
	}
	if err := c.run(ctx, x, nil, z, B); err != nil {
		return fmt.Errorf("gpuflow: decode: %w", err)
	}
	model.ForceStop(x, T)
	return nil
}

// InverseTo writes to v (B×T×F) the data-side vectors of the latents z (B×T×F), as model.Flow.InverseTo.
func (c *LatentCodec) InverseTo(ctx context.Context, v, z []float32) error {
	B, err := c.batchOf("inverse", z)
	if err != nil {
		return err
	}
	if len(v) != len(z) {
		return fmt.Errorf("gpuflow: inverse: %d values for %d latent values", len(v), len(z))
	}
	if err := c.run(ctx, nil, v, z, B); err != nil {
		return fmt.Errorf("gpuflow: inverse: %w", err)
	}
	return nil
}

func (c *LatentCodec) batchOf(what string, z []float32) (int, error) {
	TF := c.cfg.T * c.cfg.F
	if len(z)%TF != 0 {
		return 0, fmt.Errorf("gpuflow: %s: %d latent values is not a multiple of T·F = %d", what, len(z), TF)
	}
	return len(z) / TF, nil
}

// run inverts the B latents z in passes of at most c.batch sequences, writing tokens to x and vectors to v
// where not nil.
func (c *LatentCodec) run(ctx context.Context, x []int, v, z []float32, B int) error {
	T, F := c.cfg.T, c.cfg.F
	for b0 := 0; b0 < B; b0 += c.batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		b1 := min(B, b0+c.batch)
		var xs []int
		var vs []float32
		if x != nil {
			xs = x[b0*T : b1*T]
		}
		if v != nil {
			vs = v[b0*T*F : b1*T*F]
		}
		if err := c.pass(ctx, xs, vs, z[b0*T*F:b1*T*F], b1-b0); err != nil {
			return err
		}
	}
	return nil
}

// pass inverts n ≤ batch sequences.
func (c *LatentCodec) pass(ctx context.Context, x []int, v, z []float32, n int) error {
	T, F := c.cfg.T, c.cfg.F
	c.zHost = grow(c.zHost, T*n*F)
	swapAxes(c.zHost, z, n, T, F)
	d := c.e.dev
	if err := d.Upload(c.buf.y, c.zHost); err != nil {
		return err
	}
	for k := len(c.blocks) - 1; k >= 0; k-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.inverseBlock(k, n); err != nil {
			return fmt.Errorf("block %d: %w", k, err)
		}
	}
	if v != nil {
		if err := d.Download(c.zHost, c.buf.y); err != nil {
			return err
		}
		swapAxes(v, c.zHost, T, n, F)
	}
	if x == nil {
		return nil
	}
	if err := c.e.ks["nearest_token"].Launch(cuda.GridFor(T*n, 128), c.buf.ids, c.buf.y, c.unit, T*n, c.cfg.V, F); err != nil {
		return err
	}
	c.idsHost = grow(c.idsHost, T*n)
	if err := d.DownloadInt32(c.idsHost, c.buf.ids); err != nil {
		return err
	}
	for bi := 0; bi < n; bi++ {
		for t := 0; t < T; t++ {
			x[bi*T+t] = int(c.idsHost[t*n+bi])
		}
	}
	return nil
}

// off returns p advanced by i float32s.
func off(p cuda.Ptr, i int) cuda.Ptr { return p + cuda.Ptr(4*i) }

// inverseBlock is model.Flow.inverseBlock on the device for the first n rows of every position of buf.y.
func (c *LatentCodec) inverseBlock(k, n int) error {
	cfg := c.cfg
	T, F, H, L, C, U := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.Couplings, cfg.U
	g, b, ks, bl := &c.blocks[k], &c.buf, c.e.ks, c.e.blas
	grid := func(m int) cuda.Grid { return cuda.GridFor(m, 256) }
	for l := 0; l < L; l++ {
		if err := ks["fill_rows"].Launch(grid(n*H), b.h[l], g.h0[l], n, H); err != nil {
			return err
		}
		if err := ks["fill_rows"].Launch(grid(n*H), b.c[l], g.c0[l], n, H); err != nil {
			return err
		}
	}
	for t := 0; t < T; t++ {
		yt := off(b.y, t*n*F)
		if err := bl.Gemm(false, false, 1, b.h[L-1], n, H, g.ctxW, H, C*U, 0, b.s.ctxp); err != nil {
			return err
		}
		if err := ks["bias_act"].Launch(grid(n*C*U), b.s.ctxp, g.ctxB, n, C*U, 0); err != nil {
			return err
		}
		for j := C - 1; j >= 0; j-- {
			if err := c.coupling(k, j, yt, n, &b.s, false); err != nil {
				return err
			}
		}
		if t+1 == T {
			break
		}
		for l := 0; l < L; l++ {
			in, inW := yt, F
			bias := off(g.stepBias, t*4*H)
			if l > 0 {
				in, inW, bias = b.h[l-1], H, g.bias[l]
			}
			if err := bl.Gemm(false, false, 1, in, n, inW, g.wih[l], inW, 4*H, 0, b.gates); err != nil {
				return err
			}
			if err := bl.Gemm(false, false, 1, b.h[l], n, H, g.whh[l], H, 4*H, 1, b.gates); err != nil {
				return err
			}
			if err := ks["lstm_cell_step"].Launch(grid(n*H), b.gates, bias, 0, b.c[l], b.c[l], b.tc, b.h[l], n, H); err != nil {
				return err
			}
		}
	}
	return nil
}

// coupling applies coupling j of block k in place to the rows rows of y [rows, F], forward (data to base) or
// inverse (model.Flow.coupling), reading the context part of its first layer from s.ctxp.
func (c *LatentCodec) coupling(k, j int, y cuda.Ptr, rows int, s *scratch, forward bool) error {
	cfg := c.cfg
	F, C, U, half := cfg.F, cfg.Couplings, cfg.U, cfg.Half()
	np := cfg.Transform.NumParams()
	ks, bl := c.e.ks, c.e.blas
	gc := &c.blocks[k].coup[j]
	grid := func(m int) cuda.Grid { return cuda.GridFor(m, 256) }
	condOff, transOff := 0, half
	if model.Reversed(k, j) {
		condOff, transOff = half, 0
	}
	if err := ks["gather_cols"].Launch(grid(rows*half), s.cond, y, rows, F, condOff, half); err != nil {
		return err
	}
	if err := ks["gather_cols"].Launch(grid(rows*U), s.hidA, s.ctxp, rows, C*U, j*U, U); err != nil {
		return err
	}
	if err := bl.Gemm(false, false, 1, s.cond, rows, half, gc.w0cond, half, U, 1, s.hidA); err != nil {
		return err
	}
	if err := ks["relu"].Launch(grid(rows*U), s.hidA, int64(rows*U)); err != nil {
		return err
	}
	cur, other := s.hidA, s.hidB
	last := len(gc.w) - 1
	for d := 0; d < last; d++ {
		if err := bl.Gemm(false, false, 1, cur, rows, U, gc.w[d], U, U, 0, other); err != nil {
			return err
		}
		if err := ks["bias_act"].Launch(grid(rows*U), other, gc.b[d], rows, U, 1); err != nil {
			return err
		}
		cur, other = other, cur
	}
	if err := bl.Gemm(false, false, 1, cur, rows, U, gc.w[last], U, half*np, 0, s.raw); err != nil {
		return err
	}
	if err := ks["bias_act"].Launch(grid(rows*half*np), s.raw, gc.b[last], rows, half*np, 0); err != nil {
		return err
	}
	var kernel string
	switch {
	case cfg.Transform == model.Affine && forward:
		kernel = "affine_fwd_cols"
	case cfg.Transform == model.Affine:
		kernel = "affine_inv"
	case forward:
		kernel = "nlsq_fwd_cols"
	default:
		kernel = "nlsq_inv"
	}
	return ks[kernel].Launch(grid(rows*half), y, s.raw, rows, F, transOff, half)
}

// swapAxes writes src [a, b, f] to dst [b, a, f]: batch-major sequences to the device's time-major layout
// (a = sequences, b = positions) and back (a = positions, b = sequences).
func swapAxes(dst, src []float32, a, b, f int) {
	for i := 0; i < a; i++ {
		for j := 0; j < b; j++ {
			copy(dst[(j*a+i)*f:(j*a+i+1)*f], src[(i*b+j)*f:(i*b+j+1)*f])
		}
	}
}

func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
