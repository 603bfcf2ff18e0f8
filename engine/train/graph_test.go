package train

import (
	"fmt"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
	"gorgonia.org/tensor"
)

// tinyConfig is small enough for finite differences over every tensor and
// still has 2 blocks (both coupling orders), 2 LSTM layers (inter-layer
// path) and deep coupling nets.
func tinyConfig(tr model.Transform) model.Config {
	return model.Config{V: 7, F: 4, T: 4, MaxT: 5, Blocks: 2, LSTMLayers: 2, H: 3,
		Couplings: 3, U: 5, CouplingDepth: 2, Transform: tr,
		Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

func randomSeqs(cfg model.Config, n int, rng *rand.Rand) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = make([]int, cfg.T)
		for t := range out[i] {
			out[i][t] = rng.IntN(cfg.V)
		}
	}
	return out
}

// The graph's loss and per-row NLL equal the float64 loop reference, in
// float64 (to 1e-10) and float32 (to rel 1e-5), with a padded batch.
func TestGraphMatchesReference(t *testing.T) {
	for _, opts := range []graphOpts{{}, {lstmOp: true}, {lstmOp: true, couplingOp: true}} {
		for _, tr := range []model.Transform{model.NLSq, model.Affine} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%v/%v", variant(opts), tr, dt), func(t *testing.T) {
					checkReference(t, tr, dt, opts)
				})
			}
		}
	}
}

func variant(o graphOpts) string {
	v := "unrolled"
	if o.lstmOp {
		v = "lstmop"
	}
	if o.couplingOp {
		v += "+couplingop"
	}
	return v
}

// Sequences trained at padded lengths below T (Options.RandomPad) give the
// rows, and the loss, of the same sequences in a graph of their own length.
func TestGraphRandomPadMatchesReference(t *testing.T) {
	for _, opts := range []graphOpts{{}, {lstmOp: true}, {lstmOp: true, couplingOp: true}} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", variant(opts), dt), func(t *testing.T) {
				checkReferenceLens(t, model.NLSq, dt, opts, []int{3, 2})
			})
		}
	}
}

func checkReference(t *testing.T, tr model.Transform, dt tensor.Dtype, opts graphOpts) {
	checkReferenceLens(t, tr, dt, opts, nil)
}

func checkReferenceLens(t *testing.T, tr model.Transform, dt tensor.Dtype, opts graphOpts, lens []int) {
	{
		{
			{
				cfg := tinyConfig(tr)
				p := modeltest.FarParams(t, cfg, 3)
				rng := rand.New(rand.NewPCG(5, 5))
				const B = 3
				seqs := randomSeqs(cfg, 2, rng) // one padding row
				in := prepareBatch(p, seqs, lens, B, cfg.Noise, rng)
				g, err := buildGraphOpts(p, B, dt, kindEval, opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := g.run(in, 0, nil); err != nil {
					t.Fatal(err)
				}
				want, wantNLL := refLoss(p, in, B)
				tol := 1e-10
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				got := g.lossValue()
				if !close(got, want, tol) {
					t.Errorf("loss %.10g, reference %.10g", got, want)
				}
				nll := g.rowValues(0)
				for r := range nll {
					if in.wt[r] == 0 {
						continue
					}
					if !close(nll[r], wantNLL[r], tol) {
						t.Errorf("row %d: nll %.10g, reference %.10g", r, nll[r], wantNLL[r])
					}
				}
			}
		}
	}
}

// close reports |a−b| ≤ tol·(1+|b|).
func close(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// runFixed runs g on in without touching its dropout masks.
func runFixed(g *flowGraph, in *batchInputs) error {
	g.setTokens(in)
	g.eps.set(in.eps)
	g.wt.set(in.wt)
	g.vm.Reset()
	return g.vm.RunAll()
}

// Central finite differences of the whole float64 loss (fixed noise,
// negatives and dropout masks) against gorgonia's gradient, on up to 6
// entries of every parameter slot: both transforms with dropout off (masks
// of ones), and NLSq with random dropout masks.
func TestGradientCheck(t *testing.T) {
	for _, tc := range []struct {
		tr      model.Transform
		dropout bool
		opts    graphOpts
		lens    []int
	}{{model.NLSq, false, graphOpts{}, nil}, {model.Affine, false, graphOpts{}, nil}, {model.NLSq, true, graphOpts{}, nil},
		{model.NLSq, false, graphOpts{lstmOp: true}, nil}, {model.Affine, true, graphOpts{lstmOp: true}, nil},
		{model.NLSq, false, graphOpts{lstmOp: true}, []int{2, 3}}, {model.NLSq, true, graphOpts{}, []int{3, 2}},
		{model.NLSq, false, graphOpts{lstmOp: true, couplingOp: true}, nil}, {model.Affine, false, graphOpts{couplingOp: true}, nil},
		{model.NLSq, true, graphOpts{lstmOp: true, couplingOp: true}, []int{2, 3}}} {
		name := variant(tc.opts) + "/" + tc.tr.String()
		if tc.dropout {
			name += "+dropout"
		}
		if tc.lens != nil {
			name += fmt.Sprintf("+lens%v", tc.lens)
		}
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(tc.tr)
			p := modeltest.FarParams(t, cfg, 11)
			rng := rand.New(rand.NewPCG(2, 9))
			const B = 3
			in := prepareBatch(p, randomSeqs(cfg, 2, rng), tc.lens, B, cfg.Noise, rng)
			g, err := buildGraphOpts(p, B, tensor.Float64, kindTrain, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.run(in, 0, nil); err != nil { // masks of ones
				t.Fatal(err)
			}
			if tc.dropout {
				fillDropout(g, 0.3, rng)
				if err := runFixed(g, in); err != nil {
					t.Fatal(err)
				}
			}
			analytic := make([][]float64, len(g.slots))
			for i, s := range g.slots {
				analytic[i] = append([]float64(nil), s.grad.Value().Data().([]float64)...)
			}
			const h = 1e-5
			var maxErr float64
			var worst string
			for i, s := range g.slots {
				data := s.val.Data().([]float64)
				idx := rng.Perm(len(data))
				// Every entry of the positional rows (gathered and scattered
				// per sequence length) and of the initial-state input weight
				// (fed c_0 per sequence); 6 of the others.
				if len(idx) > 6 && !(tc.lens != nil && s.shape[0] == cfg.P()) {
					idx = idx[:6]
				}
				for _, j := range idx {
					orig := data[j]
					data[j] = orig + h
					if err := runFixed(g, in); err != nil {
						t.Fatal(err)
					}
					up := g.lossValue()
					data[j] = orig - h
					if err := runFixed(g, in); err != nil {
						t.Fatal(err)
					}
					down := g.lossValue()
					data[j] = orig
					num := (up - down) / (2 * h)
					a := analytic[i][j]
					e := math.Abs(a-num) / math.Max(1e-3, math.Abs(num))
					if e > maxErr {
						maxErr, worst = e, fmt.Sprintf("%s[%d]: analytic %.9g, numeric %.9g", s.node.Name(), j, a, num)
					}
					if math.Abs(a-num) > 1e-6+1e-4*math.Abs(num) {
						t.Errorf("%s[%d]: analytic %.9g, numeric %.9g", s.node.Name(), j, a, num)
					}
				}
			}
			t.Logf("%d slots, max rel err %.2e (%s)", len(g.slots), maxErr, worst)
		})
	}
}

// The dense positional input (PyTorch's form) and the row gather give the
// same loss and gradients.
func TestPositionalGatherMatchesDense(t *testing.T) {
	cfg := tinyConfig(model.NLSq)
	p := modeltest.FarParams(t, cfg, 4)
	rng := rand.New(rand.NewPCG(1, 3))
	const B = 2
	in := prepareBatch(p, randomSeqs(cfg, B, rng), nil, B, cfg.Noise, rng)
	var losses [2]float64
	var grads [2][]float64 // gradient of block 0's layer-0 Wih, F+P rows
	for i, dense := range []bool{false, true} {
		var all map[gradKey][]float64
		losses[i], all = runGrads(t, p, B, in, graphOpts{posDense: dense}, 0, nil)
		wih := p.Blocks[0].LSTM[0].Wih
		// Gathered, Wih is two slots (token and positional rows); dense, one.
		grads[i] = append(all[gradKey{wih.Name, 0}], all[gradKey{wih.Name, cfg.F * wih.Shape[1]}]...)
	}
	if !close(losses[0], losses[1], 1e-12) {
		t.Errorf("loss: gather %.15g, dense %.15g", losses[0], losses[1])
	}
	if len(grads[0]) != len(grads[1]) {
		t.Fatalf("gradient lengths %d and %d", len(grads[0]), len(grads[1]))
	}
	for i := range grads[0] {
		if !close(grads[0][i], grads[1][i], 1e-12) {
			t.Fatalf("dWih[%d]: gather %.15g, dense %.15g", i, grads[0][i], grads[1][i])
		}
	}
}

// The fused coupling op gives the loss and every gradient entry of the
// elementary-node coupling, in float64, for both transforms and with
// random padded lengths.
func TestCouplingOpMatchesNodes(t *testing.T) {
	for _, tr := range []model.Transform{model.NLSq, model.Affine} {
		t.Run(tr.String(), func(t *testing.T) {
			cfg := tinyConfig(tr)
			p := modeltest.FarParams(t, cfg, 8)
			rng := rand.New(rand.NewPCG(6, 1))
			const B = 3
			in := prepareBatch(p, randomSeqs(cfg, 2, rng), []int{cfg.T, 3}, B, cfg.Noise, rng)
			var losses [2]float64
			var grads [2]map[gradKey][]float64
			for i, fused := range []bool{false, true} {
				losses[i], grads[i] = runGrads(t, p, B, in, graphOpts{lstmOp: true, couplingOp: fused}, 0, nil)
			}
			sameGrads(t, losses, grads)
		})
	}
}

// sameGrads requires the loss and every gradient entry of the fused graph
// (index 1) to equal the elementary graph's (index 0) to rounding.
func sameGrads(t *testing.T, losses [2]float64, grads [2]map[gradKey][]float64) {
	t.Helper()
	if !close(losses[1], losses[0], 1e-12) {
		t.Errorf("loss: fused %.15g, nodes %.15g", losses[1], losses[0])
	}
	if len(grads[0]) != len(grads[1]) {
		t.Fatalf("%d parameter slots fused, %d with nodes", len(grads[1]), len(grads[0]))
	}
	n := 0
	for k, want := range grads[0] {
		got := grads[1][k]
		if len(got) != len(want) {
			t.Fatalf("%s+%d: %d gradient entries fused, %d with nodes", k.name, k.off, len(got), len(want))
		}
		for j := range want {
			if !close(got[j], want[j], 1e-10) {
				t.Errorf("%s+%d [%d]: fused %.15g, nodes %.15g", k.name, k.off, j, got[j], want[j])
			}
			n++
		}
	}
	t.Logf("loss %.6g, %d gradient entries equal", losses[0], n)
}

// gradKey names a parameter slot: its tensor and first element.
type gradKey struct {
	name string
	off  int
}

// runGrads builds the float64 training graph with opts, runs it on in with
// dropout masks drawn from rng at rate dropRate (0: masks of ones) and
// returns the loss and each slot's gradient.
func runGrads(t *testing.T, p *model.Params, B int, in *batchInputs, opts graphOpts, dropRate float64, rng *rand.Rand) (float64, map[gradKey][]float64) {
	t.Helper()
	g, err := buildGraphOpts(p, B, tensor.Float64, kindTrain, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.run(in, dropRate, rng); err != nil {
		t.Fatal(err)
	}
	grads := map[gradKey][]float64{}
	for _, s := range g.slots {
		grads[gradKey{s.t.Name, s.off}] = append([]float64(nil), s.grad.Value().Data().([]float64)...)
	}
	return g.lossValue(), grads
}

// The fused ops reuse their output and gradient buffers from run to run
// (gorgonia sums gradients into the ones it is handed): a graph run a
// second time, on another batch with other padded lengths, gives exactly
// the loss and gradients of a fresh graph run on that batch once.
func TestGraphRerunMatchesFresh(t *testing.T) {
	for _, opts := range []graphOpts{{lstmOp: true, couplingOp: true}, {lstmOp: true}, {}} {
		t.Run(variant(opts), func(t *testing.T) {
			cfg := tinyConfig(model.NLSq)
			p := modeltest.FarParams(t, cfg, 5)
			rng := rand.New(rand.NewPCG(4, 4))
			const B = 3
			first := prepareBatch(p, randomSeqs(cfg, 3, rng), []int{cfg.T, 2, 3}, B, cfg.Noise, rng)
			second := prepareBatch(p, randomSeqs(cfg, 2, rng), []int{3, cfg.T}, B, cfg.Noise, rng)
			g, err := buildGraphOpts(p, B, tensor.Float64, kindTrain, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []*batchInputs{first, second} {
				if err := g.run(in, 0, nil); err != nil {
					t.Fatal(err)
				}
			}
			loss := g.lossValue()
			wantLoss, want := runGrads(t, p, B, second, opts, 0, nil)
			if loss != wantLoss {
				t.Errorf("loss of the second run %.17g, of a fresh graph %.17g", loss, wantLoss)
			}
			n := 0
			for _, s := range g.slots {
				w := want[gradKey{s.t.Name, s.off}]
				for j, v := range s.grad.Value().Data().([]float64) {
					if v != w[j] {
						t.Fatalf("%s+%d [%d]: second run %.17g, fresh graph %.17g", s.t.Name, s.off, j, v, w[j])
					}
					n++
				}
			}
			t.Logf("%d gradient entries equal", n)
		})
	}
}

// With the same dropout masks, the fused graph (LSTM op, coupling op and the
// masks applied by maskOp) and the elementary one (unrolled LSTM, coupling
// nodes, gorgonia's products) give the same loss and gradients: the masks
// line up entry for entry, since the fused graph's [S·B, H] mask holds the
// unrolled graph's per-step [B, H] masks in step order.
func TestDropoutFusedMatchesNodes(t *testing.T) {
	cfg := tinyConfig(model.NLSq) // 2 LSTM layers: an inter-layer mask as well as the context masks
	p := modeltest.FarParams(t, cfg, 13)
	rng := rand.New(rand.NewPCG(3, 5))
	const B = 3
	in := prepareBatch(p, randomSeqs(cfg, 3, rng), nil, B, cfg.Noise, rng)
	var losses [2]float64
	var grads [2]map[gradKey][]float64
	for i, opts := range []graphOpts{{}, {lstmOp: true, couplingOp: true}} {
		losses[i], grads[i] = runGrads(t, p, B, in, opts, 0.3, rand.New(rand.NewPCG(8, 8)))
	}
	sameGrads(t, losses, grads)
}
