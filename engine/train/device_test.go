package train

import (
	"context"
	"fmt"
	"github.com/nfbo/nfbo/engine/enginetest"
	"github.com/nfbo/nfbo/model/modeltest"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/model"
	"gorgonia.org/tensor"
)

// graphGrads returns the gradient of every tensor of p (Tensors order) from
// the slots of the float32 graph g after a run: collectGrads's assembly.
func graphGrads(p *model.Params, g *flowGraph) [][]float32 {
	index := map[*model.Tensor]int{}
	out := make([][]float32, 0)
	for i, t := range p.Tensors() {
		index[t] = i
		out = append(out, make([]float32, t.Len()))
	}
	for _, s := range g.slots {
		copy(out[index[s.t]][s.off:], s.grad.Value().Data().([]float32))
	}
	return out
}

// graphMasks returns the dropout masks fed to the fused graph g, as
// step.Batch holds them.
func graphMasks(g *flowGraph) (inter, ctx [][]float32) {
	for k := range g.interMask {
		for l := range g.interMask[k] {
			inter = append(inter, g.interMask[k][l][0].val.Data().([]float32))
		}
	}
	for k := range g.ctxMask {
		ctx = append(ctx, g.ctxMask[k].val.Data().([]float32))
	}
	return inter, ctx
}

// parityReport compares per tensor, norm-wise, and returns the largest
// relative error of each tensor kind and a line per tensor off by more than
// tol.
func parityReport(p *model.Params, got, want [][]float32, tol float64) (worst map[string]float64, bad []string) {
	worst = map[string]float64{}
	for i, t := range p.Tensors() {
		e := enginetest.RelNorm(got[i], want[i])
		k := enginetest.TensorKind(t.Name)
		if !(e <= worst[k]) { // NaN sticks
			worst[k] = e
		}
		if !(e <= tol) {
			bad = append(bad, fmt.Sprintf("%s: rel err %.3g", t.Name, e))
		}
	}
	return worst, bad
}

// adamParityEps is Adam's ε in the parity tests (see stepParity).
const adamParityEps = 1e-4

// formatWorst lists parityReport's worst errors by tensor kind, sorted (a
// kind missing had no error at all).
func formatWorst(worst map[string]float64) string {
	kinds := make([]string, 0, len(worst))
	for k := range worst {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s %.1e", k, worst[k])
	}
	return b.String()
}

// stepParity runs one training step of the fused float32 graph and one of
// engine/step's orchestration on dev from the same inputs (the graph's
// batch and dropout masks), then one Adam step each, and returns the
// failures: a loss off by more than 1e-5 relative, a tensor's gradient,
// updated weights or moments off by more than 1e-4 relative (norm-wise).
func stepParity(t *testing.T, dev step.Device, cfg model.Config, lens []int, frozen bool) (fails []string, worst map[string]float64) {
	t.Helper()
	p := modeltest.FarParams(t, cfg, 21)
	rng := rand.New(rand.NewPCG(22, 23))
	const B = 4
	seqs := randomSeqs(cfg, 3, rng) // and a padding sequence
	in := prepareBatch(p, seqs, lens, B, cfg.Noise, rng)
	g, err := buildGraphOpts(p, B, tensor.Float32, kindTrain, graphOpts{lstmOp: true, couplingOp: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.run(in, cfg.Dropout, rng); err != nil {
		t.Fatal(err)
	}
	want := graphGrads(p, g)
	if frozen {
		clear(want[0])
	}
	wantLoss := g.lossValue()

	s, err := step.New(dev, cfg, B, step.Options{FreezeEmbeddings: frozen})
	if err != nil {
		t.Fatal(err)
	}
	s.SetParams(p)
	inter, ctx := graphMasks(g)
	res, err := s.Run(stepBatch(in, inter, ctx))
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(res.Loss, wantLoss); !(e <= 1e-5) {
		fails = append(fails, fmt.Sprintf("loss %.8g, graph %.8g (rel %.2g)", res.Loss, wantLoss, e))
	}
	got := make([][]float32, len(want))
	for i := range got {
		got[i] = make([]float32, len(want[i]))
	}
	if err := s.GradsTo(got); err != nil {
		t.Fatal(err)
	}
	worst, bad := parityReport(p, got, want, 1e-4)
	for _, b := range bad {
		fails = append(fails, "gradient "+b)
	}
	if e := relErr(res.GradNorm, GradNorm(want)); !(e <= 1e-4) {
		fails = append(fails, fmt.Sprintf("gradient norm %.8g, graph %.8g", res.GradNorm, GradNorm(want)))
	}

	// One Adam step each, from zero moments, with clipping. Adam's first
	// step moves a weight by lr·g/(|g| + ε): where rounding leaves a
	// gradient entry near ε = 1e-8 (a sum that cancels), its noise of
	// ~1e-10 moves the weight by ~1e-5·lr and the comparison measures that
	// cancellation, not the implementations. ε = 1e-4 keeps it about them.
	ref := p.Clone()
	ra, da := NewAdam(ref.Tensors()), NewAdam(p.Tensors())
	ra.ClipNorm, da.ClipNorm = 0.5, 0.5
	ra.Eps, da.Eps = adamParityEps, adamParityEps
	if frozen {
		ra.Frozen = make([]bool, len(want))
		ra.Frozen[0] = true
	}
	ra.Step(ref.Tensors(), want)
	s.Apply(da.next(res.GradNorm))
	upd := p.Clone()
	if err := s.ParamsTo(upd); err != nil {
		t.Fatal(err)
	}
	if err := s.MomentsTo(da.m, da.v); err != nil {
		t.Fatal(err)
	}
	// The update itself, not the weights it is added to, is compared.
	delta := func(q *model.Params) [][]float32 {
		var out [][]float32
		for i, t := range q.Tensors() {
			d := make([]float32, t.Len())
			for j, v := range t.Data {
				d[j] = v - p.Tensors()[i].Data[j]
			}
			out = append(out, d)
		}
		return out
	}
	for _, c := range []struct {
		what      string
		got, want [][]float32
	}{{"Adam update", delta(upd), delta(ref)}, {"first moment", da.m, ra.m}, {"second moment", da.v, ra.v}} {
		w, bad := parityReport(p, c.got, c.want, 1e-4)
		for _, b := range bad {
			fails = append(fails, c.what+" "+b)
		}
		t.Logf("%s: max rel err per tensor kind:%s", c.what, formatWorst(w))
	}
	return fails, worst
}

// engine/step's orchestration on the CPU Device gives the fused gorgonia
// graph's training step: the same loss to float32 rounding, every tensor's
// gradient, Adam update and moments within 1e-4 (relative, norm-wise), for
// both transforms, one and two LSTM layers, with dropout, padding, random
// padded lengths and frozen embeddings. The worst error per tensor kind is logged.
func TestStepMatchesGraph(t *testing.T) {
	for _, c := range []struct {
		tr     model.Transform
		layers int
		lens   []int
		frozen bool
	}{{model.NLSq, 2, nil, false}, {model.Affine, 2, nil, false}, {model.NLSq, 2, []int{5, 2, 4, 5}, false},
		{model.NLSq, 2, nil, true}, {model.NLSq, 1, []int{3, 5, 2, 5}, false}} {
		name := fmt.Sprintf("%v/layers=%d", c.tr, c.layers)
		if c.lens != nil {
			name += fmt.Sprintf("/lens%v", c.lens)
		}
		if c.frozen {
			name += "/frozen"
		}
		t.Run(name, func(t *testing.T) {
			cfg := modeltest.ParityConfig(c.tr)
			cfg.LSTMLayers = c.layers // one: the small preset's, no inter-layer mask
			fails, worst := stepParity(t, CPU{}, cfg, c.lens, c.frozen)
			for _, f := range fails {
				t.Error(f)
			}
			t.Logf("max rel gradient error per tensor kind:%s", formatWorst(worst))
		})
	}
}

// skewed is the CPU Device with one kernel deliberately wrong.
type skewed struct {
	CPU
	which string
}

// LSTMBackward scales the gate gradients by 1.001.
func (d skewed) LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut step.Buf, S, B, H int) {
	d.CPU.LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut, S, B, H)
	if d.which == "lstm" {
		g := all(dG)[:S*B*4*H]
		for i := range g {
			g[i] *= 1.001
		}
	}
}

// ScatterAddRows drops the first row's contribution (position 0 of
// sequence 0, of nonzero weight).
func (d skewed) ScatterAddRows(dst, src step.Buf, idx step.IntBuf, n, k, w int) {
	if d.which == "scatter" {
		src, idx, n = src.Slice(w, src.Len()), idx.Slice(k, idx.Len()), n-1
	}
	d.CPU.ScatterAddRows(dst, src, idx, n, k, w)
}

// NLSqBackward perturbs one raw parameter's gradient.
func (d skewed) NLSqBackward(dO, dw, o, w, dOut step.Buf, n, half int) {
	d.CPU.NLSqBackward(dO, dw, o, w, dOut, n, half)
	if d.which == "nlsq" {
		all(dO)[2] += 1e-2
	}
}

// The parity check can fail: a device with one kernel's backward wrong
// (the LSTM cell's gate gradients 0.1% off; the embedding scatter missing a
// row; one NLSq raw gradient perturbed) fails it, naming the tensors.
func TestStepParityCatchesWrongKernel(t *testing.T) {
	for _, which := range []string{"lstm", "scatter", "nlsq"} {
		t.Run(which, func(t *testing.T) {
			fails, _ := stepParity(t, skewed{which: which}, modeltest.ParityConfig(model.NLSq), nil, false)
			if len(fails) == 0 {
				t.Fatal("a wrong kernel passed the parity check")
			}
			t.Logf("%d failures, e.g. %s", len(fails), fails[0])
		})
	}
}

// dropoutMasks draws, from the same random state, the masks fillDropout
// feeds to the fused graph, and leaves the stream where fillDropout does.
func TestDropoutMasksMatchGraph(t *testing.T) {
	cfg := modeltest.ParityConfig(model.NLSq)
	p := modeltest.FarParams(t, cfg, 3)
	const B = 3
	g, err := buildGraphOpts(p, B, tensor.Float32, kindTrain, graphOpts{lstmOp: true, couplingOp: true})
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	fillDropout(g, cfg.Dropout, r1)
	wantI, wantC := graphMasks(g)
	gotI, gotC := dropoutMasks(cfg, B, cfg.Dropout, r2)
	if !slices.EqualFunc(gotI, wantI, slices.Equal) || !slices.EqualFunc(gotC, wantC, slices.Equal) {
		t.Error("dropoutMasks differ from the graph's masks")
	}
	if r1.Uint64() != r2.Uint64() {
		t.Error("dropoutMasks left the random stream elsewhere")
	}
}

// A trainer with Options.Device keeps the weights and Adam's moments on the
// device between steps: from the same seeds, a resident run and one that
// reads everything back and uploads it again after every step (Params,
// then a changed host) take the same four pretraining steps (random padded
// lengths, dropout, a partial batch), a validation and a fine-tuning epoch
// of other Params, to the bit, with the embeddings free or frozen (then
// exactly unchanged); the host's Params are current after Pretrain and
// FineTune.
func TestTrainerDeviceResident(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(fmt.Sprintf("frozen=%v", frozen), func(t *testing.T) {
			cfg := modeltest.ParityConfig(model.NLSq)
			start := modeltest.FarParams(t, cfg, 31)
			data := randomSeqs(cfg, 11, rand.New(rand.NewPCG(32, 33)))
			var stats [2][]StepStats
			var trs [2]*Trainer
			var tuned [2]*model.Params
			for i := range 2 {
				tr, err := NewTrainer(start.Clone(), rand.NewPCG(34, 35), Options{Batch: 3, FineTuneBatch: 4,
					RandomPad: true, PadToken: 1, FreezeEmbeddings: frozen, Device: CPU{}})
				if err != nil {
					t.Fatal(err)
				}
				rec := RecorderFunc(func(p Progress) error {
					stats[i] = append(stats[i], p.StepStats)
					if i == 1 { // the round trip
						tr.Params()
						tr.hostChanged()
					}
					return nil
				})
				if err := tr.Pretrain(context.Background(), data, PretrainConfig{Steps: 4, Recorder: rec, Val: data[:2], ValEvery: 2}); err != nil {
					t.Fatal(err)
				}
				if tr.res.ahead {
					t.Error("Pretrain returned with the host's weights behind the device's")
				}
				tuned[i] = start.Clone()
				st, err := tr.FineTune(context.Background(), tuned[i], data[:6])
				if err != nil {
					t.Fatal(err)
				}
				stats[i] = append(stats[i], st)
				trs[i] = tr
			}
			if len(stats[0]) != 5 || !slices.Equal(stats[0], stats[1]) {
				t.Errorf("resident %+v\nround trips %+v", stats[0], stats[1])
			}
			for k, ps := range [][2]*model.Params{{trs[0].Params(), trs[1].Params()}, {tuned[0], tuned[1]}} {
				for j, ts := range ps[0].Tensors() {
					if !slices.Equal(ts.Data, ps[1].Tensors()[j].Data) {
						t.Errorf("params %d tensor %d differ", k, j)
					}
				}
			}
			if !slices.EqualFunc(trs[0].adam.m, trs[1].adam.m, slices.Equal) || !slices.EqualFunc(trs[0].adam.v, trs[1].adam.v, slices.Equal) {
				t.Error("Adam's moments differ")
			}
			if slices.Equal(tuned[0].Blocks[0].LSTM[0].Whh.Data, start.Blocks[0].LSTM[0].Whh.Data) {
				t.Error("FineTune left the Params it was given unchanged")
			}
			if frozen && !slices.Equal(trs[0].Params().Embed.Data, start.Embed.Data) {
				t.Error("the device step changed frozen embeddings")
			}
			if trs[0].Steps() != 4 || trs[0].adam.Steps() != 4+2 {
				t.Errorf("steps %d, Adam's %d; want 4 and 6", trs[0].Steps(), trs[0].adam.Steps())
			}
		})
	}
}

// Evaluate runs on the device: without noise (whose draws differ from the
// graph's) its NLL per token is the gorgonia graph's to float32 rounding, it
// leaves the training random stream where it was, and it reads the weights
// after steps taken on the device.
func TestEvaluateOnDevice(t *testing.T) {
	cfg := modeltest.ParityConfig(model.NLSq)
	cfg.Noise = 0
	start := modeltest.FarParams(t, cfg, 41)
	data := randomSeqs(cfg, 9, rand.New(rand.NewPCG(42, 43)))
	ctx := context.Background()
	graphNLL := func(p *model.Params) EvalStats {
		t.Helper()
		es, err := newGraphTrainer(p.Clone(), rand.NewPCG(1, 1), fusedOpts, false).evaluate(ctx, data, 4)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	want := graphNLL(start)
	tr, err := NewTrainer(start.Clone(), rand.NewPCG(44, 45), Options{Batch: 3, EvalBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Evaluate(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	before := tr.rng.Uint64()
	tr2, _ := NewTrainer(start.Clone(), rand.NewPCG(44, 45), Options{Batch: 3, EvalBatch: 4})
	if tr2.rng.Uint64() != before {
		t.Error("Evaluate moved the training random stream")
	}
	if e := relErr(got.NLL, want.NLL); !(e <= 1e-5) || got.Seqs != want.Seqs {
		t.Errorf("device NLL %.8g over %d, graph %.8g over %d (rel %.2g)", got.NLL, got.Seqs, want.NLL, want.Seqs, e)
	}

	// After device steps, the evaluation sees the trained weights: the
	// graph evaluating the synced Params agrees.
	for range 3 {
		if _, err := tr.Step(ctx, data[:3]); err != nil {
			t.Fatal(err)
		}
	}
	after, err := tr.Evaluate(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	synced := graphNLL(tr.Params())
	if e := relErr(after.NLL, synced.NLL); !(e <= 1e-5) || relErr(after.NLL, want.NLL) < 1e-4 {
		t.Errorf("after 3 steps: device NLL %.8g, graph on the synced weights %.8g, before the steps %.8g", after.NLL, synced.NLL, want.NLL)
	}
}
