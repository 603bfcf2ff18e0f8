package step

import (
	"fmt"
	"github.com/nfbo/nfbo/engine/enginetest"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// tinyConfig has two blocks (both coupling orders), two LSTM layers (an
// inter-layer mask), three couplings and deep coupling nets, small enough
// for central differences over every tensor.
func tinyConfig(tr model.Transform) model.Config {
	return model.Config{V: 7, F: 4, T: 4, MaxT: 5, Blocks: 2, LSTMLayers: 2, H: 3,
		Couplings: 3, U: 5, CouplingDepth: 2, Transform: tr,
		Dropout: 0.3, Noise: 0.1, SimCoef: 0.7}
}

// refLoss returns the loss of the step's last forward pass on the float64
// reference device, Σ Wt·(nll + λ·sim), without rounding it to float32.
func refLoss(s *Step, b *Batch) float64 {
	nll, sim := mem(s.nll), mem(s.sim)
	var l float64
	for r, w := range b.Wt {
		l += float64(w) * (nll[r] + s.cfg.SimCoef*sim[r])
	}
	return l
}

// The step's gradients are those of its loss: on the float64 reference
// device, central differences of the loss at 6 entries of every tensor (and
// every entry of layer 0's positional rows and of the embeddings) agree
// with the backward pass to 1e-6 relative, for both transforms, with
// padding, dropout, random padded lengths and frozen embeddings (whose
// gradient is then zero and which Apply leaves alone).
func TestStepGradientCheck(t *testing.T) {
	for _, c := range []struct {
		tr     model.Transform
		drop   bool
		lens   []int
		frozen bool
	}{{model.NLSq, false, nil, false}, {model.Affine, false, nil, false}, {model.NLSq, true, nil, false},
		{model.Affine, true, []int{4, 2, 3}, false}, {model.NLSq, true, []int{3, 4, 2}, true}} {
		name := fmt.Sprintf("%v/dropout=%v/lens%v/frozen=%v", c.tr, c.drop, c.lens, c.frozen)
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(c.tr)
			p := modeltest.FarParams(t, cfg, 5)
			rng := rand.New(rand.NewPCG(6, 7))
			const B = 3
			b := randomBatch(cfg, B, 2, c.lens, c.drop, rng)
			s, err := New(ref{}, cfg, B, Options{FreezeEmbeddings: c.frozen})
			if err != nil {
				t.Fatal(err)
			}
			s.SetParams(p)
			res, err := s.Run(b)
			if err != nil {
				t.Fatal(err)
			}
			if l := refLoss(s, b); math.Abs(res.Loss-l) > 1e-5*math.Abs(l) {
				t.Errorf("Run's loss %.10g, the device's %.10g", res.Loss, l)
			}
			grads := append([]float64(nil), mem(s.grads)...)
			params := mem(s.params)
			const h = 1e-6 // small enough not to cross a ReLU kink: the difference quotient is then good to ~1e-9
			var maxErr float64
			var worst string
			for i, tensor := range p.Tensors() {
				idx := rng.Perm(tensor.Len())
				if len(idx) > 6 && !strings.HasSuffix(tensor.Name, "lstm0.wih") && tensor != p.Embed {
					idx = idx[:6]
				}
				for _, j := range idx {
					k := s.offs[i] + j
					orig := params[k]
					params[k] = orig + h
					s.forward()
					up := refLoss(s, b)
					params[k] = orig - h
					s.forward()
					down := refLoss(s, b)
					params[k] = orig
					num := (up - down) / (2 * h)
					if c.frozen && tensor == p.Embed {
						num = 0
					}
					e := math.Abs(grads[k] - num)
					if e/max(math.Abs(num), 1e-3) > maxErr {
						maxErr, worst = e/max(math.Abs(num), 1e-3), fmt.Sprintf("%s[%d]: analytic %.9g, numeric %.9g", tensor.Name, j, grads[k], num)
					}
					if e > 1e-7+1e-6*math.Abs(num) {
						t.Errorf("%s[%d]: analytic %.10g, numeric %.10g", tensor.Name, j, grads[k], num)
					}
				}
			}
			t.Logf("loss %.6g, max rel err %.2e (%s)", res.Loss, maxErr, worst)

			before := slices.Clone(params)
			s.Apply(kernels.AdamCoeffs{Scale: 1, Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3, BC2Sqrt: 1, Eps: 1e-8})
			ne := s.sizes[0]
			if moved := !slices.Equal(params[:ne], before[:ne]); moved == c.frozen {
				t.Errorf("frozen=%v: Apply moved the embeddings: %v", c.frozen, moved)
			}
			if slices.Equal(params[ne:], before[ne:]) {
				t.Error("Apply left the other parameters as they were")
			}
		})
	}
}

// PosRows and PosCode0 on a worked case: the codes of positions 1..S and 0
// of two sequences padded to 4 and 2 of T = 4 (MaxT 5), as the float64
// reference writes a code (ones at t and MaxT + T_b − 1 − t, the distance
// clamped at 0 past the end).
func TestPosRows(t *testing.T) {
	const S, maxT = 3, 5
	lens := []int{4, 2}
	got := make([]int32, 2*S*len(lens))
	PosRows(got, lens, S, maxT)
	want := []int32{1, 7, 1, 5, 2, 6, 2, 5, 3, 5, 3, 5}
	if !slices.Equal(got, want) {
		t.Errorf("PosRows = %v, want %v", got, want)
	}
	c0 := make([]float64, 2*2*maxT)
	for i := range c0 {
		c0[i] = 9 // zeroed first
	}
	PosCode0(c0, lens, maxT)
	wantC0 := make([]float64, len(c0))
	wantC0[0], wantC0[maxT+3], wantC0[10], wantC0[10+maxT+1] = 1, 1, 1, 1
	if !slices.Equal(c0, wantC0) {
		t.Errorf("PosCode0 = %v, want %v", c0, wantC0)
	}
}

// A batch of the wrong shape is an error naming what is wrong, and Run
// touches nothing.
func TestBatchCheck(t *testing.T) {
	cfg := tinyConfig(model.NLSq)
	const B = 2
	s, err := New(ref{}, cfg, B, Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := func() *Batch { return randomBatch(cfg, B, B, nil, true, rand.New(rand.NewPCG(1, 1))) }
	for _, c := range []struct {
		want string
		edit func(*Batch)
	}{
		{"Eps", func(b *Batch) { b.Eps = b.Eps[1:] }},
		{"Tok", func(b *Batch) { b.Tok = append(b.Tok, 0) }},
		{"outside vocabulary", func(b *Batch) { b.Tok[3] = int32(cfg.V) }},
		{"outside vocabulary", func(b *Batch) { b.Neg[0] = -2 }},
		{"padded length", func(b *Batch) { b.Lens = []int{1, 4} }},
		{"lengths", func(b *Batch) { b.Lens = []int{4} }},
		{"no context masks", func(b *Batch) { b.CtxMask = nil }},
		{"context masks", func(b *Batch) { b.CtxMask = b.CtxMask[:1] }},
		{"inter-layer mask 1", func(b *Batch) { b.InterMask[1] = b.InterMask[1][1:] }},
	} {
		b := good()
		c.edit(b)
		if _, err := s.Run(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v", c.want, err)
		}
	}
	if _, err := s.Run(good()); err != nil {
		t.Errorf("a good batch: %v", err)
	}
	if _, err := New(ref{}, cfg, 0, Options{}); err == nil {
		t.Error("batch size 0 accepted")
	}
}

// Slices of a buffer are views: offsets add up, and a slice outside the
// buffer panics.
func TestBufSlice(t *testing.T) {
	b := NewBuf("mem", 12)
	v := b.Slice(2, 10).Rows(1, 2, 3) // elements 5..7 of the allocation
	if v.Mem() != "mem" || v.Off() != 5 || v.Len() != 3 {
		t.Errorf("view at %d of %d elements", v.Off(), v.Len())
	}
	for _, f := range []func(){func() { b.Slice(3, 13) }, func() { b.Slice(-1, 2) }, func() { b.Slice(5, 4) },
		func() { NewIntBuf(nil, 4).Slice(2, 5) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a slice outside the buffer did not panic")
				}
			}()
			f()
		}()
	}
}

// randomBatch is enginetest.RandomBatch as a Batch.
func randomBatch(cfg model.Config, B, real int, lens []int, drop bool, rng *rand.Rand) *Batch {
	r := enginetest.RandomBatch(cfg, B, real, lens, drop, rng)
	return &Batch{Tok: r.Tok, Neg: r.Neg, Eps: r.Eps, Wt: r.Wt, Lens: lens, InterMask: r.InterMask, CtxMask: r.CtxMask}
}
