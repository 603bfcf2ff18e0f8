package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkRecurrenceSplit times the forward recurrence's products of the
// small preset's LSTM (B = 32, H = 256, T = 70) on two cores, split two
// ways: by sequence (each core 16 rows times the whole packed Whh, 1 MB,
// no synchronisation: the training engine's split) and by unit (each core
// all 32 rows times its half of Whh's gate columns, 0.5 MB, which stays in
// its L2, with a barrier between steps because each step reads the whole
// h of the last). A stand-in for the cell (one multiply a unit) keeps the
// steps dependent. It measures whether the by-unit split would pay.
func BenchmarkRecurrenceSplit(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two cores")
	}
	const B, H, T = 32, 256, 70
	rng := rand.New(rand.NewPCG(1, 2))
	flops := 2.0 * B * H * 4 * H * (T - 1)
	b.Run("by=sequence", func(b *testing.B) {
		var p Packed
		p.Pack(randSlice(rng, H*4*H), 4*H, H, 4*H, false)
		h := [2][]float32{randSlice(rng, B*H), make([]float32, B*H)}
		g := make([]float32, B*4*H)
		part := func(r0, r1 int) {
			for s := 1; s < T; s++ {
				in, out := h[(s-1)%2], h[s%2]
				MulPackedTo(g[r0*4*H:r1*4*H], 4*H, in[r0*H:r1*H], H, r1-r0, &p, false)
				for r := r0; r < r1; r++ {
					for u := range H {
						out[r*H+u] = g[r*4*H+u] * 1e-3
					}
				}
			}
		}
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); part(B/2, B) }()
			part(0, B/2)
			wg.Wait()
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("by=unit", func(b *testing.B) {
		var p [2]Packed
		for q := range p {
			p[q].Pack(randSlice(rng, H*2*H), 2*H, H, 2*H, false)
		}
		h := [2][]float32{randSlice(rng, B*H), make([]float32, B*H)}
		g := [2][]float32{make([]float32, B*2*H), make([]float32, B*2*H)}
		var arrived, gen atomic.Int32
		barrier := func() {
			g0 := gen.Load()
			if arrived.Add(1) == 2 {
				arrived.Store(0)
				gen.Add(1)
				return
			}
			for i := 0; gen.Load() == g0; i++ {
				if i%1024 == 1023 {
					runtime.Gosched()
				}
			}
		}
		part := func(q int) {
			u0 := q * H / 2
			for s := 1; s < T; s++ {
				in, out := h[(s-1)%2], h[s%2]
				MulPackedTo(g[q], 2*H, in, H, B, &p[q], false)
				for r := range B {
					for u := range H / 2 {
						out[r*H+u0+u] = g[q][r*2*H+u] * 1e-3
					}
				}
				barrier()
			}
		}
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); part(1) }()
			part(0)
			wg.Wait()
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
