package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The assembly of AdamUpdate and LSTMCellGrad32 does the Go loops'
// operations in their order without fused multiply-adds, so the two must
// agree bit for bit (on amd64 with GOAMD64=v1, the default, the compiler
// fuses nothing either).

func TestAdamUpdateMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := &AdamCoeffs{Scale: 0.37, Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3 / (1 - math.Pow(0.9, 3)), BC2Sqrt: math.Sqrt(1 - math.Pow(0.999, 3)), Eps: 1e-8}
	for _, n := range []int{0, 1, 3, 4, 7, 8, 37, 1000} {
		p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range n {
			p[i] = float32(rng.NormFloat64())
			g[i] = float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*8-6))
			m[i] = float32(rng.NormFloat64() * 1e-3)
			v[i] = float32(rng.Float64() * 1e-5)
		}
		if n > 2 {
			g[1], v[1] = 0, 0 // a zero gradient on a zero moment: the Eps path
		}
		p2, m2, v2 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
		AdamUpdate(p, g, m, v, c)
		adamGo(p2, g, m2, v2, c)
		for i := range n {
			if math.Float32bits(p[i]) != math.Float32bits(p2[i]) || m[i] != m2[i] || v[i] != v2[i] {
				t.Fatalf("n = %d, [%d]: p m v = %v %v %v, the Go loop %v %v %v", n, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
			}
		}
	}
}

func TestLSTMCellGrad32MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, H := range []int{1, 7, 8, 20, 256, 500} {
		vec := func(n int, f func() float64) []float32 {
			s := make([]float32, n)
			for i := range s {
				s[i] = float32(f())
			}
			return s
		}
		unit := func() float64 { return rng.Float64() }
		sym := func() float64 { return 2*rng.Float64() - 1 }
		act := vec(4*H, unit)
		for u := 2 * H; u < 3*H; u++ { // the candidate is a tanh
			act[u] = 2*act[u] - 1
		}
		tc, cp, dout, dh, dc := vec(H, sym), vec(H, rng.NormFloat64), vec(H, rng.NormFloat64), vec(H, rng.NormFloat64), vec(H, rng.NormFloat64)
		dg, dg2 := make([]float32, 4*H), make([]float32, 4*H)
		dc2 := append([]float32(nil), dc...)
		LSTMCellGrad32(dg, dc, act, tc, cp, dout, dh)
		lstmGradGo(dg2, dc2, act, tc, cp, dout, dh, H, 0)
		for i := range dg {
			if dg[i] != dg2[i] {
				t.Fatalf("H = %d: dg[%d] = %v, the Go loop %v", H, i, dg[i], dg2[i])
			}
		}
		for i := range dc {
			if dc[i] != dc2[i] {
				t.Fatalf("H = %d: dc[%d] = %v, the Go loop %v", H, i, dc[i], dc2[i])
			}
		}
	}
}

// BenchmarkAdamUpdate times one update of the small preset's 2.6M
// parameters on one core.
func BenchmarkAdamUpdate(b *testing.B) {
	const n = 2_600_000
	p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = float32(i%1000) * 1e-3
	}
	c := &AdamCoeffs{Scale: 1, Beta1: 0.9, Beta2: 0.999, StepSize: 1e-3, BC2Sqrt: 0.5, Eps: 1e-8}
	b.Run("asm", func(b *testing.B) {
		b.SetBytes(28 * n)
		for range b.N {
			AdamUpdate(p, g, m, v, c)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(28 * n)
		for range b.N {
			adamGo(p, g, m, v, c)
		}
	})
}
