package gpustep

import (
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// What a training step asks of the host, counted where the Device calls the GPU (a dry emulator: every launch
// checked against its kernel's signature and every copy against its allocation, no arithmetic), for the small
// preset at B = 128, T = 109 and the paper preset at B = 128, T = 100, after the first step (which allocates the
// dropout masks): the upload is the token ids and lengths (int32) alone, the download the step's sums (at most
// 64 bytes), one wait, no allocation. It prints one line per preset (go test -v) for BENCHMARKS.md.
func TestStepCounts(t *testing.T) {
	const V = 185
	for _, c := range []struct {
		preset string
		T      int
	}{{"small", 109}, {"paper", 100}} {
		t.Run(c.preset, func(t *testing.T) {
			cfg, err := model.Preset(c.preset, V, c.T)
			if err != nil {
				t.Fatal(err)
			}
			const B = 128
			e := newEmu()
			e.dry = true
			d, err := newDevice(e, cuda.DeviceInfo{Name: "dry emulator"})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			s, err := step.New(d, cfg, B, step.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.SetParams(model.ZeroParams(cfg))
			rng := rand.New(rand.NewPCG(1, 2))
			in := &step.Inputs{Tok: make([]int32, cfg.T*B), Lens: make([]int32, B), Real: B - 3}
			for r := range in.Tok {
				in.Tok[r] = int32(rng.IntN(V))
			}
			for b := range in.Lens {
				in.Lens[b] = int32(2 + rng.IntN(cfg.T-1))
			}
			coef := kernels.AdamCoeffs{Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3, BC2Sqrt: 1, Eps: 1e-8}
			var per Counts
			for k := range 3 {
				in.Key = kernels.KeyOf(rng.Uint64())
				before := d.Counts()
				if _, err := s.Train(in, coef, 1); err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					continue
				}
				got := d.Counts().Sub(before)
				if k > 1 && got != per {
					t.Errorf("step %d counts %v, step 2's %v", k+1, got, per)
				}
				per = got
			}
			t.Logf("step counts: preset=%s %v", c.preset, per)
			if max := 4 * int64(len(in.Tok)+len(in.Lens)); per.H2D > max {
				t.Errorf("host→device %d bytes a step, want at most the tokens and lengths' %d", per.H2D, max)
			}
			if per.D2H > 64 || per.Syncs > 1 || per.Allocs != 0 {
				t.Errorf("a step: %d bytes device→host, %d waits, %d allocations; want ≤ 64, ≤ 1, 0", per.D2H, per.Syncs, per.Allocs)
			}
			if per.Launches == 0 {
				t.Error("no launch counted")
			}
		})
	}
}
