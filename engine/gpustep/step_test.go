package gpustep

import (
	"errors"
	"fmt"
	"github.com/nfbo/nfbo/engine/enginetest"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// The GPU tests run only with NFBO_GPU=1 (DEVELOPERS.md "GPU work"), and then fail, not skip, without a GPU.
func gpuEnabled() bool { return os.Getenv("NFBO_GPU") == "1" }

// emulated returns a Device on a fresh emulator.
func emulated(t *testing.T) (*Device, *emu) {
	t.Helper()
	e := newEmu()
	d, err := newDevice(e, cuda.DeviceInfo{Name: "emulator"})
	if err != nil {
		t.Fatal(err)
	}
	return d, e
}

func relErr(a, b float64) float64 { return math.Abs(a-b) / max(math.Abs(b), 1e-300) }

// tensors returns zeroed slices shaped as p's tensors.
func tensors(p *model.Params) [][]float32 {
	var out [][]float32
	for _, t := range p.Tensors() {
		out = append(out, make([]float32, t.Len()))
	}
	return out
}

// parityCase is one configuration of the step compared between two devices.
type parityCase struct {
	tr     model.Transform
	layers int
	lens   []int
	frozen bool
	drop   bool
	B      int
}

func (c parityCase) String() string {
	s := fmt.Sprintf("%v/layers=%d/B=%d", c.tr, c.layers, c.B)
	if c.lens != nil {
		s += fmt.Sprintf("/lens%v", c.lens)
	}
	if c.frozen {
		s += "/frozen"
	}
	if !c.drop {
		s += "/nodropout"
	}
	return s
}

var parityCases = []parityCase{
	{model.NLSq, 2, nil, false, true, 4}, {model.Affine, 2, nil, false, true, 4}, {model.NLSq, 2, []int{5, 2, 4, 5}, false, true, 4},
	{model.NLSq, 2, nil, true, true, 4}, {model.NLSq, 1, []int{3, 5, 2, 5}, false, true, 4}, {model.Affine, 1, nil, false, false, 3},
	{model.NLSq, 2, nil, false, false, 1},
}

// stepParity runs one step of engine/step on dev and on train.CPU from the same weights and batch, then one
// Adam step each with clipping, and returns the failures: the loss off by more than 1e-5 relative (float32
// rounding of a sum of a few hundred terms), a tensor's gradient, Adam update or moments off by more than 1e-4
// relative (norm-wise), the gradient norm by more than 1e-5. It logs the worst relative error per kind.
func stepParity(t *testing.T, dev step.Device, cfg model.Config, c parityCase) (fails []string) {
	t.Helper()
	p := modeltest.FarParams(t, cfg, 21)
	rng := rand.New(rand.NewPCG(22, 23))
	b := randomBatch(cfg, c.B, max(1, c.B-1), c.lens, c.drop, rng)
	opts := step.Options{FreezeEmbeddings: c.frozen}
	var steps [2]*step.Step
	var res [2]step.Result
	var grads [2][][]float32
	for i, d := range []step.Device{train.CPU{}, dev} {
		s, err := step.New(d, cfg, c.B, opts)
		if err != nil {
			t.Fatal(err)
		}
		s.SetParams(p)
		if res[i], err = s.Run(b); err != nil {
			t.Fatal(err)
		}
		grads[i] = tensors(p)
		if err := s.GradsTo(grads[i]); err != nil {
			t.Fatal(err)
		}
		steps[i] = s
	}
	want, got := res[0], res[1]
	if e := relErr(got.Loss, want.Loss); !(e <= 1e-5) {
		fails = append(fails, fmt.Sprintf("loss %.8g, CPU %.8g (rel %.2g)", got.Loss, want.Loss, e))
	}
	if e := relErr(got.GradNorm, want.GradNorm); !(e <= 1e-5) {
		fails = append(fails, fmt.Sprintf("gradient norm %.8g, CPU %.8g (rel %.2g)", got.GradNorm, want.GradNorm, e))
	}
	compare := func(what string, got, want [][]float32) {
		worst := map[string]float64{}
		for i, ts := range p.Tensors() {
			e := enginetest.RelNorm(got[i], want[i])
			kind := enginetest.TensorKind(ts.Name)
			worst[kind] = max(worst[kind], e)
			if !(e <= 1e-4) {
				fails = append(fails, fmt.Sprintf("%s of %s: rel err %.3g", what, ts.Name, e))
			}
		}
		t.Logf("%s: worst rel err per kind %v", what, worst)
	}
	compare("gradient", grads[1], grads[0])

	// One Adam step each from zero moments, clipped (scale < 1), with ε = 1e-4 as in engine/train's parity
	// tests: an entry that cancels to near a tiny ε would measure the cancellation, not the devices.
	coef := kernels.AdamCoeffs{Scale: 0.5 / (want.GradNorm + 1e-6), Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3 / (1 - 0.9),
		BC2Sqrt: math.Sqrt(1 - 0.999), Eps: 1e-4}
	var upd, ms, vs [2][][]float32
	for i, s := range steps {
		s.Apply(coef)
		q := p.Clone()
		if err := s.ParamsTo(q); err != nil {
			t.Fatal(err)
		}
		upd[i] = tensors(p)
		for j, ts := range q.Tensors() {
			for k, v := range ts.Data {
				upd[i][j][k] = v - p.Tensors()[j].Data[k]
			}
		}
		ms[i], vs[i] = tensors(p), tensors(p)
		if err := s.MomentsTo(ms[i], vs[i]); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	compare("Adam update", upd[1], upd[0])
	compare("first moment", ms[1], ms[0])
	compare("second moment", vs[1], vs[0])
	if c.frozen {
		for k, v := range upd[1][0] {
			if v != 0 {
				fails = append(fails, fmt.Sprintf("frozen embedding entry %d moved by %g", k, v))
				break
			}
		}
	}
	return append(fails, trainParity(t, dev, cfg, c, p, rng)...)
}

// trainParity runs step.Train, the step with its inputs drawn on the device and Adam's clipping computed there,
// from p on dev and on train.CPU, and returns the failures: the sums off by more than 1e-5 relative, another
// number of rejected draws, the weights' change or a moment off by more than 1e-4 relative per tensor.
func trainParity(t *testing.T, dev step.Device, cfg model.Config, c parityCase, p *model.Params, rng *rand.Rand) (fails []string) {
	t.Helper()
	in := &step.Inputs{Tok: make([]int32, cfg.T*c.B), Lens: make([]int32, c.B), Real: max(1, c.B-1), Key: kernels.KeyOf(rng.Uint64())}
	for r := range in.Tok {
		in.Tok[r] = int32(rng.IntN(cfg.V))
	}
	for b := range in.Lens {
		in.Lens[b] = int32(cfg.T)
		if c.lens != nil {
			in.Lens[b] = int32(c.lens[b])
		}
	}
	coef := kernels.AdamCoeffs{Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3 / (1 - 0.9), BC2Sqrt: math.Sqrt(1 - 0.999), Eps: 1e-4}
	var res [2]step.Result
	var upd, ms [2][][]float32
	for i, d := range []step.Device{train.CPU{}, dev} {
		s, err := step.New(d, cfg, c.B, step.Options{FreezeEmbeddings: c.frozen})
		if err != nil {
			t.Fatal(err)
		}
		s.SetParams(p)
		if res[i], err = s.Train(in, coef, 0.5); err != nil {
			t.Fatal(err)
		}
		q := p.Clone()
		ms[i] = tensors(p)
		if err := errors.Join(s.ParamsTo(q), s.MomentsTo(ms[i], tensors(p))); err != nil {
			t.Fatal(err)
		}
		upd[i] = tensors(p)
		for j, ts := range q.Tensors() {
			for k, v := range ts.Data {
				upd[i][j][k] = v - p.Tensors()[j].Data[k]
			}
		}
		s.Close()
	}
	want, got := res[0], res[1]
	for _, v := range []struct {
		what      string
		got, want float64
	}{{"loss", got.Loss, want.Loss}, {"NLL", got.NLL, want.NLL}, {"similarity", got.Sim, want.Sim}, {"gradient norm", got.GradNorm, want.GradNorm}} {
		if e := relErr(v.got, v.want); !(e <= 1e-5) {
			fails = append(fails, fmt.Sprintf("Train: %s %.8g, CPU %.8g (rel %.2g)", v.what, v.got, v.want, e))
		}
	}
	if got.Rejected != want.Rejected {
		fails = append(fails, fmt.Sprintf("Train: %d rejected draws, CPU %d", got.Rejected, want.Rejected))
	}
	for _, x := range []struct {
		what      string
		got, want [][]float32
	}{{"Train's update", upd[1], upd[0]}, {"Train's first moment", ms[1], ms[0]}} {
		for i, ts := range p.Tensors() {
			if e := enginetest.RelNorm(x.got[i], x.want[i]); !(e <= 1e-4) {
				fails = append(fails, fmt.Sprintf("%s of %s: rel err %.3g", x.what, ts.Name, e))
			}
		}
	}
	return fails
}

// The Device on the emulator, whose kernels are float64 references, gives train.CPU's step: the loss, every
// gradient, the norm, Adam's update and moments, for both transforms, one and two LSTM layers, with and without
// dropout, padded lengths, frozen embeddings and one sequence. Every launch has been checked against the CUDA
// sources' signatures, its grid and its pointers' extents; every kernel the Device knows is launched, and
// closing the steps frees every buffer.
func TestEmulatedStepMatchesCPU(t *testing.T) {
	launched := map[string]int{}
	for _, c := range parityCases {
		t.Run(c.String(), func(t *testing.T) {
			cfg := modeltest.ParityConfig(c.tr)
			cfg.LSTMLayers = c.layers
			d, e := emulated(t)
			for _, f := range stepParity(t, d, cfg, c) {
				t.Error(f)
			}
			if own := d.ownBuffers(); len(d.live) != own || len(e.allocs) != own+1 {
				t.Errorf("after the steps' Close: %d live buffers, %d allocations (want the Device's own scratch only, %d buffers and the norm's)", len(d.live), len(e.allocs), own)
			}
			if err := d.Close(); err != nil || !e.closed || len(e.allocs) != 0 {
				t.Errorf("Close: %v, backend closed %v, %d allocations left", err, e.closed, len(e.allocs))
			}
			for k, n := range e.launches {
				launched[k] += n
			}
		})
	}
	for _, k := range kernelNames {
		if launched[k] == 0 {
			t.Errorf("kernel %s was never launched", k)
		}
	}
	t.Logf("launches: %v", launched)
}

// The parity check can fail: a kernel slightly wrong (the LSTM cell's gate gradients 0.1% off, the embedding
// scatter missing its first source row, one NLSq raw gradient perturbed) fails it, naming tensors.
func TestParityCatchesWrongKernel(t *testing.T) {
	for _, c := range []struct {
		kernel string
		skew   func(e *emu, a args)
	}{
		{"lstm_cell_bwd", func(e *emu, a args) {
			for i, v := range e.f32(a.p(0), 4*a.i(7)*a.i(8)) {
				e.f32(a.p(0), 4*a.i(7)*a.i(8))[i] = v * 1.001
			}
		}},
		{"scatter_add_rows", func(e *emu, a args) {
			if a.i(4) == 1 { // the embedding scatters: take the first row's contribution back out
				w, j := a.i(5), e.i32(a.p(2), 1)[0]
				dst, src := e.f32(a.p(0)+cuda.Ptr(4*int(j)*w), w), e.f32(a.p(1), w)
				for i := range dst {
					dst[i] -= src[i]
				}
			}
		}},
		{"nlsq_bwd", func(e *emu, a args) { e.f32(a.p(0), 3)[2] += 1e-2 }},
	} {
		t.Run(c.kernel, func(t *testing.T) {
			d, e := emulated(t)
			e.after = func(e *emu, k string, a args) {
				if k == c.kernel {
					c.skew(e, a)
				}
			}
			fails := stepParity(t, d, modeltest.ParityConfig(model.NLSq), parityCases[0])
			if len(fails) == 0 {
				t.Fatal("a wrong kernel passed the parity check")
			}
			t.Logf("%d failures, e.g. %s", len(fails), fails[0])
		})
	}
}

// Every kernel the Device launches is in the CUDA sources and has a reference; each reference is of a kernel the
// Device launches.
func TestKernelNames(t *testing.T) {
	sigs := kernelSignatures()
	if err := missingKernels(func(k string) bool { _, ok := sigs[k]; return ok }); err != nil {
		t.Error(err)
	}
	for _, k := range kernelNames {
		if refs[k] == nil {
			t.Errorf("no reference for %s", k)
		}
	}
	if len(refs) != len(kernelNames) {
		t.Errorf("%d references for %d kernels", len(refs), len(kernelNames))
	}
}

// A failed call sticks: the calls after it do nothing, and every Download and Norm returns it, wrapped once.
func TestDeviceErrorSticks(t *testing.T) {
	d, e := emulated(t)
	boom := errors.New("CUDA_ERROR_ILLEGAL_ADDRESS")
	e.fail = func(k string) error {
		if k == "mul_n" {
			return boom
		}
		return nil
	}
	x := d.Alloc(5)
	d.Upload(x, []float32{1, 2, 3, 4, 5})
	d.Add(x, x, x, 5)
	if got := make([]float32, 5); d.Download(got, x) != nil || got[4] != 10 {
		t.Fatalf("before the failure: %v", got)
	}
	d.Mul(x, x, x, 5)
	before := e.launches["add_n"]
	d.Add(x, x, x, 5)
	if e.launches["add_n"] != before {
		t.Error("a launch after the failure ran")
	}
	for i := range 2 {
		if err := d.Download(make([]float32, 1), x); !errors.Is(err, boom) || strings.Count(err.Error(), "gpustep:") != 1 {
			t.Errorf("Download %d: %v, want the failure", i, err)
		}
	}
	if _, err := d.Norm(x, 5); !errors.Is(err, boom) {
		t.Errorf("Norm: %v, want the failure", err)
	}
	if y := d.Alloc(3); y.Mem().(cuda.Ptr) != 0 {
		t.Error("an allocation after the failure reached the backend")
	}
}

// Wrong shapes and foreign buffers panic, as on the CPU, before anything reaches the GPU.
func TestDevicePanics(t *testing.T) {
	d, e := emulated(t)
	x, y := d.Alloc(4), d.Alloc(6)
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"short", "Device.Add: b has 4 elements, want at least 6", func() { d.Add(y, y, x, 6) }},
		{"foreign", "is not a GPU buffer", func() { d.Zero(train.CPU{}.Alloc(3)) }},
		{"gemm", "Device.Gemm: a 2×2 (transposed false) times b 3×2 (transposed false)", func() { d.Gemm(false, false, 1, x, 2, 2, y, 3, 2, 0, y) }},
		{"copy", "Device.Copy: 6 elements into 4", func() { d.Copy(x, y) }},
		{"cols", "Device.CopyCols: columns [1, 3) of 2", func() { d.CopyCols(y, 3, 0, x, 2, 1, 2, 2, false) }},
		{"bias rows", "2 bias rows for 3 sequences", func() { d.LSTMCellForward(y, y, 2, y, y, y, y, 3, 1) }},
		{"double free", "not a live allocation", func() { d.Free(x); d.Free(x) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("panic %v, want one containing %q", r, c.want)
				}
			}()
			c.f()
		})
	}
	if len(e.launches) != 0 {
		t.Errorf("launches %v after wrong calls only", e.launches)
	}
}

// The norm's grid depends on n only and covers it with at most normBlocks blocks; its partial sums add up to
// the norm for sizes around each boundary.
func TestNormGrid(t *testing.T) {
	d, _ := emulated(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 255, 256, 2047, 2048, 2049, 1 << 21, 1<<21 + 1, 5 << 20} {
		g := normGrid(n)
		if g < 1 || g > normBlocks || (n > 0 && g > (n+normThreads-1)/normThreads) {
			t.Errorf("n=%d: %d blocks", n, g)
		}
		if n > 1<<16 {
			continue
		}
		x := make([]float32, n)
		var want float64
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			want += float64(x[i]) * float64(x[i])
		}
		b := d.Alloc(n)
		d.Upload(b, x)
		got, err := d.Norm(b, n)
		if err != nil || relErr(got, math.Sqrt(want)) > 1e-12 && n > 0 {
			t.Errorf("n=%d: norm %v (%v), want %v", n, got, err, math.Sqrt(want))
		}
		d.Free(b)
	}
}

// Without a GPU, Open says which parts are missing, naming the driver library, quickly, and never panics.
func TestOpenWithoutGPU(t *testing.T) {
	if gpuEnabled() {
		t.Skip("NFBO_GPU=1: the GPU tests cover the device")
	}
	start := time.Now()
	d, err := Open(cuda.OSEnv(), 0)
	if err == nil {
		d.Close()
		t.Skip("a GPU is present; run with NFBO_GPU=1")
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("Open without a GPU: %v (%T), want an *UnavailableError", err, err)
	}
	msg := err.Error()
	if ue.GPU != nil && !strings.Contains(msg, "libcuda.so.1") {
		t.Errorf("the error does not name the driver library:\n%s", msg)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Open took %v to fail", el)
	}
	t.Log(msg)
}

// randomBatch is enginetest.RandomBatch as a step.Batch.
func randomBatch(cfg model.Config, B, real int, lens []int, drop bool, rng *rand.Rand) *step.Batch {
	r := enginetest.RandomBatch(cfg, B, real, lens, drop, rng)
	return &step.Batch{Tok: r.Tok, Neg: r.Neg, Eps: r.Eps, Wt: r.Wt, Lens: lens, InterMask: r.InterMask, CtxMask: r.CtxMask}
}
