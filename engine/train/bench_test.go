package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/model"
	"gorgonia.org/tensor"
)

// benchT returns the sequence length for a preset's benchmark: 70 (a
// ZINC250k-like T) unless NFBO_BENCH_T overrides it.
func benchT() int {
	if s := os.Getenv("NFBO_BENCH_T"); s != "" {
		if t, err := strconv.Atoi(s); err == nil {
			return t
		}
	}
	return 70
}

// BenchmarkTrainStep times one training step (noise sampling, forward,
// backward, Adam) at batch 32 for the small and paper presets (V = 185,
// the GuacaMol vocabulary), with each LSTM layer as one op (lstm=op, the
// default) or unrolled per step (lstm=unrolled). Graph compilation happens
// before the timer and is reported as compile-s; live-MiB is the heap after
// a forced GC with the trainer alive. The paper preset runs only
// with NFBO_BENCH_PAPER=1 (lstm=op) or NFBO_BENCH_PAPER=all (both; the
// unrolled form needs ~12 GiB and 1.5 minutes of compilation).
func BenchmarkTrainStep(b *testing.B) {
	T := benchT()
	for _, c := range []struct {
		preset        string
		unrolled      bool
		couplingNodes bool
	}{{"small", false, false}, {"small", false, true}, {"small", true, true},
		{"paper", false, false}, {"paper", false, true}, {"paper", true, true}} {
		preset := c.preset
		form := "op"
		if c.unrolled {
			form = "unrolled"
		}
		coupling := "op"
		if c.couplingNodes {
			coupling = "nodes"
		}
		b.Run(fmt.Sprintf("preset=%s/lstm=%s/coupling=%s/B=32/T=%d", preset, form, coupling, T), func(b *testing.B) {
			env := os.Getenv("NFBO_BENCH_PAPER")
			if preset == "paper" && (env == "" || c.unrolled && env != "all") {
				b.Skip("set NFBO_BENCH_PAPER=1 (lstm=op) or all")
			}
			cfg, err := model.Preset(preset, 185, T)
			if err != nil {
				b.Fatal(err)
			}
			p, err := model.NewParams(cfg, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				b.Fatal(err)
			}
			const B = 32
			seqs := randomSeqs(cfg, B, rand.New(rand.NewPCG(2, 2)))
			tr, err := NewTrainer(p, rand.NewPCG(3, 3), Options{Batch: B, UnrolledLSTM: c.unrolled, CouplingNodes: c.couplingNodes})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			g, err := tr.graph(B, kindTrain)
			if err != nil {
				b.Fatal(err)
			}
			compile := time.Since(start)
			ctx := context.Background()
			if _, err := tr.Step(ctx, seqs); err != nil { // warm-up
				b.Fatal(err)
			}
			var ms runtime.MemStats
			var peakHeap uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := tr.Step(ctx, seqs); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapInuse)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
				b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
			}
			b.ReportMetric(float64(peakHeap)/(1<<20), "heap-inuse-MiB")
			b.ReportMetric(compile.Seconds(), "compile-s")
			b.ReportMetric(float64(g.nodes), "nodes")
			b.ReportMetric(float64(B)*float64(b.N)/b.Elapsed().Seconds(), "seq/s")
			// GFLOP/s against kernels' BenchmarkSgemm peak, with the usual
			// estimate of a training step's matrix-product work: the
			// forward pass (model's FlowFLOPs per sequence) plus a backward
			// pass of twice that (one product for the input gradient, one
			// for the weight gradient, per forward product). Products the
			// graph adds around the flow (one-hot embedding lookups, the
			// per-batch initial-state MLP and positional gates) and Adam
			// are not counted.
			flops := 3 * float64(B) * float64(cfg.FlowFLOPs())
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGraphVariant compares one forward+backward run of the small
// preset's training graph (B = 32, no Adam) built three ways: LSTM unrolled
// per step with the positional code gathered as rows of c·Wih[F:]
// ("unrolled"), the same with PyTorch's dense [B, F+P] input per step
// ("dense-pos"), and each LSTM layer as one op over all steps ("lstmop").
func BenchmarkGraphVariant(b *testing.B) {
	T := benchT()
	preset := os.Getenv("NFBO_BENCH_PRESET")
	if preset == "" {
		preset = "small"
	}
	cfg, err := model.Preset(preset, 185, T)
	if err != nil {
		b.Fatal(err)
	}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	const B = 32
	rng := rand.New(rand.NewPCG(2, 2))
	in := prepareBatch(p, randomSeqs(cfg, B, rng), nil, B, cfg.Noise, rng)
	for _, v := range []struct {
		name string
		opts graphOpts
	}{{"unrolled", graphOpts{}}, {"dense-pos", graphOpts{posDense: true}}, {"lstmop", graphOpts{lstmOp: true}}} {
		b.Run(fmt.Sprintf("%s/preset=%s/B=32/T=%d", v.name, preset, T), func(b *testing.B) {
			if v.opts.posDense && preset == "paper" {
				b.Skip("dense positional input at paper size is not worth the memory")
			}
			runtime.GC()
			start := time.Now()
			g, err := buildGraphOpts(p, B, tensor.Float32, kindTrain, v.opts)
			if err != nil {
				b.Fatal(err)
			}
			compile := time.Since(start)
			if err := g.run(in, cfg.Dropout, rng); err != nil {
				b.Fatal(err)
			}
			var ms runtime.MemStats
			var peakHeap uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := g.run(in, cfg.Dropout, rng); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapInuse)
			}
			b.StopTimer()
			b.ReportMetric(compile.Seconds(), "compile-s")
			b.ReportMetric(float64(peakHeap)/(1<<20), "heap-inuse-MiB")
			b.ReportMetric(float64(g.nodes), "nodes")
			runtime.KeepAlive(g)
		})
	}
}
