package train

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkLSTMLayer times one LSTM layer op's forward and backward passes
// alone (float32, B = 32, S = 99 steps: T = 100), at the small preset's
// first layer (In = F = 40, H = 256) and the paper preset's second
// (In = H = 500), reported as GFLOP/s of their matrix products (3 × the
// forward's 2·S·B·4H·(In + H)).
func BenchmarkLSTMLayer(b *testing.B) {
	const B, S = 32, 99
	for _, c := range []struct {
		name  string
		In, H int
	}{{"small", 40, 256}, {"paper", 500, 500}} {
		b.Run(fmt.Sprintf("%s/In=%d/H=%d", c.name, c.In, c.H), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			rnd := func(n int, scale float64) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * scale)
				}
				return x
			}
			H4 := 4 * c.H
			X, Wih, Whh := rnd(S*B*c.In, 1), rnd(c.In*H4, 0.05), rnd(c.H*H4, 0.05)
			bias, h0, c0 := rnd(H4, 0.1), rnd(B*c.H, 0.5), rnd(B*c.H, 0.5)
			dOut := rnd(S*B*c.H, 1)
			q := newLSTMSeq[float32]("bench", S, B, c.In, c.H, 1, 0)
			q.forward(X, Wih, Whh, bias, h0, c0)
			q.backward(X, Wih, Whh, c0, dOut)
			b.ResetTimer()
			for range b.N {
				q.forward(X, Wih, Whh, bias, h0, c0)
				q.backward(X, Wih, Whh, c0, dOut)
			}
			flops := 3 * 2 * float64(S*B*H4) * float64(c.In+c.H)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
