package gp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time (all threads, OpenBLAS's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ms/op metric: on a shared machine CPU time is steadier than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

func benchModel(b *testing.B, d, m int) (*SVGP, *rand.Rand) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	x, _ := randData(rng, m, d)
	return New(Config{MaxInducing: m}, d, x, m, rand.NewPCG(2, 2)), rng
}

// BenchmarkStep is one training step: loss and gradient of a minibatch of B = 128, clipping and Adam.
func BenchmarkStep(b *testing.B) {
	for _, sz := range []struct{ d, m int }{{400, 256}, {400, 1024}, {4000, 1024}} {
		b.Run(fmt.Sprintf("D=%d/M=%d/B=128", sz.d, sz.m), func(b *testing.B) {
			s, rng := benchModel(b, sz.d, sz.m)
			x, y := randData(rng, 128, sz.d)
			grad := make([]float64, len(s.Params()))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				if _, err := s.Loss(grad, x, y, 128); err != nil {
					b.Fatal(err)
				}
				ClipNorm(grad, 1)
				s.Opt.Update(s.Params(), grad)
			}
			reportCPU(b, c0)
		})
	}
}

// BenchmarkSample draws S = 100 joint samples at C candidates (D = 400, M = 1024) with both samplers.
func BenchmarkSample(b *testing.B) {
	for _, c := range []int{1000, 5000} {
		for _, kind := range []string{"exact", "pathwise"} {
			b.Run(fmt.Sprintf("%s/C=%d/M=1024/S=100", kind, c), func(b *testing.B) {
				s, rng := benchModel(b, 400, 1024)
				x, _ := randData(rng, c, 400)
				dst := make([]float64, 100*c)
				if _, err := s.prepare(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				c0 := cpuTime()
				defer reportCPU(b, c0)
				for range b.N {
					var err error
					if kind == "exact" {
						err = s.SampleExact(context.Background(), dst, x, 100, true, rng)
					} else {
						err = s.SamplePathwise(context.Background(), dst, x, 100, 0, true, rng)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFeatureNet is the hand-written feature net alone: forward and backward for B = 128 (compare with
// gorgonia in BENCHMARKS.md).
func BenchmarkFeatureNet(b *testing.B) {
	for _, d := range []int{400, 4000} {
		b.Run(fmt.Sprintf("D=%d/B=128", d), func(b *testing.B) {
			s, rng := benchModel(b, d, 16)
			x, _ := randData(rng, 128, d)
			n := 128 * s.p
			phi, h1, a1, h2, phibar := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range phibar {
				phibar[i] = rng.NormFloat64()
			}
			g := make([]float64, len(s.Params()))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				s.forwardNet(phi, h1, a1, h2, x, 128)
				s.backwardNet(g, phibar, h1, a1, h2, x, 128)
			}
			reportCPU(b, c0)
		})
	}
}
