package train

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/model"
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
// backward, Adam) at batch 32 for the small and paper presets (V = 185, the
// GuacaMol vocabulary), through the Trainer (engine=step: engine/step on the
// CPU Device, whose weights and moments stay on the device between steps)
// and through the fused gorgonia graph that was the CPU trainer before it
// (engine=graph: graphTrainer, now the tests' oracle), the two interleaved
// in one run. Graph compilation or step allocation happens before the timer
// (prepare-s); live-MiB is the heap after a forced GC with the trainer
// alive; cpu-ms/op is the process's CPU time per step (robust to a loaded
// machine, unlike ns/op); sync-ms (engine=step) is what reading the weights and moments back
// and uploading them again once costs (a validation's or checkpoint's). The
// paper preset runs only with NFBO_BENCH_PAPER=1.
func BenchmarkTrainStep(b *testing.B) {
	T := benchT()
	for _, preset := range []string{"small", "paper"} {
		for _, engine := range []string{"graph", "step"} {
			b.Run(fmt.Sprintf("preset=%s/engine=%s/B=32/T=%d", preset, engine, T), func(b *testing.B) {
				if preset == "paper" && os.Getenv("NFBO_BENCH_PAPER") == "" {
					b.Skip("set NFBO_BENCH_PAPER=1")
				}
				benchTrainStep(b, preset, engine, T)
			})
		}
	}
}

// benchTrainStep is one of BenchmarkTrainStep's runs.
func benchTrainStep(b *testing.B, preset, engine string, T int) {
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
	ctx := context.Background()
	var stepFn func() error
	var tr *Trainer
	start := time.Now()
	if engine == "graph" {
		gt := newGraphTrainer(p, rand.NewPCG(3, 3), fusedOpts, false)
		if _, err := gt.graph(B, kindTrain); err != nil {
			b.Fatal(err)
		}
		stepFn = func() error { _, err := gt.step(seqs, nil, B); return err }
	} else {
		if tr, err = NewTrainer(p, rand.NewPCG(3, 3), Options{Batch: B}); err != nil {
			b.Fatal(err)
		}
		if err := tr.Prepare(ctx, B); err != nil {
			b.Fatal(err)
		}
		stepFn = func() error { _, err := tr.Step(ctx, seqs); return err }
	}
	prepare := time.Since(start)
	if err := stepFn(); err != nil { // warm-up
		b.Fatal(err)
	}
	var ms runtime.MemStats
	var peakHeap uint64
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := stepFn(); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		peakHeap = max(peakHeap, ms.HeapInuse)
	}
	b.StopTimer()
	// The process's CPU time per step, all cores: on a loaded machine the
	// wall time measures the load too.
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(prepare.Seconds(), "prepare-s")
	b.ReportMetric(float64(B)*float64(b.N)/b.Elapsed().Seconds(), "seq/s")
	// GFLOP/s with the usual estimate of a training step's matrix-product
	// work: the forward pass (model's FlowFLOPs per sequence) plus a
	// backward pass of twice that. Products around the flow (embedding
	// lookups, the initial-state MLP and positional gates) and Adam are not
	// counted.
	flops := 3 * float64(B) * float64(cfg.FlowFLOPs())
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if tr != nil {
		st, start := tr.res.state, time.Now()
		st.SetParams(tr.p)
		st.SetMoments(tr.adam.m, tr.adam.v)
		if err := errors.Join(st.ParamsTo(tr.p), st.MomentsTo(tr.adam.m, tr.adam.v)); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, "sync-ms")
	}
}

// cpuTime returns the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
