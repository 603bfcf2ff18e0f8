package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/kernels"
)

// TestLSTMSeqFloat32MatchesFloat64 runs the LSTM layer op forward and
// backward in float32, whose recurrent products use the packed micro-kernel
// where it has assembly (kernels.PackedAccelerated), and in float64, whose
// products are the BLAS's, on the same inputs: every output and gradient
// must agree to float32 rounding. The batch gives each core 4-row blocks and
// a tail (B = 19 over any core count ≤ 4 has a part of at least 4 rows), H is
// off the 16-column panel grid, and both bias layouts and lead rows are run.
func TestLSTMSeqFloat32MatchesFloat64(t *testing.T) {
	t.Logf("packed micro-kernel in assembly: %v", kernels.PackedAccelerated())
	const S, B, In, H = 7, 19, 5, 21
	H4 := 4 * H
	rng := rand.New(rand.NewPCG(7, 9))
	rnd := func(n int, scale float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(float32(rng.NormFloat64() * scale))
		}
		return x
	}
	to32 := func(x []float64) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return y
	}
	for _, c := range []struct{ biasRows, lead int }{{1, 0}, {S * B, B}} {
		X, Wih, Whh := rnd(S*B*In, 1), rnd(In*H4, 0.4), rnd(H*H4, 0.3)
		bias, h0, c0 := rnd(c.biasRows*H4, 0.3), rnd(B*H, 0.5), rnd(B*H, 0.5)
		dOut := rnd((c.lead+S*B)*H, 1)

		q64 := newLSTMSeq[float64]("l64", S, B, In, H, c.biasRows, c.lead)
		q32 := newLSTMSeq[float32]("l32", S, B, In, H, c.biasRows, c.lead)
		out64 := q64.forward(X, Wih, Whh, bias, h0, c0)
		dX64 := q64.backward(X, Wih, Whh, c0, dOut)
		// Twice in float32: the second pass reuses the packed weights' storage.
		for range 2 {
			out32 := q32.forward(to32(X), to32(Wih), to32(Whh), to32(bias), to32(h0), to32(c0))
			dX32 := q32.backward(to32(X), to32(Wih), to32(Whh), to32(c0), to32(dOut))
			for _, r := range []struct {
				name string
				a    []float32
				b    []float64
			}{{"out", out32, out64}, {"dX", dX32, dX64}, {"dWih", q32.dWih, q64.dWih},
				{"dWhh", q32.dWhh, q64.dWhh}, {"dBias", q32.dBias, q64.dBias}, {"dh0", q32.dh0, q64.dh0},
				{"dc0", q32.dc0, q64.dc0}} {
				if len(r.a) != len(r.b) {
					t.Fatalf("biasRows=%d: %s: length %d, float64 %d", c.biasRows, r.name, len(r.a), len(r.b))
				}
				for i, v := range r.a {
					if d := math.Abs(float64(v) - r.b[i]); d > 2e-4*(1+math.Abs(r.b[i])) {
						t.Fatalf("biasRows=%d: %s[%d] = %v, float64 %v", c.biasRows, r.name, i, v, r.b[i])
					}
				}
			}
		}
	}
}
