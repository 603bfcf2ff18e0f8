//go:build cgo

package ort

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nfbo/nfbo/engine/onnx"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
	ortgo "github.com/yalue/onnxruntime_go"
)

// The decoder can run its T sequential positions four ways: step graphs
// driven from Go position by position, each sequence stopping at its <stop>
// (stepDecoder, the Runner's tokens), one ONNX Loop per block (the exported
// decoder, the Runner's vectors), the same step graphs driven block by block
// over every position, and the blocks unrolled over T. These helpers build
// the last two and the Loop on its own so that tests check them and
// benchmarks compare all four.

// blockStepDecoder drives one onnx.StepModel session per block from Go, block
// by block over all T positions, K·T session runs per batch.
type blockStepDecoder struct {
	f     *model.Flow
	cfg   model.Config
	steps []*ortgo.DynamicAdvancedSession
}

func newBlockStepDecoder(t testing.TB, f *model.Flow) *blockStepDecoder {
	t.Helper()
	d := &blockStepDecoder{f: f, cfg: f.Config()}
	in, out := stepNames(d.cfg.LSTMLayers)
	for k := 0; k < d.cfg.Blocks; k++ {
		m, err := onnx.StepModel(f, k)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSession(m, in, out, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Destroy() })
		d.steps = append(d.steps, s)
	}
	return d
}

// decode decodes n sequences: blocks in reverse order, each driven
// position by position through its step session, then the cosine-nearest
// tokens and <stop> forcing in Go (kernels.NearestCosineTo, as model.Flow).
func (r *blockStepDecoder) decode(ctx context.Context, x []int, v, z []float32, n int) error {
	cfg := r.cfg
	T, F, H, L, V := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.V
	y := make([]float32, T*n*F) // time-major: each step reads n contiguous rows
	for b := 0; b < n; b++ {
		for t := 0; t < T; t++ {
			copy(y[(t*n+b)*F:(t*n+b+1)*F], z[(b*T+t)*F:(b*T+t+1)*F])
		}
	}
	destroy := func(vals []ortgo.Value) {
		for _, val := range vals {
			if val != nil {
				val.Destroy()
			}
		}
	}
	for k := cfg.Blocks - 1; k >= 0; k-- {
		cst := r.f.Constants(k)
		states := make([]ortgo.Value, 2*L)
		for l := 0; l < L; l++ {
			h, c := make([]float32, n*H), make([]float32, n*H)
			for b := 0; b < n; b++ {
				copy(h[b*H:(b+1)*H], cst.H0[l])
				copy(c[b*H:(b+1)*H], cst.C0[l])
			}
			var err error
			if states[2*l], err = ortgo.NewTensor(ortgo.NewShape(int64(n), int64(H)), h); err == nil {
				states[2*l+1], err = ortgo.NewTensor(ortgo.NewShape(int64(n), int64(H)), c)
			}
			if err != nil {
				destroy(states)
				return fmt.Errorf("ort: decode state: %w", err)
			}
		}
		for t := 0; t < T; t++ {
			if err := ctx.Err(); err != nil {
				destroy(states)
				return err
			}
			yt := y[t*n*F : (t+1)*n*F]
			// The input tensor borrows y's memory; the output is copied back into it.
			zt, err := ortgo.NewTensor(ortgo.NewShape(int64(n), int64(F)), yt)
			if err != nil {
				destroy(states)
				return fmt.Errorf("ort: decode input: %w", err)
			}
			ti, err := ortgo.NewScalar(int64(t))
			if err != nil {
				zt.Destroy()
				destroy(states)
				return fmt.Errorf("ort: decode input: %w", err)
			}
			outs := make([]ortgo.Value, 1+2*L)
			err = r.steps[k].Run(append([]ortgo.Value{zt, ti}, states...), outs)
			zt.Destroy()
			ti.Destroy()
			destroy(states)
			if err != nil {
				destroy(outs)
				return fmt.Errorf("ort: decode block %d position %d: %w", k, t, err)
			}
			copy(yt, outs[0].(*ortgo.Tensor[float32]).GetData())
			outs[0].Destroy()
			states = outs[1:]
		}
		destroy(states)
	}
	ids := make([]int, n)
	scores := make([]float32, n*V)
	unit := r.f.UnitEmbedding()
	for t := 0; t < T; t++ {
		kernels.NearestCosineTo(ids, y[t*n*F:(t+1)*n*F], unit, scores, n, F, V)
		for b, id := range ids {
			x[b*T+t] = id
		}
	}
	model.ForceStop(x, T)
	if v != nil {
		for b := 0; b < n; b++ {
			for t := 0; t < T; t++ {
				copy(v[(b*T+t)*F:(b*T+t+1)*F], y[(t*n+b)*F:(t*n+b+1)*F])
			}
		}
	}
	return nil
}

// decoderSession opens the exported decoder in the given mode.
func decoderSession(t testing.TB, f *model.Flow, mode onnx.DecodeMode) *ortgo.DynamicAdvancedSession {
	t.Helper()
	m, err := onnx.DecoderMode(f, mode)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSession(m, []string{onnx.DecoderInput}, []string{onnx.DecoderOutput, onnx.DecoderVectors}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Destroy() })
	return s
}

// runDecoder writes the ids of z (B×T×F) to x (B×T) with a whole-graph decoder.
func runDecoder(s *ortgo.DynamicAdvancedSession, x []int, z []float32, T, F int) error {
	B := len(z) / (T * F)
	in, err := ortgo.NewTensor(ortgo.NewShape(int64(B), int64(T), int64(F)), z)
	if err != nil {
		return err
	}
	defer in.Destroy()
	outs := []ortgo.Value{nil, nil}
	if err := s.Run([]ortgo.Value{in}, outs); err != nil {
		return err
	}
	for i, id := range outs[0].(*ortgo.Tensor[int64]).GetData() {
		x[i] = int(id)
	}
	outs[0].Destroy()
	outs[1].Destroy()
	return nil
}

// The Runner's stopping decoder, the unrolled one and the block-by-block
// step graphs must give the Loop decoder's tokens (TestParity ties the
// Runner's to pure Go).
func TestDecoderVariants(t *testing.T) {
	for i, c := range parityCases()[:3] {
		t.Run(c.name, func(t *testing.T) {
			f := modeltest.Flow(t, c.cfg, uint64(30+i), c.w)
			r := needORT(t, f)
			cfg := f.Config()
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			x := randomSequences(rng, 20, cfg.T, cfg.V)
			z := make([]float32, len(x)*cfg.F)
			if err := f.EncodeTo(context.Background(), z, x, nil); err != nil {
				t.Fatal(err)
			}
			want := make([]int, len(x))
			if err := runDecoder(decoderSession(t, f, onnx.DecodeLoop), want, z, cfg.T, cfg.F); err != nil {
				t.Fatal(err)
			}
			got := make([]int, len(x))
			if err := r.DecodeTo(context.Background(), got, z); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] || want[i] != x[i] {
					t.Fatalf("stopping: position %d: %d, loop %d, input %d", i, got[i], want[i], x[i])
				}
			}
			if err := runDecoder(decoderSession(t, f, onnx.DecodeUnrolled), got, z, cfg.T, cfg.F); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("unrolled: position %d: %d, loop %d", i, got[i], want[i])
				}
			}
			if err := newBlockStepDecoder(t, f).decode(context.Background(), got, nil, z, len(x)/cfg.T); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("step-driven: position %d: %d, loop %d", i, got[i], want[i])
				}
			}
		})
	}
}

// BenchmarkDecodeVariants compares the four ways of running the decoder's
// sequential positions on ONNX Runtime (small preset): step graphs position
// by position stopping at <stop> (the Runner's DecodeTo), one ONNX Loop per
// block, step graphs block by block, and the blocks unrolled over T. It logs
// the session-creation times too.
func BenchmarkDecodeVariants(b *testing.B) {
	ctx := context.Background()
	p := benchPresets()[0]
	params, err := model.NewParams(p.cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	f, err := model.NewFlow(params)
	if err != nil {
		b.Fatal(err)
	}
	cfg := f.Config()
	start := time.Now()
	r := needORT(b, f)
	r.minDecode = 0 // measure ONNX Runtime at every batch size
	runnerSetup := time.Since(start)
	start = time.Now()
	loop := decoderSession(b, f, onnx.DecodeLoop)
	loopSetup := time.Since(start)
	start = time.Now()
	step := newBlockStepDecoder(b, f)
	stepSetup := time.Since(start)
	start = time.Now()
	unrolled := decoderSession(b, f, onnx.DecodeUnrolled)
	unrolledSetup := time.Since(start)
	b.Logf("session setup: runner (encoder, Loop decoder, step graphs) %v, Loop decoder %v, %d step graphs %v, unrolled decoder %v",
		runnerSetup, loopSetup, cfg.Blocks, stepSetup, unrolledSetup)
	for _, B := range []int{1, 100, 1000} {
		x := randomSequences(rand.New(rand.NewPCG(uint64(B), 3)), B, cfg.T, cfg.V)
		z := make([]float32, B*cfg.T*cfg.F)
		if err := r.EncodeTo(ctx, z, x); err != nil {
			b.Fatal(err)
		}
		got := make([]int, len(x))
		for _, v := range []struct {
			name string
			run  func() error
		}{
			{"stopping", func() error { return r.DecodeTo(ctx, got, z) }},
			{"loop", func() error { return runDecoder(loop, got, z, cfg.T, cfg.F) }},
			{"block-step", func() error { return step.decode(ctx, got, nil, z, B) }},
			{"unrolled", func() error { return runDecoder(unrolled, got, z, cfg.T, cfg.F) }},
		} {
			b.Run(fmt.Sprintf("%s/%s/B=%d", p.name, v.name, B), func(b *testing.B) {
				cpu := startCPU()
				for range b.N {
					if err := v.run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(B*b.N)/b.Elapsed().Seconds(), "seq/s")
				b.ReportMetric(float64(B*b.N)/cpu.seconds(), "seq/cpu-s")
			})
		}
	}
}
