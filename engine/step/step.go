package step

import (
	"errors"
	"fmt"
	"math"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// Options configure a Step. The zero value trains every parameter.
type Options struct {
	// FreezeEmbeddings keeps the token embeddings as they are: their
	// gradient stays zero (so it adds nothing to the norm) and Apply leaves
	// them and their moments alone.
	FreezeEmbeddings bool
	// State, when not nil, holds the parameters, gradients and Adam's
	// moments the step trains (shared by the steps of every batch size of
	// one trainer); nil: the step allocates its own.
	State *State
}

// Result describes one step's forward and backward pass.
type Result struct {
	// Loss is Σ_r Wt_r·(nll_r + λ·sim_r), summed on the host in float64.
	Loss float64
	// NLL and Sim are the means of nll and sim over the rows of nonzero
	// weight.
	NLL, Sim float64
	// GradNorm is the L2 norm of the gradient of every parameter.
	GradNorm float64
	// Rejected counts the rows whose noise was rejected NoiseRounds times
	// (Train's draws; 0 for Run's).
	Rejected int
}

// State is what a trainer keeps on a Device from its first step to its
// last: the parameters, their gradients and Adam's moments, each one flat
// buffer holding the tensors of model.Params.Tensors in that order (so the
// norm and Adam are one call each). The host's copies are written only when
// asked (ParamsTo, MomentsTo): for a checkpoint, a validation or the end.
type State struct {
	dev                 Device
	cfg                 model.Config
	sizes, offs         []int // of each tensor in the flat buffers
	total               int
	params, grads, m, v Buf
}

// NewState allocates the training state of cfg on dev, zero until
// SetParams and SetMoments.
func NewState(dev Device, cfg model.Config) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := &State{dev: dev, cfg: cfg}
	for _, t := range model.ZeroParams(cfg).Tensors() {
		st.offs = append(st.offs, st.total)
		st.sizes = append(st.sizes, t.Len())
		st.total += t.Len()
	}
	st.params, st.grads = dev.Alloc(st.total), dev.Alloc(st.total)
	st.m, st.v = dev.Alloc(st.total), dev.Alloc(st.total)
	return st, nil
}

// Close frees the state's buffers.
func (st *State) Close() {
	for _, b := range []Buf{st.params, st.grads, st.m, st.v} {
		st.dev.Free(b)
	}
	*st = State{}
}

// Step is the SeqFlow training step for one config and B sequences of T
// positions, on a Device: it holds the parameters, their gradients, Adam's
// moments and every activation the backward pass reads, in buffers
// allocated once. Run computes the loss and the gradients of a Batch;
// Apply takes the Adam step. A Step is not safe for concurrent use.
//
// Parameters, gradients and moments are each one flat buffer holding the
// tensors of model.Params.Tensors in that order, so the norm and Adam are
// one call each.
type Step struct {
	dev         Device
	cfg         model.Config
	opts        Options
	B, S, N     int
	st          *State
	ownState    bool
	sizes, offs []int // the state's
	total       int

	params, grads, m, v Buf // the state's
	embed, dEmbed       Buf
	blocks              []block

	// Inputs of the current batch.
	tok, neg, pos IntBuf
	lens          IntBuf // [B], Train's
	acc           Acc    // [AccSlots]
	pos0          Buf    // [B, P]
	eps, wt       Buf    // [N, F], [N]
	negWt, simC   Buf    // −Wt and λ·Wt [N]
	dropout       bool

	// Forward results.
	en, ex, ej, v0 Buf // [V, F], [N, F] ×3 (v0 = ex + eps, the flow's input)
	sim, nll, ld   Buf // [N]
	yOut           Buf // [N, F], the last block's output

	// Backward scratch.
	dy, dlo, dhi, dOut Buf // [N, F], [N, half] ×2, [N, half+1]
	dh                 [2]Buf
	dctx               Buf // [N, H]
	dG, dhs, dcs, dX   Buf // [S·B, 4H], [B, H] ×2, [S·B, max(F, H)]
	dLow               Buf // [S·B, H], a lower layer's output gradient
	dhq, dcq, dst      Buf // [B, L·H] ×2, [B, 2·L·H]
	dhid               Buf // [B, H]
	dEn, dex, dej      Buf // [V, F], [N, F] ×2

	host struct { // staging for uploads and downloads
		pos         []int32
		pos0        []float32
		negWt, simC []float32 // −Wt, λ·Wt
		nll, sim    []float32
		lens        []int
		acc         []float64
	}
}

// dense is a Dense layer's views.
type dense struct {
	w, b, dw, db Buf
	in, out      int
}

// lstmLayer is one LSTM layer's views and saved activations.
type lstmLayer struct {
	in                     int
	wih, whh, bih, bhh     Buf // layer 0: wih is Wih's token rows [F, 4H]
	dwih, dwhh, dbih, dbhh Buf
	wpos, dwpos            Buf // layer 0: Wih's positional rows [P, 4H]
	bias                   Buf // [4H] bih + bhh; layer 0: the positional gates [S·B, 4H]
	bsum                   Buf // [4H] bih + bhh
	act, c, tc             Buf // [S·B, 4H], [S·B, H] ×2
	out                    Buf // [(S+1)·B, H]: h0, then h_1..h_S
	c0                     Buf // [B, H]
	x                      Buf // the input [S·B, in]
	mask, xNext            Buf // l < L−1 with dropout: the mask of the output, and the masked output [S·B, H]
}

// coupling is one coupling's views and saved activations.
type coupling struct {
	layers  []dense // layer 0's w is W0's conditioning rows [half, U]
	w0x     Buf     // W0's context rows [H, U]
	dw0x    Buf
	rev     bool
	hs      []Buf // post-activation outputs [N, width], the last o
	out     Buf   // [N, half+1]
	u       Buf   // [N, half]
	cond, w Buf   // the inputs (views of earlier halves)
}

// block is one block's views and saved activations.
type block struct {
	init          [2]dense
	lstm          []lstmLayer
	cps           []coupling
	y             Buf // the block's input [N, F]
	hid, st       Buf // [B, H], [B, 2·L·H]
	hq, cq        Buf // [B, L·H] initial h and c of every layer
	ctx           Buf // [N, H] the context: the top layer's output, or ctxM
	ctxMask, ctxM Buf // [N, H] with dropout: the mask and the masked output
	lo, hi, yNext Buf // [N, half] ×2, [N, F]
}

// New returns the training step of cfg for batches of B sequences on dev,
// its parameters zero until SetParams.
func New(dev Device, cfg model.Config, B int, opts Options) (*Step, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if B <= 0 {
		return nil, fmt.Errorf("step: batch size %d must be positive", B)
	}
	if cfg.T < 2 {
		return nil, fmt.Errorf("step: seq_len %d must be at least 2", cfg.T)
	}
	T, F, H, L, V, P := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.V, cfg.P()
	half := cfg.Half()
	s := &Step{dev: dev, cfg: cfg, opts: opts, B: B, S: T - 1, N: T * B}
	S, N := s.S, s.N

	// The flat layout: model.ZeroParams gives the tensors, in order, and
	// the layout's views follow the model's structure.
	s.st, s.ownState = opts.State, opts.State == nil
	if s.ownState {
		st, err := NewState(dev, cfg)
		if err != nil {
			return nil, err
		}
		s.st = st
	} else if s.st.cfg != cfg || s.st.dev != dev {
		return nil, fmt.Errorf("step: a state of config %+v on another device or config", s.st.cfg)
	}
	s.offs, s.sizes, s.total = s.st.offs, s.st.sizes, s.st.total
	s.params, s.grads, s.m, s.v = s.st.params, s.st.grads, s.st.m, s.st.v
	shape := model.ZeroParams(cfg)
	index := map[*model.Tensor]int{}
	for i, t := range shape.Tensors() {
		index[t] = i
	}
	view := func(flat Buf, t *model.Tensor, row0, rows int) Buf {
		cols := t.Shape[len(t.Shape)-1]
		o := s.offs[index[t]] + row0*cols
		return flat.Slice(o, o+rows*cols)
	}
	whole := func(flat Buf, t *model.Tensor) Buf { return view(flat, t, 0, t.Len()/t.Shape[len(t.Shape)-1]) }
	mkDense := func(d model.Dense) dense {
		return dense{w: whole(s.params, d.W), b: whole(s.params, d.B), dw: whole(s.grads, d.W), db: whole(s.grads, d.B), in: d.In(), out: d.Out()}
	}
	s.embed, s.dEmbed = whole(s.params, shape.Embed), whole(s.grads, shape.Embed)

	widest := 0
	for k, blk := range shape.Blocks {
		var b block
		b.init = [2]dense{mkDense(blk.InitHidden[0]), mkDense(blk.InitHidden[1])}
		b.hid, b.st = dev.Alloc(B*H), dev.Alloc(B*2*L*H)
		b.hq, b.cq = dev.Alloc(B*L*H), dev.Alloc(B*L*H)
		for l, lp := range blk.LSTM {
			ly := lstmLayer{in: H,
				wih: whole(s.params, lp.Wih), whh: whole(s.params, lp.Whh), bih: whole(s.params, lp.Bih), bhh: whole(s.params, lp.Bhh),
				dwih: whole(s.grads, lp.Wih), dwhh: whole(s.grads, lp.Whh), dbih: whole(s.grads, lp.Bih), dbhh: whole(s.grads, lp.Bhh),
				bsum: dev.Alloc(4 * H), act: dev.Alloc(S * B * 4 * H), c: dev.Alloc(S * B * H), tc: dev.Alloc(S * B * H),
				out: dev.Alloc((S + 1) * B * H), c0: dev.Alloc(B * H)}
			ly.bias = ly.bsum
			if l == 0 {
				ly.in = F
				ly.wih, ly.dwih = view(s.params, lp.Wih, 0, F), view(s.grads, lp.Wih, 0, F)
				ly.wpos, ly.dwpos = view(s.params, lp.Wih, F, P), view(s.grads, lp.Wih, F, P)
				ly.bias = dev.Alloc(S * B * 4 * H)
			}
			b.lstm = append(b.lstm, ly)
		}
		for j, cp := range blk.Couplings {
			c := coupling{rev: model.Reversed(k, j), out: dev.Alloc(N * (half + 1)), u: dev.Alloc(N * half)}
			for i, d := range cp.Layers {
				dl := mkDense(d)
				if i == 0 {
					dl.in = half
					dl.w, dl.dw = view(s.params, d.W, 0, half), view(s.grads, d.W, 0, half)
					c.w0x, c.dw0x = view(s.params, d.W, half, H), view(s.grads, d.W, half, H)
				}
				c.layers = append(c.layers, dl)
				c.hs = append(c.hs, dev.Alloc(N*d.Out()))
				widest = max(widest, d.Out())
			}
			b.cps = append(b.cps, c)
		}
		b.lo, b.hi, b.yNext = dev.Alloc(N*half), dev.Alloc(N*half), dev.Alloc(N*F)
		s.blocks = append(s.blocks, b)
	}

	s.tok, s.neg, s.pos, s.lens = dev.AllocInt(N), dev.AllocInt(N), dev.AllocInt(2*S*B), dev.AllocInt(B)
	s.acc = dev.AllocAcc(AccSlots)
	s.pos0, s.eps, s.wt = dev.Alloc(B*P), dev.Alloc(N*F), dev.Alloc(N)
	s.negWt, s.simC = dev.Alloc(N), dev.Alloc(N)
	s.en, s.ex, s.ej, s.v0 = dev.Alloc(V*F), dev.Alloc(N*F), dev.Alloc(N*F), dev.Alloc(N*F)
	s.sim, s.nll, s.ld = dev.Alloc(N), dev.Alloc(N), dev.Alloc(N)
	s.dy, s.dlo, s.dhi, s.dOut = dev.Alloc(N*F), dev.Alloc(N*half), dev.Alloc(N*half), dev.Alloc(N*(half+1))
	s.dh = [2]Buf{dev.Alloc(N * widest), dev.Alloc(N * widest)}
	s.dctx = dev.Alloc(N * H)
	s.dG, s.dhs, s.dcs, s.dX = dev.Alloc(S*B*4*H), dev.Alloc(B*H), dev.Alloc(B*H), dev.Alloc(S*B*max(F, H))
	s.dLow = dev.Alloc(S * B * H)
	s.dhq, s.dcq, s.dst, s.dhid = dev.Alloc(B*L*H), dev.Alloc(B*L*H), dev.Alloc(B*2*L*H), dev.Alloc(B*H)
	s.dEn, s.dex, s.dej = dev.Alloc(V*F), dev.Alloc(N*F), dev.Alloc(N*F)

	s.host.pos, s.host.pos0 = make([]int32, 2*S*B), make([]float32, B*P)
	s.host.negWt, s.host.simC = make([]float32, N), make([]float32, N)
	s.host.nll, s.host.sim = make([]float32, N), make([]float32, N)
	s.host.lens = make([]int, B)
	s.host.acc = make([]float64, AccSlots)
	return s, nil
}

// Config returns the step's model config.
func (s *Step) Config() model.Config { return s.cfg }

// BatchSize returns the number of sequences per batch, B.
func (s *Step) BatchSize() int { return s.B }

// checkTensors panics unless ts has the state's tensors' sizes.
func (st *State) checkTensors(what string, ts [][]float32) {
	if len(ts) != len(st.sizes) {
		panic(fmt.Sprintf("step: %s: %d tensors, want %d", what, len(ts), len(st.sizes)))
	}
	for i, t := range ts {
		if len(t) != st.sizes[i] {
			panic(fmt.Sprintf("step: %s: tensor %d has %d entries, want %d", what, i, len(t), st.sizes[i]))
		}
	}
}

func (st *State) upload(flat Buf, ts [][]float32) {
	st.checkTensors("upload", ts)
	for i, t := range ts {
		st.dev.Upload(flat.Slice(st.offs[i], st.offs[i]+st.sizes[i]), t)
	}
}

func (st *State) download(ts [][]float32, flat Buf) error {
	st.checkTensors("download", ts)
	for i, t := range ts {
		if err := st.dev.Download(t, flat.Slice(st.offs[i], st.offs[i]+st.sizes[i])); err != nil {
			return err
		}
	}
	return nil
}

// datas returns the data of each tensor of p, which must have the state's
// config.
func (st *State) datas(p *model.Params) [][]float32 {
	if p.Config != st.cfg {
		panic(fmt.Sprintf("step: params of config %+v, the state's is %+v", p.Config, st.cfg))
	}
	var ts [][]float32
	for _, t := range p.Tensors() {
		ts = append(ts, t.Data)
	}
	return ts
}

// SetParams uploads the weights of p (of the state's config).
func (st *State) SetParams(p *model.Params) { st.upload(st.params, st.datas(p)) }

// ParamsTo downloads the weights into p.
func (st *State) ParamsTo(p *model.Params) error { return st.download(st.datas(p), st.params) }

// GradsTo downloads the gradients of the last step into dst, one slice per
// tensor of model.Params.Tensors.
func (st *State) GradsTo(dst [][]float32) error { return st.download(dst, st.grads) }

// SetMoments uploads Adam's first and second moments, shaped as GradsTo's
// dst.
func (st *State) SetMoments(m, v [][]float32) {
	st.upload(st.m, m)
	st.upload(st.v, v)
}

// MomentsTo downloads Adam's moments into m and v.
func (st *State) MomentsTo(m, v [][]float32) error {
	return errors.Join(st.download(m, st.m), st.download(v, st.v))
}

// SetParams uploads the weights of p into the step's state.
func (s *Step) SetParams(p *model.Params) { s.st.SetParams(p) }

// ParamsTo downloads the state's weights into p.
func (s *Step) ParamsTo(p *model.Params) error { return s.st.ParamsTo(p) }

// GradsTo downloads the gradients of the last Run or Train into dst.
func (s *Step) GradsTo(dst [][]float32) error { return s.st.GradsTo(dst) }

// SetMoments uploads Adam's moments into the step's state.
func (s *Step) SetMoments(m, v [][]float32) { s.st.SetMoments(m, v) }

// MomentsTo downloads the state's Adam moments into m and v.
func (s *Step) MomentsTo(m, v [][]float32) error { return s.st.MomentsTo(m, v) }

// Apply takes one Adam step with the coefficients c (their Scale the
// clipping factor) on every parameter but the frozen embeddings.
func (s *Step) Apply(c kernels.AdamCoeffs) {
	lo := s.trainedFrom()
	d, n := s.dev, s.total-lo
	d.Adam(s.params.Slice(lo, s.total), s.grads.Slice(lo, s.total), s.m.Slice(lo, s.total), s.v.Slice(lo, s.total), n, c)
}

// State returns the parameters, gradients and moments the step trains.
func (s *Step) State() *State { return s.st }

// Close frees the step's buffers, and its state unless Options gave it.
func (s *Step) Close() {
	d := s.dev
	if s.ownState {
		s.st.Close()
	}
	d.FreeAcc(s.acc)
	for _, b := range s.blocks {
		for _, x := range []Buf{b.hid, b.st, b.hq, b.cq, b.lo, b.hi, b.yNext} {
			d.Free(x)
		}
		if b.ctxMask.Len() > 0 {
			d.Free(b.ctxM)
			d.Free(b.ctxMask)
		}
		for l, ly := range b.lstm {
			for _, x := range []Buf{ly.bsum, ly.act, ly.c, ly.tc, ly.out, ly.c0} {
				d.Free(x)
			}
			if l == 0 {
				d.Free(ly.bias)
			}
			if ly.mask.Len() > 0 {
				d.Free(ly.mask)
				d.Free(ly.xNext)
			}
		}
		for _, c := range b.cps {
			d.Free(c.out)
			d.Free(c.u)
			for _, h := range c.hs {
				d.Free(h)
			}
		}
	}
	for _, x := range []Buf{s.pos0, s.eps, s.wt, s.negWt, s.simC, s.en, s.ex, s.ej, s.v0, s.sim, s.nll, s.ld,
		s.dy, s.dlo, s.dhi, s.dOut, s.dh[0], s.dh[1], s.dctx, s.dG, s.dhs, s.dcs, s.dX, s.dLow,
		s.dhq, s.dcq, s.dst, s.dhid, s.dEn, s.dex, s.dej} {
		d.Free(x)
	}
	for _, x := range []IntBuf{s.tok, s.neg, s.pos, s.lens} {
		d.FreeInt(x)
	}
	*s = Step{}
}

// Run computes the loss of b and the gradient of every parameter (left on
// the device for Apply and GradsTo): a batch drawn on the host, as the
// parity tests give it. Training draws on the device instead (Train).
func (s *Step) Run(b *Batch) (Result, error) {
	if err := b.check(s.cfg, s.B); err != nil {
		return Result{}, err
	}
	s.setInputs(b)
	s.forward()
	s.backward()
	s.dev.ZeroAcc(s.acc)
	return s.sums()
}

// sums adds the loss's and the gradient's sums to the accumulators and
// reads them back: the step's one wait.
func (s *Step) sums() (Result, error) {
	d := s.dev
	d.SumLoss(s.acc, AccLoss, s.nll, s.sim, s.wt, s.N, s.cfg.SimCoef)
	d.SumSquares(s.acc, AccSq, s.grads, s.total)
	return s.read()
}

// read reads the accumulators into a Result.
func (s *Step) read() (Result, error) {
	a := s.host.acc
	if err := s.dev.ReadAcc(a, s.acc); err != nil {
		return Result{}, err
	}
	res := Result{Loss: a[AccLoss], GradNorm: math.Sqrt(a[AccSq]), Rejected: int(a[AccRejected])}
	if a[AccRows] > 0 {
		res.NLL, res.Sim = a[AccNLL]/a[AccRows], a[AccSim]/a[AccRows]
	}
	return res, nil
}

// Train takes one training step on the device: it uploads in's tokens and
// lengths, draws the noise, negatives and dropout masks there, runs the
// forward and backward passes, and takes the Adam step with the
// coefficients c, its gradient scale computed on the device from the norm
// and clip (0: no clipping), skipped when the loss or the norm is not
// finite (check Result). It waits once, to read the step's sums back.
func (s *Step) Train(in *Inputs, c kernels.AdamCoeffs, clip float64) (Result, error) {
	cfg := s.cfg
	if err := in.check(cfg.T, s.B, cfg.V); err != nil {
		return Result{}, err
	}
	d, N := s.dev, s.N
	phase := func(string) {}
	if p, ok := d.(phaser); ok {
		phase = p.Phase
	}
	phase("")
	s.drawInputs(in)
	s.dropout = cfg.Dropout > 0
	if s.dropout {
		s.allocMasks()
		L := cfg.LSTMLayers
		for k := range s.blocks {
			blk := &s.blocks[k]
			for l := range L - 1 {
				d.DrawDropout(blk.lstm[l].mask, s.S*s.B*cfg.H, cfg.Dropout, in.Key, k*(L-1)+l)
			}
			d.DrawDropout(blk.ctxMask, N*cfg.H, cfg.Dropout, in.Key, cfg.Blocks*(L-1)+k)
		}
	}
	phase("inputs")
	s.forward()
	phase("forward")
	s.backward()
	phase("backward")
	d.SumLoss(s.acc, AccLoss, s.nll, s.sim, s.wt, N, cfg.SimCoef)
	d.SumSquares(s.acc, AccSq, s.grads, s.total)
	lo := s.trainedFrom()
	d.AdamClipped(s.params.Slice(lo, s.total), s.grads.Slice(lo, s.total), s.m.Slice(lo, s.total), s.v.Slice(lo, s.total),
		s.total-lo, c, clip, s.acc, AccLoss, AccSq)
	res, err := s.read()
	phase("update")
	return res, err
}

// phaser is a Device that times the phases of a step (engine/gpustep.Device's profile): Phase(name) ends phase
// name, "" starts a step.
type phaser interface {
	Phase(name string)
}

// Eval computes the loss of in without dropout and without touching the
// gradients or the weights: a validation batch, its noise and negatives
// drawn on the device under in.Key as Train draws them. It waits once, to
// read the sums back.
func (s *Step) Eval(in *Inputs) (Result, error) {
	cfg := s.cfg
	if err := in.check(cfg.T, s.B, cfg.V); err != nil {
		return Result{}, err
	}
	s.drawInputs(in)
	s.dropout = false
	s.forward()
	s.dev.SumLoss(s.acc, AccLoss, s.nll, s.sim, s.wt, s.N, cfg.SimCoef)
	return s.read()
}

// drawInputs uploads in's tokens and lengths, zeroes the accumulators and
// draws the batch's layout, negatives and noise on the device (the
// embeddings normalised first: the noise is checked against them).
func (s *Step) drawInputs(in *Inputs) {
	d, cfg, N, F, V := s.dev, s.cfg, s.N, s.cfg.F, s.cfg.V
	d.UploadInt(s.tok, in.Tok)
	d.UploadInt(s.lens, in.Lens)
	d.ZeroAcc(s.acc)
	d.Layout(s.wt, s.negWt, s.simC, s.pos, s.pos0, s.lens, s.B, cfg.T, cfg.MaxT, in.Real, float32(cfg.SimCoef))
	d.NormalizeRows(s.en, s.embed, V, F)
	d.DrawNegatives(s.neg, s.tok, s.wt, N, V, in.Key)
	d.DrawNoise(s.eps, s.tok, s.wt, s.en, N, F, V, cfg.Noise, NoiseRounds, in.Key, s.acc, AccRejected)
}

// trainedFrom returns the first entry of the flat buffers that Adam
// updates: past the embeddings (tensor 0) when they are frozen.
func (s *Step) trainedFrom() int {
	if s.opts.FreezeEmbeddings {
		return s.sizes[0]
	}
	return 0
}

// allocMasks allocates the dropout masks and the masked activations the
// first time a batch has dropout.
func (s *Step) allocMasks() {
	d, B, S, N, H := s.dev, s.B, s.S, s.N, s.cfg.H
	for k := range s.blocks {
		blk := &s.blocks[k]
		if blk.ctxMask.Len() > 0 {
			continue
		}
		blk.ctxMask, blk.ctxM = d.Alloc(N*H), d.Alloc(N*H)
		for l := range s.cfg.LSTMLayers - 1 {
			blk.lstm[l].mask, blk.lstm[l].xNext = d.Alloc(S*B*H), d.Alloc(S*B*H)
		}
	}
}

// setInputs uploads b's inputs and, the first time b has dropout masks,
// allocates the masked activations.
func (s *Step) setInputs(b *Batch) {
	d, cfg := s.dev, s.cfg
	S, L := s.S, cfg.LSTMLayers
	lens := s.host.lens
	for i := range lens {
		lens[i] = cfg.T
		if b.Lens != nil {
			lens[i] = b.Lens[i]
		}
	}
	PosRows(s.host.pos, lens, S, cfg.MaxT)
	PosCode0(s.host.pos0, lens, cfg.MaxT)
	for r, w := range b.Wt {
		s.host.negWt[r] = -w
		s.host.simC[r] = float32(cfg.SimCoef) * w
	}
	d.UploadInt(s.tok, b.Tok)
	d.UploadInt(s.neg, b.Neg)
	d.UploadInt(s.pos, s.host.pos)
	d.Upload(s.pos0, s.host.pos0)
	d.Upload(s.eps, b.Eps)
	d.Upload(s.wt, b.Wt)
	d.Upload(s.negWt, s.host.negWt)
	d.Upload(s.simC, s.host.simC)
	s.dropout = b.CtxMask != nil
	if !s.dropout {
		return
	}
	s.allocMasks()
	for k := range s.blocks {
		blk := &s.blocks[k]
		d.Upload(blk.ctxMask, b.CtxMask[k])
		for l := range L - 1 {
			d.Upload(blk.lstm[l].mask, b.InterMask[k*(L-1)+l])
		}
	}
}

// forward runs the flow on the batch, keeping what backward reads.
func (s *Step) forward() {
	d, cfg := s.dev, s.cfg
	N, F, V := s.N, cfg.F, cfg.V
	half := cfg.Half()

	// v̂ = E[x]/‖E[x]‖ + ε, and its similarity loss. (Train normalised the
	// embeddings before its draws already; once more costs a V×F pass.)
	d.NormalizeRows(s.en, s.embed, V, F)
	d.GatherRows(s.ex, s.en, s.tok, N, 1, F)
	d.GatherRows(s.ej, s.en, s.neg, N, 1, F)
	d.Add(s.v0, s.ex, s.eps, N*F)
	d.Similarity(s.sim, s.v0, s.ex, s.ej, N, F)

	d.Zero(s.ld)
	y := s.v0
	for k := range s.blocks {
		blk := &s.blocks[k]
		blk.y = y
		s.initState(blk)
		s.lstmForward(blk, y)
		// The halves of y, then the couplings, each replacing the half it
		// transforms with a buffer of its own (backward reads every
		// coupling's input).
		d.CopyCols(blk.lo, half, 0, y, F, 0, N, half, false)
		d.CopyCols(blk.hi, half, 0, y, F, half, N, half, false)
		lo, hi := blk.lo, blk.hi
		for j := range blk.cps {
			c := &blk.cps[j]
			c.cond, c.w = lo, hi
			if c.rev {
				c.cond, c.w = hi, lo
			}
			s.couplingForward(c, blk.ctx)
			if c.rev {
				lo = c.u
			} else {
				hi = c.u
			}
		}
		d.CopyCols(blk.yNext, F, 0, lo, half, 0, N, half, false)
		d.CopyCols(blk.yNext, F, half, hi, half, 0, N, half, false)
		y = blk.yNext
	}
	s.yOut = y
	d.GaussNLL(s.nll, y, s.ld, N, F)
}

// initState runs the block's initial-state MLP on c_0 and sets each LSTM
// layer's h0 (the first B rows of its output) and c0: output index
// layer·2H + unit·2 + {0: h, 1: c}.
func (s *Step) initState(blk *block) {
	d, cfg := s.dev, s.cfg
	B, H, L, P := s.B, cfg.H, cfg.LSTMLayers, cfg.P()
	i0, i1 := blk.init[0], blk.init[1]
	d.Gemm(false, false, 1, s.pos0, B, P, i0.w, P, H, 0, blk.hid)
	d.BiasAct(blk.hid, i0.b, B, H, true)
	d.Gemm(false, false, 1, blk.hid, B, H, i1.w, H, 2*L*H, 0, blk.st)
	d.BiasAct(blk.st, i1.b, B, 2*L*H, false)
	d.CopyCols(blk.hq, 1, 0, blk.st, 2, 0, B*L*H, 1, false)
	d.CopyCols(blk.cq, 1, 0, blk.st, 2, 1, B*L*H, 1, false)
	for l := range blk.lstm {
		ly := &blk.lstm[l]
		d.CopyCols(ly.out, H, 0, blk.hq, L*H, l*H, B, H, false)
		d.CopyCols(ly.c0, H, 0, blk.cq, L*H, l*H, B, H, false)
	}
}

// lstmForward runs the block's LSTM layers over the S steps on the first
// S·B rows of y and sets the block's context [N, H]: the top layer's
// [h0 ; h_1..h_S], masked when the batch has dropout.
func (s *Step) lstmForward(blk *block, y Buf) {
	d, cfg := s.dev, s.cfg
	B, S, N, H := s.B, s.S, s.N, cfg.H
	H4 := 4 * H
	x := y.Slice(0, S*B*cfg.F)
	for l := range blk.lstm {
		ly := &blk.lstm[l]
		ly.x = x
		d.Gemm(false, false, 1, x, S*B, ly.in, ly.wih, ly.in, H4, 0, ly.act)
		d.Add(ly.bsum, ly.bih, ly.bhh, H4)
		biasRows := 1
		if l == 0 {
			// c_{s+1}·Wih[F:] + bih + bhh: two rows of Wih[F:] per input
			// row, in that order of addition.
			d.GatherRows(ly.bias, ly.wpos, s.pos, S*B, 2, H4)
			d.BiasAct(ly.bias, ly.bsum, S*B, H4, false)
			biasRows = S * B // a row per step and sequence
		}
		d.LSTMForward(ly.act, ly.bias, biasRows, ly.whh, ly.c0, ly.c, ly.tc, ly.out, S, B, H)
		x = ly.out.Slice(B*H, (S+1)*B*H)
		if l < len(blk.lstm)-1 && s.dropout {
			d.Mul(ly.xNext, x, ly.mask, S*B*H)
			x = ly.xNext
		}
	}
	blk.ctx = blk.lstm[len(blk.lstm)-1].out
	if s.dropout {
		d.Mul(blk.ctxM, blk.ctx, blk.ctxMask, N*H)
		blk.ctx = blk.ctxM
	}
}

// couplingForward runs coupling c's net on [cond ; ctx] and its transform
// of w, and adds its log-determinant to the step's.
func (s *Step) couplingForward(c *coupling, ctx Buf) {
	d, cfg := s.dev, s.cfg
	N, H, half := s.N, cfg.H, cfg.Half()
	l0 := c.layers[0]
	d.Gemm(false, false, 1, c.cond, N, half, l0.w, half, l0.out, 0, c.hs[0])
	d.Gemm(false, false, 1, ctx, N, H, c.w0x, H, l0.out, 1, c.hs[0])
	last := len(c.layers) - 1
	d.BiasAct(c.hs[0], l0.b, N, l0.out, last > 0)
	for i := 1; i <= last; i++ {
		li := c.layers[i]
		d.Gemm(false, false, 1, c.hs[i-1], N, li.in, li.w, li.in, li.out, 0, c.hs[i])
		d.BiasAct(c.hs[i], li.b, N, li.out, i < last)
	}
	if cfg.Transform == model.Affine {
		d.AffineForward(c.out, c.hs[last], c.w, N, half)
	} else {
		d.NLSqForward(c.out, c.hs[last], c.w, N, half)
	}
	d.CopyCols(c.u, half, 0, c.out, half+1, 0, N, half, false)
	d.CopyCols(s.ld, 1, 0, c.out, half+1, half, N, 1, true)
}

// backward computes every parameter's gradient of the loss from the saved
// activations.
func (s *Step) backward() {
	d, cfg := s.dev, s.cfg
	N, F, V, half := s.N, cfg.F, cfg.V, cfg.Half()

	// ∂/∂y of Σ Wt·nll; ∂/∂logdet = −Wt enters each coupling's dOut.
	d.GaussNLLGrad(s.dy, s.yOut, s.wt, N, F)
	for k := len(s.blocks) - 1; k >= 0; k-- {
		blk := &s.blocks[k]
		// s.dy holds the gradient of the block's output; split it.
		d.CopyCols(s.dlo, half, 0, s.dy, F, 0, N, half, false)
		d.CopyCols(s.dhi, half, 0, s.dy, F, half, N, half, false)
		d.Zero(s.dctx)
		for j := len(blk.cps) - 1; j >= 0; j-- {
			c := &blk.cps[j]
			dOut, dCond := s.dhi, s.dlo // the half c produced, the half it read
			if c.rev {
				dOut, dCond = s.dlo, s.dhi
			}
			s.couplingBackward(c, blk.ctx, dOut, dCond)
		}
		// The gradient of the block's input: its halves, then the LSTM's.
		d.CopyCols(s.dy, F, 0, s.dlo, half, 0, N, half, false)
		d.CopyCols(s.dy, F, half, s.dhi, half, 0, N, half, false)
		s.lstmBackward(blk)
		s.initStateBackward(blk)
	}

	// The flow's input v̂ = E[x]/‖E[x]‖ + ε and the similarity loss.
	d.SimilarityGrad(s.dex, s.dej, s.dy, s.v0, s.ex, s.ej, s.simC, N, F)
	if s.opts.FreezeEmbeddings {
		d.Zero(s.dEmbed)
		return
	}
	d.Zero(s.dEn)
	d.ScatterAddRows(s.dEn, s.dex, s.tok, N, 1, F)
	d.ScatterAddRows(s.dEn, s.dej, s.neg, N, 1, F)
	d.NormalizeRowsGrad(s.dEmbed, s.dEn, s.embed, V, F)
}

// couplingBackward writes coupling c's weight gradients, replaces dX (the
// gradient of the half c produced, N×half) by that of the half it
// transformed, adds the conditioning half's gradient to dCond and the
// context's to s.dctx.
func (s *Step) couplingBackward(c *coupling, ctx, dX, dCond Buf) {
	d, cfg := s.dev, s.cfg
	N, H, half := s.N, cfg.H, cfg.Half()
	// dOut = [dX, −Wt]: u's gradient and the log-determinant's.
	d.CopyCols(s.dOut, half+1, 0, dX, half, 0, N, half, false)
	d.CopyCols(s.dOut, half+1, half, s.negWt, 1, 0, N, 1, false)
	last := len(c.layers) - 1
	dh, other := s.dh[0], s.dh[1]
	if cfg.Transform == model.Affine {
		d.AffineBackward(dh, dX, c.hs[last], c.w, s.dOut, N, half)
	} else {
		d.NLSqBackward(dh, dX, c.hs[last], c.w, s.dOut, N, half)
	}
	for i := last; i >= 1; i-- {
		li := c.layers[i]
		d.Gemm(true, false, 1, c.hs[i-1], N, li.in, dh, N, li.out, 0, li.dw)
		d.ColSums(li.db, dh, N, li.out)
		d.Gemm(false, true, 1, dh, N, li.out, li.w, li.in, li.out, 0, other)
		d.ReLUGrad(other, c.hs[i-1], N*li.in) // every layer below the output one is ReLU'd
		dh, other = other, dh
	}
	l0 := c.layers[0]
	U := l0.out
	d.Gemm(true, false, 1, c.cond, N, half, dh, N, U, 0, l0.dw)
	d.Gemm(true, false, 1, ctx, N, H, dh, N, U, 0, c.dw0x)
	d.ColSums(l0.db, dh, N, U)
	d.Gemm(false, true, 1, dh, N, U, c.w0x, H, U, 1, s.dctx)
	d.Gemm(false, true, 1, dh, N, U, l0.w, half, U, 1, dCond)
}

// lstmBackward runs the block's LSTM layers backwards from the context's
// gradient s.dctx, writes their weight gradients and adds the gradient of
// layer 0's input to the first S·B rows of s.dy; it leaves each layer's
// dL/dh0 and dL/dc0 in s.dhq and s.dcq.
func (s *Step) lstmBackward(blk *block) {
	d, cfg := s.dev, s.cfg
	B, S, N, H, L := s.B, s.S, s.N, cfg.H, cfg.LSTMLayers
	H4 := 4 * H
	dOut, lead := s.dctx, B // the top layer's output starts with h0
	if s.dropout {
		d.Mul(s.dctx, s.dctx, blk.ctxMask, N*H)
	}
	for l := L - 1; l >= 0; l-- {
		ly := &blk.lstm[l]
		d.Zero(s.dhs)
		d.Zero(s.dcs)
		d.LSTMBackward(s.dG, s.dhs, s.dcs, ly.act, ly.tc, ly.c, ly.c0, ly.whh, dOut.Slice(lead*H, (lead+S*B)*H), S, B, H)
		if lead > 0 {
			d.Add(s.dhs, s.dhs, dOut.Slice(0, B*H), B*H)
		}
		d.CopyCols(s.dhq, L*H, l*H, s.dhs, H, 0, B, H, false)
		d.CopyCols(s.dcq, L*H, l*H, s.dcs, H, 0, B, H, false)

		dX := s.dX.Slice(0, S*B*ly.in)
		d.Gemm(false, true, 1, s.dG, S*B, H4, ly.wih, ly.in, H4, 0, dX)
		d.Gemm(true, false, 1, ly.x, S*B, ly.in, s.dG, S*B, H4, 0, ly.dwih)
		d.Gemm(true, false, 1, ly.out, S*B, H, s.dG, S*B, H4, 0, ly.dwhh) // h before each step
		if l == 0 {
			// Every input row adds to one of the rows 1..S of the
			// positional weights' gradient (its first code row), so their
			// column sums are the bias gradient.
			d.Zero(ly.dwpos)
			d.ScatterAddRows(ly.dwpos, s.dG, s.pos, S*B, 2, H4)
			d.ColSums(ly.dbih, ly.dwpos.Rows(1, S+1, H4), S, H4)
		} else {
			d.ColSums(ly.dbih, s.dG, S*B, H4)
		}
		d.Copy(ly.dbhh, ly.dbih)

		if l > 0 {
			// The layer below's output gradient; without dropout dX
			// itself, which its backward reads before overwriting.
			dOut, lead = dX, 0
			if s.dropout {
				dOut = s.dLow
				d.Mul(dOut, dX, blk.lstm[l-1].mask, S*B*H)
			}
		} else {
			first := s.dy.Slice(0, S*B*cfg.F)
			d.Add(first, first, dX, S*B*cfg.F)
		}
	}
}

// initStateBackward writes the gradients of the block's initial-state MLP
// from each layer's dL/dh0 and dL/dc0 (s.dhq, s.dcq).
func (s *Step) initStateBackward(blk *block) {
	d, cfg := s.dev, s.cfg
	B, H, L, P := s.B, cfg.H, cfg.LSTMLayers, cfg.P()
	d.CopyCols(s.dst, 2, 0, s.dhq, 1, 0, B*L*H, 1, false)
	d.CopyCols(s.dst, 2, 1, s.dcq, 1, 0, B*L*H, 1, false)
	i0, i1 := blk.init[0], blk.init[1]
	d.Gemm(true, false, 1, blk.hid, B, H, s.dst, B, 2*L*H, 0, i1.dw)
	d.ColSums(i1.db, s.dst, B, 2*L*H)
	d.Gemm(false, true, 1, s.dst, B, 2*L*H, i1.w, H, 2*L*H, 0, s.dhid)
	d.ReLUGrad(s.dhid, blk.hid, B*H)
	d.Gemm(true, false, 1, s.pos0, B, P, s.dhid, B, H, 0, i0.dw)
	d.ColSums(i0.db, s.dhid, B, H)
}
