package ort

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// Benchmark presets: the shipped small preset at a ZINC-like T = 70 with the
// ZINC vocabulary size, and the paper preset at T = 100 with the GuacaMol
// vocabulary size. Weights are the reference's random initialisation.
func benchPresets() []struct {
	name string
	cfg  model.Config
} {
	return []struct {
		name string
		cfg  model.Config
	}{{"small", model.Small(174, 70)}, {"paper", model.Paper(185, 100)}}
}

// full reports whether the slow cases (paper preset, B=1000) run:
// set NFBO_BENCH_FULL=1.
func full() bool { return os.Getenv("NFBO_BENCH_FULL") == "1" }

type codecs struct {
	name string
	c    model.LatentCodec
}

func benchCodecs(b *testing.B, f *model.Flow) []codecs {
	out := []codecs{{"go", model.NewGoLatentCodec(f, 0)}}
	r, err := NewRunner(f, Options{})
	if err == nil {
		b.Cleanup(func() { r.Close() })
		out = append(out, codecs{"ort", r})
	} else {
		b.Logf("ONNX Runtime benchmarks skipped: %v", err)
	}
	return out
}

func BenchmarkEncode(b *testing.B) { benchCodec(b, true) }

func BenchmarkDecode(b *testing.B) { benchCodec(b, false) }

func benchCodec(b *testing.B, encode bool) {
	ctx := context.Background()
	for _, p := range benchPresets() {
		// Setup lives inside each level's b.Run, so a -bench filter that
		// excludes a preset or batch size also skips its setup.
		b.Run(p.name, func(b *testing.B) {
			params, err := model.NewParams(p.cfg, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				b.Fatal(err)
			}
			f, err := model.NewFlow(params)
			if err != nil {
				b.Fatal(err)
			}
			cfg := f.Config()
			cs := benchCodecs(b, f)
			for _, B := range []int{1, 100, 1000} {
				b.Run(fmt.Sprintf("B=%d", B), func(b *testing.B) {
					if p.name == "paper" && B == 1000 && !full() {
						b.Skip("paper preset, B=1000: minutes per op; set NFBO_BENCH_FULL=1")
					}
					x := randomSequences(rand.New(rand.NewPCG(uint64(B), 3)), B, cfg.T, cfg.V)
					z := make([]float32, B*cfg.T*cfg.F)
					if !encode {
						// Decode latents of real sequences; the ORT codec
						// encodes them when present, being faster.
						if err := cs[len(cs)-1].c.EncodeTo(ctx, z, x); err != nil {
							b.Fatal(err)
						}
					}
					// The flow's matrix-product work per op, to read
					// GFLOP/s against kernels' BenchmarkSgemm peak. It is
					// model.Flow's count for both codecs: ONNX Runtime
					// multiplies a little more for the same result (a
					// one-hot step code in the encoder's LSTM input, one
					// more LSTM step per block in the decoder), which is
					// overhead, not work.
					flops := float64(B) * float64(cfg.FlowFLOPs())
					if !encode {
						flops += float64(B) * float64(cfg.DecodeSearchFLOPs())
					}
					for _, c := range cs {
						b.Run(c.name, func(b *testing.B) {
							b.ReportAllocs()
							got := make([]int, len(x))
							cpu := startCPU()
							b.ResetTimer()
							for range b.N {
								var err error
								if encode {
									err = c.c.EncodeTo(ctx, z, x)
								} else {
									err = c.c.DecodeTo(ctx, got, z)
								}
								if err != nil {
									b.Fatal(err)
								}
							}
							b.ReportMetric(float64(B*b.N)/b.Elapsed().Seconds(), "seq/s")
							b.ReportMetric(float64(B*b.N)/cpu.seconds(), "seq/cpu-s")
							b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				})
			}
		})
	}
}

// cpuClock measures the CPU time of the whole process (every goroutine and
// ONNX Runtime thread), a figure that other jobs on a shared machine disturb
// far less than wall time.
type cpuClock struct{ start float64 }

func startCPU() cpuClock { return cpuClock{processCPU()} }

func (c cpuClock) seconds() float64 { return processCPU() - c.start }

func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
