// Package onnx exports a SeqFlow (model.Flow) as ONNX models for ONNX
// Runtime: an encoder (token ids to latents and per-position log-dets) and a
// decoder (latents to token ids), both with a symbolic batch axis "N" and
// the model's fixed sequence length T. The models use IR version 8 and
// opset 17, so Debian bookworm's python3-onnx 1.12 checker verifies them.
//
// The graphs compute what model.Flow computes, from the same float32
// numbers (the Flow's precomputed initial states and positional biases):
//
//   - Encoder: input "x" int64 N×T; outputs "z" float32 N×T×F and "logdet"
//     float32 N×T (Σ log|∂z/∂v| per position). Each block's LSTM is one
//     ONNX LSTM op over T−1 steps with teacher forcing. The one-hot
//     positional code enters as a (T−1)-wide one-hot step index whose
//     weights are the precomputed per-step biases, instead of the 2·MaxT
//     wide code, so the LSTM input is F+T−1 wide, not F+2·MaxT.
//   - Decoder: input "z" float32 N×T×F; outputs "x" int64 N×T and "v"
//     float32 N×T×F (the data-side vectors). Each block is one ONNX Loop
//     over T positions whose body inverts the couplings (NLSq: the cubic in
//     float64, as model.Flow and the reference do) and advances the LSTM by
//     one step. Tokens are the argmax of the dot product with the unit-norm
//     embedding rows (the cosine argmax), with every position at or after
//     the first <stop> forced to <stop>. DecoderMode(f, DecodeUnrolled)
//     repeats the step T times instead of looping.
//   - StepModel: one generation position of one block (couplings inverted,
//     LSTM advanced), for a decoder driven from Go. engine/ort measured it
//     against the Loop (BENCHMARKS.md) and runs the Loop.
//
// Differences from model.Flow, all on inputs of measure zero: the cubic's
// p = 0 case and NaN vectors are not special-cased.
package onnx

import (
	"errors"
	"fmt"

	"github.com/nfbo/nfbo/engine/onnx/onnxpb"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// Names of the graphs' inputs and outputs.
const (
	EncoderInput   = "x"      // int64 N×T token ids
	EncoderOutput  = "z"      // float32 N×T×F latents
	EncoderLogDet  = "logdet" // float32 N×T per-position log|∂z/∂v|
	DecoderInput   = "z"      // float32 N×T×F latents
	DecoderOutput  = "x"      // int64 N×T token ids
	DecoderVectors = "v"      // float32 N×T×F data-side vectors
)

// exporter holds the initializer names of one flow's weights in one model.
type exporter struct {
	f   *model.Flow
	cfg model.Config
	b   *builder
	// per block k, coupling j, layer d: weight and bias names; the output
	// layer's columns are permuted to parameter-major ([NumParams, F/2]) so
	// each raw parameter is a contiguous slice.
	cw, cb [][][]string
}

func newExporter(f *model.Flow, name string) (*exporter, error) {
	cfg := f.Config()
	if cfg.T < 2 {
		return nil, errors.New("onnx: export needs T ≥ 2")
	}
	e := &exporter{f: f, cfg: cfg, b: newBuilder(name)}
	half, np := cfg.Half(), cfg.Transform.NumParams()
	for k, blk := range f.Params().Blocks {
		e.cw = append(e.cw, nil)
		e.cb = append(e.cb, nil)
		for j, c := range blk.Couplings {
			var ws, bs []string
			for d, l := range c.Layers {
				w, bias := l.W.Data, l.B.Data
				in, out := l.In(), l.Out()
				if d == len(c.Layers)-1 {
					// Column i·np+p becomes p·half+i.
					pw := make([]float32, len(w))
					pb := make([]float32, len(bias))
					for i := 0; i < half; i++ {
						for p := 0; p < np; p++ {
							for r := 0; r < in; r++ {
								pw[r*out+p*half+i] = w[r*out+i*np+p]
							}
							pb[p*half+i] = bias[i*np+p]
						}
					}
					w, bias = pw, pb
				}
				ws = append(ws, e.b.constF32(fmt.Sprintf("b%d_c%d_w%d", k, j, d), []int64{int64(in), int64(out)}, w))
				bs = append(bs, e.b.constF32(fmt.Sprintf("b%d_c%d_b%d", k, j, d), []int64{int64(out)}, bias))
			}
			e.cw[k] = append(e.cw[k], ws)
			e.cb[k] = append(e.cb[k], bs)
		}
	}
	return e, nil
}

// rawParams returns the NumParams raw coupling outputs, each shaped like
// cond, for coupling j of block k.
func (e *exporter) rawParams(g *graph, k, j int, cond, ctx string) []string {
	x := g.concatLast(cond, ctx)
	ws, bs := e.cw[k][j], e.cb[k][j]
	for d := 0; d < len(ws)-1; d++ {
		x = g.op("Relu", g.dense(x, ws[d], bs[d]))
	}
	raw := g.dense(x, ws[len(ws)-1], bs[len(bs)-1])
	half := e.cfg.Half()
	out := make([]string, e.cfg.Transform.NumParams())
	for p := range out {
		out[p] = g.sliceLast(raw, p*half, (p+1)*half)
	}
	return out
}

// nlsqPseudo returns (a, b, c, d, f) from the five raw outputs, in float32
// (kernels.NLSqPseudo).
func (e *exporter) nlsqPseudo(g *graph, o []string) (a, b, c, d, f string) {
	k := g.b.f32
	o1s := g.mul(k(kernels.NLSqExpRate), o[1])
	o3s := g.mul(k(kernels.NLSqExpRate), o[3])
	b = g.op("Exp", o1s)
	d = g.op("Exp", o3s)
	c = g.mul(g.op("Tanh", g.mul(k(kernels.NLSqTanhRate), o[2])), g.op("Exp", g.add(k(kernels.NLSqLogA), g.sub(o1s, o3s))))
	return o[0], b, c, d, o[4]
}

// coupling applies coupling j of block k to y (last axis F) forward or
// inverse and returns the new y and, forward, the per-row log-det (y's
// shape without the last axis).
func (e *exporter) coupling(g *graph, k, j int, y, ctx string, forward bool) (yNew, logDet string) {
	half := e.cfg.Half()
	condLo, transLo := 0, half
	if model.Reversed(k, j) {
		condLo, transLo = half, 0
	}
	cond := g.sliceLast(y, condLo, condLo+half)
	w := g.sliceLast(y, transLo, transLo+half)
	o := e.rawParams(g, k, j, cond, ctx)
	var u string
	if e.cfg.Transform == model.Affine {
		s := g.mul(g.b.f32(0.5), o[1])
		if forward {
			u = g.add(o[0], g.mul(g.op("Exp", s), w))
			logDet = g.opA("ReduceSum", []*onnxpb.AttributeProto{attrInt("keepdims", 0)}, s, g.b.ints(-1))
		} else {
			u = g.mul(g.sub(w, o[0]), g.op("Exp", g.op("Neg", s)))
		}
	} else if forward {
		u, logDet = e.nlsqForward(g, o, w)
	} else {
		u = e.nlsqInverse(g, o, w)
	}
	if transLo == 0 {
		return g.concatLast(u, cond), logDet
	}
	return g.concatLast(cond, u), logDet
}

// nlsqForward returns u = a + b·w + c/(1+(d·w+f)²) and Σ log(du/dw) over
// the last axis, in float32.
func (e *exporter) nlsqForward(g *graph, o []string, w string) (u, logDet string) {
	a, b, c, d, f := e.nlsqPseudo(g, o)
	one := g.b.f32(1)
	arg := g.add(g.mul(d, w), f)
	den := g.add(one, g.mul(arg, arg))
	u = g.add(g.add(a, g.mul(b, w)), g.div(c, den))
	deriv := g.sub(b, g.div(g.mul(g.mul(g.b.f32(2), g.mul(c, d)), arg), g.mul(den, den)))
	logDet = g.opA("ReduceSum", []*onnxpb.AttributeProto{attrInt("keepdims", 0)}, g.op("Log", deriv), g.b.ints(-1))
	return u, logDet
}

// nlsqInverse solves the cubic for w in float64, exactly as
// kernels.NLSqInverse64, with sinh, cosh, asinh and acosh written with Exp,
// Log and Sqrt (ONNX Runtime's CPU kernels for those four take float32
// only).
func (e *exporter) nlsqInverse(g *graph, o []string, u string) string {
	a32, b32, c32, d32, f32 := e.nlsqPseudo(g, o)
	cast := func(x string) string {
		return g.opA("Cast", []*onnxpb.AttributeProto{attrInt("to", int64(onnxpb.TensorProto_DOUBLE))}, x)
	}
	a, b, c, d, f, uu := cast(a32), cast(b32), cast(c32), cast(d32), cast(f32), cast(u)
	k := g.b.f64
	ua := g.sub(uu, a)
	f2 := g.add(k(1), g.mul(f, f))
	dd := g.mul(d, d)
	A := g.op("Neg", g.mul(b, dd))
	B := g.sub(g.mul(ua, dd), g.mul(k(2), g.mul(b, g.mul(d, f))))
	C := g.sub(g.mul(k(2), g.mul(ua, g.mul(d, f))), g.mul(b, f2))
	Dc := g.sub(g.mul(ua, f2), c)
	AA := g.mul(A, A)
	p := g.div(g.sub(g.mul(k(3), g.mul(A, C)), g.mul(B, B)), g.mul(k(3), AA))
	BBB := g.mul(B, g.mul(B, B))
	q := g.div(g.add(g.sub(g.mul(k(2), BBB), g.mul(k(9), g.mul(A, g.mul(B, C)))), g.mul(k(27), g.mul(AA, Dc))),
		g.mul(k(27), g.mul(AA, A)))
	third := k(1.0 / 3)
	// p > 0: t = −2·√(p/3)·sinh(asinh((3q/(2p))·√(3/p))/3).
	s := g.mul(g.div(g.mul(k(3), q), g.mul(k(2), p)), g.op("Sqrt", g.div(k(3), p)))
	as := e.asinh(g, s)
	tPos := g.mul(g.mul(k(-2), g.op("Sqrt", g.div(p, k(3)))), e.sinh(g, g.mul(as, third)))
	// p < 0: t = −2·sign(q)·√(|p|/3)·cosh(acosh(|(−3|q|/(2p))·√(3/|p|) − 1| + 1)/3).
	ap := g.op("Abs", p)
	inner := g.sub(g.mul(g.div(g.mul(k(-3), g.op("Abs", q)), g.mul(k(2), p)), g.op("Sqrt", g.div(k(3), ap))), k(1))
	ac := e.acosh(g, g.add(g.op("Abs", inner), k(1)))
	tNeg := g.mul(g.mul(g.mul(k(-2), g.op("Sign", q)), g.op("Sqrt", g.div(ap, k(3)))), e.cosh(g, g.mul(ac, third)))
	t := g.op("Where", g.op("Greater", p, k(0)), tPos, tNeg)
	w := g.sub(t, g.div(B, g.mul(k(3), A)))
	return g.opA("Cast", []*onnxpb.AttributeProto{attrInt("to", int64(onnxpb.TensorProto_FLOAT))}, w)
}

// sinh(x) = (eˣ − e⁻ˣ)/2.
func (e *exporter) sinh(g *graph, x string) string {
	return g.mul(g.b.f64(0.5), g.sub(g.op("Exp", x), g.op("Exp", g.op("Neg", x))))
}

// cosh(x) = (eˣ + e⁻ˣ)/2.
func (e *exporter) cosh(g *graph, x string) string {
	return g.mul(g.b.f64(0.5), g.add(g.op("Exp", x), g.op("Exp", g.op("Neg", x))))
}

// asinh(x) = sign(x)·log(|x| + √(x²+1)), with √(x²+1) = |x|·√(1+1/x²) for
// |x| > 1 so that x² cannot overflow.
func (e *exporter) asinh(g *graph, x string) string {
	k := g.b.f64
	ax := g.op("Abs", x)
	big := g.op("Greater", ax, k(1))
	safe := g.op("Where", big, ax, k(1)) // avoids 1/0 in the unused branch
	rootBig := g.mul(ax, g.op("Sqrt", g.add(k(1), g.div(k(1), g.mul(safe, safe)))))
	rootSmall := g.op("Sqrt", g.add(g.mul(x, x), k(1)))
	root := g.op("Where", big, rootBig, rootSmall)
	return g.mul(g.op("Sign", x), g.op("Log", g.add(ax, root)))
}

// acosh(x) = log(x + x·√(1 − 1/x²)) for x ≥ 1 (no overflow for large x).
func (e *exporter) acosh(g *graph, x string) string {
	k := g.b.f64
	return g.op("Log", g.add(x, g.mul(x, g.op("Sqrt", g.sub(k(1), g.div(k(1), g.mul(x, x)))))))
}

// onnxGate maps ONNX's LSTM gate order (i, o, f, c) to ours (i, f, g, o).
var onnxGate = [4]int{0, 3, 1, 2}

// lstmW returns our [in, 4H] matrix as ONNX's [1, 4H, in] (transposed, gates reordered).
func lstmW(w []float32, in, H int) []float32 {
	out := make([]float32, 4*H*in)
	for og, ours := range onnxGate {
		for u := 0; u < H; u++ {
			for r := 0; r < in; r++ {
				out[(og*H+u)*in+r] = w[r*4*H+ours*H+u]
			}
		}
	}
	return out
}

// lstmB reorders a 4H bias into ONNX's gate order.
func lstmB(b []float32, H int) []float32 {
	out := make([]float32, 4*H)
	for og, ours := range onnxGate {
		copy(out[og*H:(og+1)*H], b[ours*H:(ours+1)*H])
	}
	return out
}

// batchDim returns a 1-D int64 tensor [N] from x's first axis.
func batchDim(g *graph, x string, axis int) string {
	return g.op("Slice", g.op("Shape", x), g.b.ints(int64(axis)), g.b.ints(int64(axis+1)))
}

// Encoder returns the ONNX encoder of f (see the package comment).
func Encoder(f *model.Flow) (*onnxpb.ModelProto, error) {
	e, err := newExporter(f, "seqflow_encode")
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	T, F, H, L, V := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.V
	b := e.b
	g := b.main()
	g.g.Input = append(g.g.Input, valueInfo(EncoderInput, onnxpb.TensorProto_INT64, -1, int64(T)))
	unit := b.constF32("unit_embed", []int64{int64(V), int64(F)}, f.UnitEmbedding())
	xT := g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0)}, EncoderInput)
	y := g.opA("Gather", []*onnxpb.AttributeProto{attrInt("axis", 0)}, unit, xT) // T×N×F
	n := batchDim(g, EncoderInput, 0)
	steps := T - 1
	eye := make([]float32, steps*steps)
	for i := 0; i < steps; i++ {
		eye[i*steps+i] = 1
	}
	onehot := g.op("Expand", b.constF32("step_onehot", []int64{int64(steps), 1, int64(steps)}, eye),
		g.opA("Concat", []*onnxpb.AttributeProto{attrInt("axis", 0)}, b.ints(int64(steps)), n, b.ints(int64(steps))))
	stateShape := g.opA("Concat", []*onnxpb.AttributeProto{attrInt("axis", 0)}, b.ints(1), n, b.ints(int64(H)))
	var logDet string
	for k, blk := range f.Params().Blocks {
		cst := f.Constants(k)
		// Layer 0 input: [y_t ; onehot(t)] for t < T−1, weights [Wih[:F] ; StepBias[:T−1]].
		w0 := make([]float32, (F+steps)*4*H)
		copy(w0, blk.LSTM[0].Wih.Data[:F*4*H])
		copy(w0[F*4*H:], cst.StepBias[:steps*4*H])
		x := g.concatLast(g.op("Slice", y, b.ints(0), b.ints(int64(steps)), b.ints(0)), onehot)
		var top string
		for l := 0; l < L; l++ {
			lw := blk.LSTM[l]
			in := H
			wData := lw.Wih.Data
			bias := ""
			if l == 0 {
				in, wData = F+steps, w0
			} else {
				bs := append(lstmB(lw.Bih.Data, H), lstmB(lw.Bhh.Data, H)...)
				bias = b.constF32(fmt.Sprintf("b%d_lstm%d_b", k, l), []int64{1, int64(8 * H)}, bs)
			}
			W := b.constF32(fmt.Sprintf("b%d_lstm%d_w", k, l), []int64{1, int64(4 * H), int64(in)}, lstmW(wData, in, H))
			R := b.constF32(fmt.Sprintf("b%d_lstm%d_r", k, l), []int64{1, int64(4 * H), int64(H)}, lstmW(lw.Whh.Data, H, H))
			h0 := g.op("Expand", b.constF32(fmt.Sprintf("b%d_h0_%d", k, l), []int64{1, 1, int64(H)}, cst.H0[l]), stateShape)
			c0 := g.op("Expand", b.constF32(fmt.Sprintf("b%d_c0_%d", k, l), []int64{1, 1, int64(H)}, cst.C0[l]), stateShape)
			outs := g.node("LSTM", []string{x, W, R, bias, "", h0, c0}, 1, attrInt("hidden_size", int64(H)))
			x = g.op("Squeeze", outs[0], b.ints(1)) // (T−1)×N×H
			if l == L-1 {
				top = g.opA("Concat", []*onnxpb.AttributeProto{attrInt("axis", 0)}, h0, x) // T×N×H: ctx_0 = h0
			}
		}
		for j := range blk.Couplings {
			var ld string
			y, ld = e.coupling(g, k, j, y, top, true)
			if logDet == "" {
				logDet = ld
			} else {
				logDet = g.add(logDet, ld)
			}
		}
	}
	g.g.Node = append(g.g.Node, identity(g, EncoderOutput, g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0, 2)}, y)))
	g.g.Node = append(g.g.Node, identity(g, EncoderLogDet, g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0)}, logDet)))
	g.g.Output = append(g.g.Output,
		valueInfo(EncoderOutput, onnxpb.TensorProto_FLOAT, -1, int64(T), int64(F)),
		valueInfo(EncoderLogDet, onnxpb.TensorProto_FLOAT, -1, int64(T)))
	return b.model(fmt.Sprintf("nfbo SeqFlow encoder: x int64 [N,%d] -> z float32 [N,%d,%d], logdet float32 [N,%d]", T, T, F, T)), nil
}

func identity(g *graph, out, in string) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: strp("Identity"), Name: strp(g.b.fresh("n_out")), Input: []string{in}, Output: []string{out}}
}

func strp(s string) *string { return &s }

// DecodeMode selects how a decoder graph runs its T sequential positions.
type DecodeMode int

const (
	// DecodeLoop runs each block as one ONNX Loop over positions: a small
	// graph, one session run per batch. The default.
	DecodeLoop DecodeMode = iota
	// DecodeUnrolled repeats the step subgraph T times per block: no Loop
	// overhead, but K·T copies of the step (large for the paper preset).
	DecodeUnrolled
)

// Decoder returns the ONNX decoder of f (see the package comment), with
// each block as an ONNX Loop.
func Decoder(f *model.Flow) (*onnxpb.ModelProto, error) { return DecoderMode(f, DecodeLoop) }

// stepWeights are one block's LSTM weights in our layout (MatMul form).
type stepWeights struct {
	wih, whh, bias []string // per layer; bias[0] unused (stepBias instead)
	stepBias       string   // T×4H
}

func (e *exporter) stepWeights(k int) stepWeights {
	cfg, b := e.cfg, e.b
	F, H, T := cfg.F, cfg.H, cfg.T
	blk := e.f.Params().Blocks[k]
	cst := e.f.Constants(k)
	var sw stepWeights
	sw.stepBias = b.constF32(fmt.Sprintf("b%d_stepbias", k), []int64{int64(T), int64(4 * H)}, cst.StepBias)
	for l, lw := range blk.LSTM {
		sw.whh = append(sw.whh, b.constF32(fmt.Sprintf("b%d_whh%d", k, l), []int64{int64(H), int64(4 * H)}, lw.Whh.Data))
		if l == 0 {
			sw.wih = append(sw.wih, b.constF32(fmt.Sprintf("b%d_wih0", k), []int64{int64(F), int64(4 * H)}, lw.Wih.Data[:F*4*H]))
			sw.bias = append(sw.bias, "")
			continue
		}
		bs := make([]float32, 4*H)
		for i := range bs {
			bs[i] = lw.Bih.Data[i] + lw.Bhh.Data[i]
		}
		sw.wih = append(sw.wih, b.constF32(fmt.Sprintf("b%d_wih%d", k, l), []int64{int64(H), int64(4 * H)}, lw.Wih.Data))
		sw.bias = append(sw.bias, b.constF32(fmt.Sprintf("b%d_bias%d", k, l), []int64{int64(4 * H)}, bs))
	}
	return sw
}

// step emits one generation step of block k in g: it inverts the couplings
// of zt (N×F) with the context hs[L−1], then advances the LSTM with input
// [y_t ; c_{t+1}] (iter is the int64 scalar t). It returns y_t and the new
// states h_0, c_0, h_1, c_1, ….
func (e *exporter) step(g *graph, k int, sw stepWeights, zt, iter string, hs, cs []string) (yt string, states []string) {
	cfg := e.cfg
	yt = zt
	for j := cfg.Couplings - 1; j >= 0; j-- {
		yt, _ = e.coupling(g, k, j, yt, hs[len(hs)-1], false)
	}
	x := yt
	for l := range hs {
		gates := g.add(g.op("MatMul", x, sw.wih[l]), g.op("MatMul", hs[l], sw.whh[l]))
		if l == 0 {
			gates = g.add(gates, g.opA("Gather", []*onnxpb.AttributeProto{attrInt("axis", 0)}, sw.stepBias, iter))
		} else {
			gates = g.add(gates, sw.bias[l])
		}
		gs := g.node("Split", []string{gates}, 4, attrInt("axis", -1)) // i, f, g, o
		c := g.add(g.mul(g.op("Sigmoid", gs[1]), cs[l]), g.mul(g.op("Sigmoid", gs[0]), g.op("Tanh", gs[2])))
		h := g.mul(g.op("Sigmoid", gs[3]), g.op("Tanh", c))
		states = append(states, h, c)
		x = h
	}
	return yt, states
}

// initialStates returns block k's initial h and c per layer expanded to N×H.
func (e *exporter) initialStates(g *graph, k int, stateShape string) (hs, cs []string) {
	H := e.cfg.H
	cst := e.f.Constants(k)
	for l := range cst.H0 {
		hs = append(hs, g.op("Expand", e.b.constF32(fmt.Sprintf("b%d_h0_%d", k, l), []int64{int64(H)}, cst.H0[l]), stateShape))
		cs = append(cs, g.op("Expand", e.b.constF32(fmt.Sprintf("b%d_c0_%d", k, l), []int64{int64(H)}, cst.C0[l]), stateShape))
	}
	return hs, cs
}

// DecoderMode returns the ONNX decoder of f built in the given mode.
func DecoderMode(f *model.Flow, mode DecodeMode) (*onnxpb.ModelProto, error) {
	e, err := newExporter(f, "seqflow_decode")
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	T, F, H, L, V := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.V
	b := e.b
	g := b.main()
	g.g.Input = append(g.g.Input, valueInfo(DecoderInput, onnxpb.TensorProto_FLOAT, -1, int64(T), int64(F)))
	y := g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0, 2)}, DecoderInput) // T×N×F
	n := batchDim(g, DecoderInput, 0)
	stateShape := g.opA("Concat", []*onnxpb.AttributeProto{attrInt("axis", 0)}, n, b.ints(int64(H)))
	gather0 := []*onnxpb.AttributeProto{attrInt("axis", 0)}
	for k := cfg.Blocks - 1; k >= 0; k-- {
		sw := e.stepWeights(k)
		hs, cs := e.initialStates(g, k, stateShape)
		if mode == DecodeUnrolled {
			var yts []string
			for t := 0; t < T; t++ {
				iter := b.scalarI64(int64(t))
				yt, states := e.step(g, k, sw, g.opA("Gather", gather0, y, iter), iter, hs, cs)
				yts = append(yts, g.op("Unsqueeze", yt, b.ints(0)))
				for l := 0; l < L; l++ {
					hs[l], cs[l] = states[2*l], states[2*l+1]
				}
			}
			y = g.opA("Concat", gather0, yts...)
			continue
		}
		// Loop body: (iter, cond, h_0, c_0, …) → (cond, h_0', c_0', …, y_t).
		body := &graph{b: b, g: &onnxpb.GraphProto{Name: strp(fmt.Sprintf("block%d_step", k))}}
		iter, condIn := b.fresh("iter"), b.fresh("cond_in")
		body.g.Input = append(body.g.Input, valueInfo(iter, onnxpb.TensorProto_INT64), valueInfo(condIn, onnxpb.TensorProto_BOOL))
		bh, bc := make([]string, L), make([]string, L)
		for l := 0; l < L; l++ {
			bh[l], bc[l] = b.fresh(fmt.Sprintf("h%d", l)), b.fresh(fmt.Sprintf("c%d", l))
			body.g.Input = append(body.g.Input, valueInfo(bh[l], onnxpb.TensorProto_FLOAT, -1, int64(H)), valueInfo(bc[l], onnxpb.TensorProto_FLOAT, -1, int64(H)))
		}
		yt, states := e.step(body, k, sw, body.opA("Gather", gather0, y, iter), iter, bh, bc)
		condOut := body.op("Identity", condIn)
		body.g.Output = append(body.g.Output, valueInfo(condOut, onnxpb.TensorProto_BOOL))
		for _, s := range states {
			body.g.Output = append(body.g.Output, valueInfo(s, onnxpb.TensorProto_FLOAT, -1, int64(H)))
		}
		ytOut := body.op("Identity", yt)
		body.g.Output = append(body.g.Output, valueInfo(ytOut, onnxpb.TensorProto_FLOAT, -1, int64(F)))
		loopIn := []string{b.scalarI64(int64(T)), b.boolConst(true)}
		for l := 0; l < L; l++ {
			loopIn = append(loopIn, hs[l], cs[l])
		}
		lo := g.node("Loop", loopIn, 2*L+1, attrGraph("body", body.g))
		y = lo[2*L] // T×N×F
	}
	unitT := make([]float32, F*V)
	unit := f.UnitEmbedding()
	for j := 0; j < V; j++ {
		for i := 0; i < F; i++ {
			unitT[i*V+j] = unit[j*F+i]
		}
	}
	scores := g.op("MatMul", y, b.constF32("unit_embed_t", []int64{int64(F), int64(V)}, unitT)) // T×N×V
	ids := g.opA("ArgMax", []*onnxpb.AttributeProto{attrInt("axis", -1), attrInt("keepdims", 0)}, scores)
	ids = g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0)}, ids) // N×T
	stop := b.scalarI64(model.StopID)
	isStop := g.opA("Cast", []*onnxpb.AttributeProto{attrInt("to", int64(onnxpb.TensorProto_INT64))}, g.op("Equal", ids, stop))
	after := g.op("Greater", g.op("CumSum", isStop, b.scalarI64(1)), b.scalarI64(0))
	g.g.Node = append(g.g.Node, identity(g, DecoderOutput, g.op("Where", after, stop, ids)))
	g.g.Node = append(g.g.Node, identity(g, DecoderVectors, g.opA("Transpose", []*onnxpb.AttributeProto{attrInts("perm", 1, 0, 2)}, y)))
	g.g.Output = append(g.g.Output,
		valueInfo(DecoderOutput, onnxpb.TensorProto_INT64, -1, int64(T)),
		valueInfo(DecoderVectors, onnxpb.TensorProto_FLOAT, -1, int64(T), int64(F)))
	return b.model(fmt.Sprintf("nfbo SeqFlow decoder: z float32 [N,%d,%d] -> x int64 [N,%d], v float32 [N,%d,%d]", T, F, T, T, F)), nil
}

// Names of a step model's inputs and outputs (see StepModel).
const (
	StepInputZ    = "z_t"  // float32 N×F, block input at position t
	StepInputT    = "t"    // int64 scalar position
	StepOutput    = "y_t"  // float32 N×F, block output at position t
	StepState     = "h%d"  // float32 N×H, input and (with "_out") output, per layer
	StepCell      = "c%d"  // float32 N×H, likewise
	StepOutSuffix = "_out" // appended to the state names for outputs
)

// StepModel returns a one-position generation step of block k, for a
// decoder driven from Go (an alternative to the Loop, kept to measure
// against it): inputs z_t, t and the states h0, c0, h1, …; outputs y_t and
// h0_out, c0_out, ….
func StepModel(f *model.Flow, k int) (*onnxpb.ModelProto, error) {
	e, err := newExporter(f, fmt.Sprintf("seqflow_step%d", k))
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	F, H, L := cfg.F, cfg.H, cfg.LSTMLayers
	g := e.b.main()
	g.g.Input = append(g.g.Input, valueInfo(StepInputZ, onnxpb.TensorProto_FLOAT, -1, int64(F)), valueInfo(StepInputT, onnxpb.TensorProto_INT64))
	hs, cs := make([]string, L), make([]string, L)
	for l := 0; l < L; l++ {
		hs[l], cs[l] = fmt.Sprintf(StepState, l), fmt.Sprintf(StepCell, l)
		g.g.Input = append(g.g.Input, valueInfo(hs[l], onnxpb.TensorProto_FLOAT, -1, int64(H)), valueInfo(cs[l], onnxpb.TensorProto_FLOAT, -1, int64(H)))
	}
	yt, states := e.step(g, k, e.stepWeights(k), StepInputZ, StepInputT, hs, cs)
	g.g.Node = append(g.g.Node, identity(g, StepOutput, yt))
	g.g.Output = append(g.g.Output, valueInfo(StepOutput, onnxpb.TensorProto_FLOAT, -1, int64(F)))
	for l := 0; l < L; l++ {
		g.g.Node = append(g.g.Node, identity(g, hs[l]+StepOutSuffix, states[2*l]), identity(g, cs[l]+StepOutSuffix, states[2*l+1]))
		g.g.Output = append(g.g.Output,
			valueInfo(hs[l]+StepOutSuffix, onnxpb.TensorProto_FLOAT, -1, int64(H)),
			valueInfo(cs[l]+StepOutSuffix, onnxpb.TensorProto_FLOAT, -1, int64(H)))
	}
	return e.b.model(fmt.Sprintf("nfbo SeqFlow generation step of block %d", k)), nil
}
