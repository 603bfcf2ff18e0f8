package gpustep

import (
	"context"
	"fmt"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/enginetest"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// The GPU tests (NFBO_GPU=1, scripts/gpu-check.sh's gpustep step) share one Device: opening one compiles the
// kernels, a second or two each time.
var (
	sharedOnce sync.Once
	shared     *Device
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the GPU:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedGPU returns the tests' GPU Device, or skips without NFBO_GPU=1 (and fails without a GPU then). With
// NFBO_GPU_EMULATE=1 instead, the "GPU" is the emulator: the GPU tests' own code then runs on any machine (the
// kernels compared with themselves, the step with train.CPU), which checks the tests, not the GPU.
func sharedGPU(t *testing.T) *Device {
	t.Helper()
	emulate := os.Getenv("NFBO_GPU_EMULATE") == "1"
	if !gpuEnabled() && !emulate {
		t.Skip("set NFBO_GPU=1 on a machine with a GPU")
	}
	sharedOnce.Do(func() {
		if emulate && !gpuEnabled() {
			shared, sharedErr = newDevice(newEmu(), cuda.DeviceInfo{Name: "emulator (NFBO_GPU_EMULATE=1)"})
			return
		}
		shared, sharedErr = Open(cuda.OSEnv(), 0)
		if sharedErr == nil {
			t.Logf("GPU %+v", shared.Info())
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func randn(rng *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sd)
	}
	return x
}

// kernelCase runs one Device call on the GPU and on the emulator from the same buffers and compares every buffer
// afterwards, entry by entry: |GPU − reference| ≤ tol·(1 + |reference|). Float buffers are given by their
// contents; pad entries are added before and after each (the call gets the middle view), so that a kernel that
// writes outside its view, or a Device that gets an offset wrong, is caught too.
type kernelCase struct {
	name string
	fl   [][]float32
	in   [][]int32
	call func(d *Device, b []step.Buf, ib []step.IntBuf)
	tol  float64
}

const pad = 37

func (c kernelCase) run(t *testing.T, gpu *Device) {
	t.Helper()
	em, _ := emulated(t)
	defer em.Close()
	var outs [2][][]float32
	for k, d := range []*Device{gpu, em} {
		var bs, whole []step.Buf
		var ibs []step.IntBuf
		for _, x := range c.fl {
			w := d.Alloc(len(x) + 2*pad)
			init := make([]float32, len(x)+2*pad)
			for i := range init {
				init[i] = float32(i%7) - 3.5 // recognisable, never a result
			}
			copy(init[pad:], x)
			d.Upload(w, init)
			whole = append(whole, w)
			bs = append(bs, w.Slice(pad, pad+len(x)))
		}
		for _, x := range c.in {
			ib := d.AllocInt(len(x))
			d.UploadInt(ib, x)
			ibs = append(ibs, ib)
		}
		c.call(d, bs, ibs)
		for _, w := range whole {
			out := make([]float32, w.Len())
			if err := d.Download(out, w); err != nil {
				t.Fatal(err)
			}
			outs[k] = append(outs[k], out)
			d.Free(w)
		}
		for _, ib := range ibs {
			d.FreeInt(ib)
		}
	}
	for i := range outs[0] {
		bad := 0
		for j, w := range outs[1][i] {
			g := outs[0][i][j]
			if !(math.Abs(float64(g)-float64(w)) <= c.tol*(1+math.Abs(float64(w)))) && !(math.IsNaN(float64(g)) && math.IsNaN(float64(w))) {
				if bad < 5 {
					t.Errorf("%s: buffer %d entry %d: GPU %.9g, reference %.9g", c.name, i, j-pad, g, w)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: buffer %d: %d of %d entries off", c.name, i, bad, len(outs[0][i]))
		}
	}
}

// Each kernel against its float64 reference (the emulator's), through the Device's calls as the step makes
// them, on odd shapes past a block multiple, on views with pads around them.
func TestGPUKernels(t *testing.T) {
	gpu := sharedGPU(t)
	rng := rand.New(rand.NewPCG(1, 1))
	const n, w = 1003, 7
	idx := func(n, V int, skip bool) []int32 {
		x := make([]int32, n)
		for i := range x {
			x[i] = int32(rng.IntN(V))
			if skip && i%5 == 3 {
				x[i] = -1
			}
		}
		return x
	}
	unit := func(n, w int) []float32 { // rows of norm 1, the first zero
		x := randn(rng, n*w, 1)
		clear(x[:w])
		kernels.NormalizeRowsTo(x, x, n, w)
		return x
	}
	raw := randn(rng, n*3*5, 1) // NLSq or affine parameters of n rows of half 3
	cases := []kernelCase{
		{name: "add_n", fl: [][]float32{randn(rng, n, 1), randn(rng, n, 1), make([]float32, n)},
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) { d.Add(b[2], b[0], b[1], n); d.Add(b[0], b[0], b[1], n) }},
		{name: "mul_n", fl: [][]float32{randn(rng, n, 1), randn(rng, n, 1), make([]float32, n)},
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) { d.Mul(b[2], b[0], b[1], n); d.Mul(b[1], b[0], b[1], n) }},
		{name: "relu_grad", fl: [][]float32{randn(rng, n, 1), func() []float32 {
			h := randn(rng, n, 1)
			for i := range h {
				h[i] = max(h[i], 0)
			}
			h[5] = float32(math.Copysign(0, -1))
			return h
		}()}, call: func(d *Device, b []step.Buf, _ []step.IntBuf) { d.ReLUGrad(b[0], b[1], n) }},
		{name: "col_sums", fl: [][]float32{make([]float32, 300), randn(rng, n*300, 1)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) { d.ColSums(b[0], b[1], n, 300) }},
		{name: "copy_cols", fl: [][]float32{randn(rng, n*9, 1), randn(rng, n*5, 1)},
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.CopyCols(b[0], 9, 2, b[1], 5, 1, n, 3, false)
				d.CopyCols(b[0], 9, 6, b[1], 5, 0, n, 3, true)
				d.CopyCols(b[0].Slice(0, 5*100), 5, 0, b[1], 5, 0, 100, 5, false) // whole rows: one copy
				d.CopyCols(b[1], 1, 0, b[0], 9, 8, n*5/9, 1, true)
			}},
		{name: "gather_rows", fl: [][]float32{make([]float32, n*w), randn(rng, 11*w, 1), make([]float32, n*w)},
			in: [][]int32{idx(n, 11, true), idx(2*n, 11, true)},
			call: func(d *Device, b []step.Buf, ib []step.IntBuf) {
				d.GatherRows(b[0], b[1], ib[0], n, 1, w)
				d.GatherRows(b[2], b[1], ib[1], n, 2, w)
			}},
		{name: "scatter_add_rows", fl: [][]float32{randn(rng, 11*w, 1), randn(rng, n*w, 1), randn(rng, 29*300, 1), randn(rng, n*300, 1)},
			in: [][]int32{idx(n, 11, true), idx(2*n, 29, true)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, ib []step.IntBuf) {
				d.ScatterAddRows(b[0], b[1], ib[0], n, 1, w)
				d.ScatterAddRows(b[2], b[3], ib[1], n, 2, 300) // more columns than threads
			}},
		{name: "bias_act", fl: [][]float32{randn(rng, n*w, 1), randn(rng, w, 1), randn(rng, n*w, 1)},
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.BiasAct(b[0], b[1], n, w, true)
				d.BiasAct(b[2], b[1], n, w, false)
			}},
		{name: "lstm_cell_step", fl: [][]float32{randn(rng, 37*4*13, 1), randn(rng, 37*4*13, 0.5), randn(rng, 37*13, 1),
			make([]float32, 37*13), make([]float32, 37*13), make([]float32, 37*13), randn(rng, 37*4*13, 1), randn(rng, 4*13, 0.5)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.LSTMCellForward(b[0], b[1], 37, b[2], b[3], b[4], b[5], 37, 13)
				d.LSTMCellForward(b[6], b[7], 1, b[2], b[2], b[4], b[5], 37, 13) // c over cPrev
			}},
		{name: "lstm_cell_bwd", fl: [][]float32{make([]float32, 37*4*13), func() []float32 {
			a := randn(rng, 37*4*13, 1)
			for i := range a {
				if (i/13)%4 == 2 {
					a[i] = float32(math.Tanh(float64(a[i])))
				} else {
					a[i] = float32(1 / (1 + math.Exp(-float64(a[i]))))
				}
			}
			return a
		}(), randn(rng, 37*13, 0.5), randn(rng, 37*13, 1), randn(rng, 37*13, 1), randn(rng, 37*13, 1), randn(rng, 37*13, 1)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.LSTMCellBackward(b[0], b[6], b[1], b[2], b[3], b[4], b[5], 37, 13)
			}},
		{name: "nlsq", fl: [][]float32{make([]float32, n*4), raw, randn(rng, n*3, 1), make([]float32, n*15), make([]float32, n*3), randn(rng, n*4, 1)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.NLSqForward(b[0], b[1], b[2], n, 3)
				d.NLSqBackward(b[3], b[4], b[1], b[2], b[5], n, 3)
			}},
		{name: "affine", fl: [][]float32{make([]float32, n*4), raw[:n*6], randn(rng, n*3, 1), make([]float32, n*6), make([]float32, n*3), randn(rng, n*4, 1)}, tol: 1e-6,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.AffineForward(b[0], b[1], b[2], n, 3)
				d.AffineBackward(b[3], b[4], b[1], b[2], b[5], n, 3)
			}},
		{name: "normalize_rows", fl: [][]float32{make([]float32, n*w), func() []float32 { x := randn(rng, n*w, 1); clear(x[w : 2*w]); return x }(),
			randn(rng, n*w, 1), make([]float32, n*w)}, tol: 1e-6,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.NormalizeRows(b[0], b[1], n, w)
				d.NormalizeRowsGrad(b[3], b[2], b[1], n, w)
				d.NormalizeRowsGrad(b[2], b[2], b[1], n, w) // dx over dy
			}},
		{name: "similarity", fl: [][]float32{make([]float32, n), randn(rng, n*w, 1), unit(n, w), unit(n, w),
			make([]float32, n*w), make([]float32, n*w), randn(rng, n*w, 1), randn(rng, n, 0.1)}, tol: 1e-6,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.Add(b[1], b[1], b[2], n*w) // v = ex + ε
				d.Similarity(b[0], b[1], b[2], b[3], n, w)
				d.SimilarityGrad(b[4], b[5], b[6], b[1], b[2], b[3], b[7], n, w)
				d.SimilarityGrad(b[6], b[5], b[6], b[1], b[2], b[3], b[7], n, w) // dex over dv
			}},
		{name: "gauss_nll", fl: [][]float32{make([]float32, n), randn(rng, n*w, 1), randn(rng, n, 1), make([]float32, n*w), randn(rng, n, 0.1)}, tol: 1e-6,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.GaussNLL(b[0], b[1], b[2], n, w)
				d.GaussNLLGrad(b[3], b[1], b[4], n, w)
			}},
		{name: "adam_update", fl: [][]float32{randn(rng, n, 1), randn(rng, n, 1), randn(rng, n, 0.01), func() []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.Float64() * 1e-3)
			}
			return v
		}()}, tol: 1e-7,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				d.Adam(b[0], b[1], b[2], b[3], n, kernels.AdamCoeffs{Scale: 0.37, Beta1: 0.9, Beta2: 0.999,
					StepSize: 1e-3 / (1 - math.Pow(0.9, 3)), BC2Sqrt: math.Sqrt(1 - math.Pow(0.999, 3)), Eps: 1e-8})
			}},
		{name: "gemm", fl: [][]float32{randn(rng, 37*53, 1), randn(rng, 53*29, 1), make([]float32, 4*37*29)}, tol: 1e-5,
			call: func(d *Device, b []step.Buf, _ []step.IntBuf) {
				c := func(i int) step.Buf { return b[2].Slice(i*37*29, (i+1)*37*29) }
				d.Gemm(false, false, 1, b[0], 37, 53, b[1], 53, 29, 0, c(0))
				d.Gemm(false, true, 0.5, b[0], 37, 53, b[1], 29, 53, 0, c(1)) // b read as 29×53
				d.Gemm(true, false, 1, b[0], 53, 37, b[1], 53, 29, 0, c(2))   // a read as 53×37
				d.Gemm(false, false, 1, b[0], 37, 53, b[1], 53, 29, 1, c(2))  // accumulate
				d.Zero(c(3).Slice(0, 100))
				d.Copy(c(3).Slice(100, 200), c(0).Slice(0, 100))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, gpu) })
	}
	t.Run("norm", func(t *testing.T) {
		em, _ := emulated(t)
		defer em.Close()
		for _, n := range []int{1, 255, 2049, 1003*1003 + 5, 3 << 20} {
			x := randn(rng, n, 1)
			var got [2]float64
			for k, d := range []*Device{gpu, em} {
				b := d.Alloc(n)
				d.Upload(b, x)
				var err error
				if got[k], err = d.Norm(b, n); err != nil {
					t.Fatal(err)
				}
				d.Free(b)
			}
			if relErr(got[0], got[1]) > 1e-10 { // both double; the sums' orders differ
				t.Errorf("n=%d: GPU norm %.17g, reference %.17g", n, got[0], got[1])
			}
		}
	})
}

// The step on the GPU gives train.CPU's: loss, every gradient, the norm, Adam's update and moments (stepParity's
// tolerances), in every parity case and at the small preset's widths (H = 256: more columns than a block's
// threads in the positional scatter, rows of 1024 gates).
func TestGPUStepMatchesCPU(t *testing.T) {
	gpu := sharedGPU(t)
	for _, c := range parityCases {
		t.Run(c.String(), func(t *testing.T) {
			cfg := modeltest.ParityConfig(c.tr)
			cfg.LSTMLayers = c.layers
			for _, f := range stepParity(t, gpu, cfg, c) {
				t.Error(f)
			}
		})
	}
	t.Run("small-preset", func(t *testing.T) {
		cfg := model.Small(41, 21)
		for _, f := range stepParity(t, gpu, cfg, parityCase{tr: model.NLSq, layers: 1, lens: []int{21, 9, 17, 21, 3, 21, 12, 21}, drop: true, B: 8}) {
			t.Error(f)
		}
	})
	if n := len(gpu.live); n != gpu.ownBuffers() {
		t.Errorf("%d buffers left after the steps' Close, want the Device's own scratch only (%d)", n, gpu.ownBuffers())
	}
}

// trackConfig is the 200-step test's model: two blocks of two 64-unit LSTM layers, three couplings, small enough
// for the CPU to keep up.
func trackConfig() model.Config {
	return model.Config{V: 23, F: 16, T: 16, MaxT: 24, Blocks: 2, LSTMLayers: 2, H: 64,
		Couplings: 3, U: 32, CouplingDepth: 2, Transform: model.NLSq,
		Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// trackData returns n sequences of length T: a start token, a random body and stop-token padding.
func trackData(cfg model.Config, n int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int, n)
	for i := range out {
		s := make([]int, cfg.T)
		L := 3 + rng.IntN(cfg.T-3)
		for t := 1; t < cfg.T; t++ {
			s[t] = 1
			if t < L {
				s[t] = 2 + rng.IntN(cfg.V-2)
			}
		}
		out[i] = s
	}
	return out
}

// pretrain trains tr to steps, returning each step's stats.
func pretrain(t *testing.T, tr *train.Trainer, data [][]int, steps int64) []train.StepStats {
	t.Helper()
	var st []train.StepStats
	rec := train.RecorderFunc(func(p train.Progress) error { st = append(st, p.StepStats); return nil })
	if err := tr.Pretrain(context.Background(), data, train.PretrainConfig{Steps: steps, Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	return st
}

// trackFails compares two runs' step losses: the first steps within 1e-4 (one step's rounding, compounded a
// few times), and the mean loss of every window of 20 steps within 2% (the runs drift apart by rounding as
// any two float32 runs do; the windows say whether they learn alike). It logs the largest difference per window.
func trackFails(t *testing.T, what string, got, want []train.StepStats) (fails []string) {
	t.Helper()
	if len(got) != len(want) {
		return []string{fmt.Sprintf("%s: %d steps, want %d", what, len(got), len(want))}
	}
	for i := range min(3, len(got)) {
		if e := relErr(got[i].Loss, want[i].Loss); !(e <= 1e-4) {
			fails = append(fails, fmt.Sprintf("%s: step %d loss %.7g, CPU %.7g (rel %.2g)", what, i+1, got[i].Loss, want[i].Loss, e))
		}
	}
	desync := -1
	for i := range got {
		if desync < 0 && got[i].Rejected != want[i].Rejected {
			desync = i + 1
		}
	}
	if desync > 0 {
		t.Logf("%s: from step %d the noise's rejections differ, so the random streams do too", what, desync)
	}
	for lo := 0; lo < len(got); lo += 20 {
		hi := min(lo+20, len(got))
		var g, c, worst float64
		for i := lo; i < hi; i++ {
			g += got[i].Loss
			c += want[i].Loss
			worst = max(worst, relErr(got[i].Loss, want[i].Loss))
		}
		t.Logf("%s: steps %d-%d: mean loss %.5g, CPU %.5g; largest step difference %.2g", what, lo+1, hi, g/float64(hi-lo), c/float64(hi-lo), worst)
		if e := relErr(g, c); !(e <= 0.02) {
			fails = append(fails, fmt.Sprintf("%s: steps %d-%d: mean loss %.5g, CPU %.5g (rel %.2g)", what, lo+1, hi, g/float64(hi-lo), c/float64(hi-lo), e))
		}
	}
	return fails
}

// 200 pretraining steps through the trainer on the GPU track the same steps on the CPU Device, from the same
// weights and seeds: issue #33's condition for pretraining on a GPU. Both runs must also learn (the last
// window's mean loss below the first's).
func TestGPUPretrainTracksCPU(t *testing.T) {
	gpu := sharedGPU(t)
	cfg := trackConfig()
	data := trackData(cfg, 400, 5)
	var runs [2][]train.StepStats
	for i, dev := range []step.Device{train.CPU{}, gpu} {
		tr, err := train.NewTrainer(modeltest.FarParams(t, cfg, 3), rand.NewPCG(4, 4), train.Options{Batch: 16, RandomPad: true, PadToken: 1, Device: dev})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = pretrain(t, tr, data, 200)
	}
	for _, f := range trackFails(t, "GPU", runs[1], runs[0]) {
		t.Error(f)
	}
	mean := func(s []train.StepStats) float64 {
		var m float64
		for _, x := range s {
			m += x.Loss
		}
		return m / float64(len(s))
	}
	for i, r := range runs {
		if first, last := mean(r[:20]), mean(r[len(r)-20:]); !(last < first) {
			t.Errorf("run %d did not learn: mean loss %.5g over the first 20 steps, %.5g over the last", i, first, last)
		}
	}
}

// ckptClone returns a copy of tr's checkpoint that later steps do not change.
func ckptClone(t *testing.T, tr *train.Trainer) *model.Checkpoint {
	t.Helper()
	ck, err := tr.Checkpoint(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ck.Params = ck.Params.Clone()
	return ck
}

// Checkpoints are interchangeable: a run checkpointed on the GPU resumes on the CPU, and one checkpointed on the
// CPU resumes on the GPU, each tracking the run that went on where it was (the first step after the resume
// within one step's rounding); and a run resumed on the GPU from its own checkpoint ends with the weights of the
// run that went straight on, bit for bit (the GPU step is deterministic).
func TestGPUCheckpointInterchange(t *testing.T) {
	gpu := sharedGPU(t)
	cfg := trackConfig()
	data := trackData(cfg, 200, 6)
	opts := func(d step.Device) train.Options {
		return train.Options{Batch: 16, RandomPad: true, PadToken: 1, Device: d}
	}
	for _, c := range []struct {
		name       string
		from, to   step.Device
		exactAfter bool
	}{{"gpu-to-cpu", gpu, train.CPU{}, false}, {"cpu-to-gpu", train.CPU{}, gpu, false}, {"gpu-to-gpu", gpu, gpu, true}} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := train.NewTrainer(modeltest.FarParams(t, cfg, 8), rand.NewPCG(9, 9), opts(c.from))
			if err != nil {
				t.Fatal(err)
			}
			pretrain(t, tr, data, 30)
			ck := ckptClone(t, tr)
			straight := pretrain(t, tr, data, 60)
			re, err := train.Restore(ck, opts(c.to))
			if err != nil {
				t.Fatal(err)
			}
			resumed := pretrain(t, re, data, 60)
			if re.Steps() != 60 {
				t.Fatalf("resumed run at step %d, want 60", re.Steps())
			}
			if c.exactAfter {
				for i, ts := range re.Params().Tensors() {
					if !slices.Equal(ts.Data, tr.Params().Tensors()[i].Data) {
						t.Errorf("tensor %s differs from the straight run's after resuming on the GPU", ts.Name)
					}
				}
				return
			}
			for _, f := range trackFails(t, c.name, resumed, straight) {
				t.Error(f)
			}
		})
	}
}

// The kernels of a step's draws and sums on the GPU give the emulator's, whose references are engine/step's Go
// twins: the layout and the negatives exactly, the noise to float32 rounding with the same rejections (the GPU's
// double log, sin and cos may differ from Go's in the last place), the dropout masks exactly, the loss's sums and
// the squared norm to 1e-12 relative (other summation orders), and Adam with clipping computed from the
// accumulators to 1e-6, skipped when the loss is not finite.
func TestGPUDraws(t *testing.T) {
	gpu := sharedGPU(t)
	cfg := model.Small(60, 33)
	const B, real = 50, 47
	N, F, V := cfg.T*B, cfg.F, cfg.V
	rng := rand.New(rand.NewPCG(71, 72))
	tok, lens := make([]int32, N), make([]int32, B)
	for r := range tok {
		tok[r] = int32(rng.IntN(V))
	}
	for b := range lens {
		lens[b] = int32(2 + rng.IntN(cfg.T-1))
	}
	embed := randn(rng, V*F, 1)
	key := kernels.KeyOf(rng.Uint64())
	nll, sim, g, p0 := randn(rng, N, 3), randn(rng, N, 1), randn(rng, 4099, 0.3), randn(rng, 4099, 1)
	type outs struct {
		wt, negWt, simC, pos0, eps, mask, p []float32
		pos, neg                            []int32
		acc                                 []float64
	}
	var o [2]outs
	em, _ := emulated(t)
	defer em.Close()
	for i, d := range []*Device{gpu, em} {
		bf := func(x []float32) step.Buf { b := d.Alloc(len(x)); d.Upload(b, x); return b }
		ib := func(x []int32) step.IntBuf { b := d.AllocInt(len(x)); d.UploadInt(b, x); return b }
		wt, negWt, simC := d.Alloc(N), d.Alloc(N), d.Alloc(N)
		pos, pos0 := d.AllocInt(2*(cfg.T-1)*B), d.Alloc(B*cfg.P())
		tb, lb, en, eps, neg := ib(tok), ib(lens), d.Alloc(V*F), d.Alloc(N*F), d.AllocInt(N)
		mask := d.Alloc(N*cfg.H + 3)
		acc := d.AllocAcc(step.AccSlots)
		d.Layout(wt, negWt, simC, pos, pos0, lb, B, cfg.T, cfg.MaxT, real, 0.7)
		d.NormalizeRows(en, bf(embed), V, F)
		d.DrawNegatives(neg, tb, wt, N, V, key)
		d.DrawNoise(eps, tb, wt, en, N, F, V, 0.6, 3, key, acc, step.AccRejected) // some rows rejected 3 times
		d.DrawDropout(mask, N*cfg.H+3, 0.2, key, 3)
		d.SumLoss(acc, step.AccLoss, bf(nll), bf(sim), wt, N, 0.7)
		gb := bf(g)
		d.SumSquares(acc, step.AccSq, gb, len(g))
		p, m, v := bf(p0), d.Alloc(len(g)), d.Alloc(len(g))
		coef := kernels.AdamCoeffs{Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3, BC2Sqrt: 0.03, Eps: 1e-8}
		d.AdamClipped(p, gb, m, v, len(g), coef, 0.5, acc, step.AccLoss, step.AccSq)
		o[i] = outs{wt: make([]float32, N), negWt: make([]float32, N), simC: make([]float32, N), pos0: make([]float32, B*cfg.P()),
			eps: make([]float32, N*F), mask: make([]float32, N*cfg.H+3), p: make([]float32, len(g)), acc: make([]float64, step.AccSlots)}
		for _, x := range []struct {
			dst []float32
			src step.Buf
		}{{o[i].wt, wt}, {o[i].negWt, negWt}, {o[i].simC, simC}, {o[i].pos0, pos0}, {o[i].eps, eps}, {o[i].mask, mask}, {o[i].p, p}} {
			if err := d.Download(x.dst, x.src); err != nil {
				t.Fatal(err)
			}
		}
		o[i].pos, o[i].neg = downloadInts(t, d, pos), downloadInts(t, d, neg)
		if err := d.ReadAcc(o[i].acc, acc); err != nil {
			t.Fatal(err)
		}
		// The guard: a NaN loss leaves the weights alone.
		before := append([]float32(nil), o[i].p...)
		d.ZeroAcc(acc)
		d.SumLoss(acc, step.AccLoss, bf([]float32{float32(math.NaN())}), bf([]float32{0}), bf([]float32{1}), 1, 1)
		d.AdamClipped(p, gb, m, v, len(g), coef, 0.5, acc, step.AccLoss, step.AccSq)
		after := make([]float32, len(g))
		if err := d.Download(after, p); err != nil || !slices.Equal(after, before) {
			t.Errorf("device %d: a NaN loss changed the weights (%v)", i, err)
		}
	}
	for _, x := range []struct {
		what      string
		got, want []float32
	}{{"weights", o[0].wt, o[1].wt}, {"-weights", o[0].negWt, o[1].negWt}, {"λ·weights", o[0].simC, o[1].simC}, {"initial codes", o[0].pos0, o[1].pos0},
		{"dropout mask", o[0].mask, o[1].mask}} {
		if !slices.Equal(x.got, x.want) {
			t.Errorf("%s differ", x.what)
		}
	}
	if !slices.Equal(o[0].pos, o[1].pos) || !slices.Equal(o[0].neg, o[1].neg) {
		t.Error("positional rows or negatives differ")
	}
	if e := enginetest.RelNorm(o[0].eps, o[1].eps); e > 1e-6 {
		t.Errorf("noise: rel err %.3g", e)
	}
	if e := enginetest.RelNorm(o[0].p, o[1].p); e > 1e-6 {
		t.Errorf("Adam's update: rel err %.3g", e)
	}
	for k, v := range o[0].acc {
		if relErr(v, o[1].acc[k]) > 1e-12 && v != o[1].acc[k] {
			t.Errorf("accumulator %d: GPU %.17g, reference %.17g", k, v, o[1].acc[k])
		}
	}
	if o[0].acc[step.AccRejected] == 0 {
		t.Error("no row was rejected: the test does not reach the rejection's last draw")
	}
	t.Logf("rejected rows %g of %d; accumulators %v", o[0].acc[step.AccRejected], N, o[0].acc)
}

func downloadInts(t *testing.T, d *Device, b step.IntBuf) []int32 {
	t.Helper()
	// An int buffer's words read as float32 bits, then converted back.
	f := make([]float32, b.Len())
	if err := d.Download(f, step.NewBuf(b.Mem(), b.Len())); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(f))
	for i, v := range f {
		out[i] = int32(math.Float32bits(v))
	}
	return out
}

// BenchmarkGPUStep times the training step on the GPU (NFBO_GPU=1) at the shapes of BENCHMARKS.md's table against
// PyTorch (scripts/bench_torch.py, V = 267): the small preset at B = 128, T = 109 and the paper preset at B = 128,
// T = 100, each step Train (inputs drawn on the GPU, Adam there, one read of the sums), submitted in one crossing.
// It reports seconds per step, sequences per second, the minutes of a 1.27M-molecule epoch, and the counts of one
// step (TestStepCounts).
func BenchmarkGPUStep(b *testing.B) {
	if !gpuEnabled() {
		b.Skip("set NFBO_GPU=1 on a machine with a GPU")
	}
	d, err := Open(cuda.OSEnv(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct {
		preset string
		B, T   int
	}{{"small", 128, 109}, {"medium", 128, 109}, {"paper", 128, 100}} {
		b.Run(fmt.Sprintf("%s/B=%d/T=%d", c.preset, c.B, c.T), func(b *testing.B) {
			cfg, err := model.Preset(c.preset, 267, c.T)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			p, err := model.NewParams(cfg, rng)
			if err != nil {
				b.Fatal(err)
			}
			s, err := step.New(d, cfg, c.B, step.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.SetParams(p)
			in := &step.Inputs{Tok: make([]int32, cfg.T*c.B), Lens: make([]int32, c.B), Real: c.B}
			for r := range in.Tok {
				in.Tok[r] = int32(rng.IntN(cfg.V))
			}
			for i := range in.Lens {
				in.Lens[i] = int32(cfg.T)
			}
			coef := kernels.AdamCoeffs{Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3, BC2Sqrt: 1, Eps: 1e-8}
			train := func() error {
				in.Key = kernels.KeyOf(rng.Uint64())
				return d.Do(func() error { _, err := s.Train(in, coef, 1); return err })
			}
			for range 3 { // warm-up: the first step allocates the dropout masks
				if err := train(); err != nil {
					b.Fatal(err)
				}
			}
			before := d.Counts()
			b.ResetTimer()
			for range b.N {
				if err := train(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(sec, "s/step")
			b.ReportMetric(float64(c.B)/sec, "seq/s")
			b.ReportMetric(1.27e6/(float64(c.B)/sec)/60, "min/epoch")
			per := d.Counts().Sub(before)
			b.Logf("%s on %s: %.4f s/step, %.0f seq/s, %.1f min per 1.27M-molecule epoch; per step %v", c.preset, d.Info().Name,
				sec, float64(c.B)/sec, 1.27e6/(float64(c.B)/sec)/60,
				Counts{H2D: per.H2D / int64(b.N), D2H: per.D2H / int64(b.N), Syncs: per.Syncs / int64(b.N), Launches: per.Launches / int64(b.N)})
		})
	}
}

// TF32 measured: the small preset's step on the GPU with TF32 tensor cores against train.CPU, each tensor's
// gradient error logged (BENCHMARKS.md records them); it fails only beyond 5e-2 relative, since TF32 is an option,
// not the default (full float32 is, for the parity and exact reconstruction).
func TestGPUStepTF32(t *testing.T) {
	gpu := sharedGPU(t)
	if err := gpu.SetTF32(true); err != nil {
		t.Fatal(err)
	}
	defer gpu.SetTF32(false)
	cfg := model.Small(41, 21)
	c := parityCase{tr: model.NLSq, layers: 1, lens: []int{21, 9, 17, 21, 3, 21, 12, 21}, drop: true, B: 8}
	fails := stepParity(t, gpu, cfg, c)
	for _, f := range fails {
		t.Log("TF32:", f)
	}
	for _, f := range fails {
		var e float64
		if _, err := fmt.Sscanf(f[strings.LastIndex(f, "rel err ")+len("rel err "):], "%g", &e); err == nil && e > 5e-2 {
			t.Errorf("TF32 beyond 5e-2: %s", f)
		}
	}
}
