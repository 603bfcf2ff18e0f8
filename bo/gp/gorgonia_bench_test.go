//go:build gorgonia

package gp

// The measurement behind writing the feature net by hand: the same D → 64 → 64 Swish MLP as a gorgonia v0.9.18
// float32 graph, trained through the bridge cost Sum(Φ ⊙ G) with gorgonia's Adam and clipping. Run with
//
//	go test -tags gorgonia ./bo/gp -run XXX -bench Gorgonia -benchtime 20x
//
// and compare with BenchmarkFeatureNet (which has no optimiser step; Adam over the 0.26 M weights adds ~1 ms).

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func BenchmarkGorgoniaFeatureNet(b *testing.B) {
	swish := func(x *G.Node) *G.Node { return G.Must(G.HadamardProd(x, G.Must(G.Sigmoid(x)))) }
	for _, d := range []int{400, 4000} {
		b.Run(fmt.Sprintf("D=%d/B=128", d), func(b *testing.B) {
			const bs, p = 128, 64
			g := G.NewGraph()
			rng := rand.New(rand.NewPCG(1, 1))
			rnd := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.05)
				}
				return v
			}
			param := func(r, c int, name string) *G.Node {
				return G.NewMatrix(g, tensor.Float32, G.WithShape(r, c), G.WithName(name),
					G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(rnd(r*c)))))
			}
			x := G.NewMatrix(g, tensor.Float32, G.WithShape(bs, d), G.WithName("x"))
			gIn := G.NewMatrix(g, tensor.Float32, G.WithShape(bs, p), G.WithName("g"))
			w1, b1, w2, b2 := param(d, p, "w1"), param(1, p, "b1"), param(p, p, "w2"), param(1, p, "b2")
			h1 := swish(G.Must(G.BroadcastAdd(G.Must(G.Mul(x, w1)), b1, nil, []byte{0})))
			phi := swish(G.Must(G.BroadcastAdd(G.Must(G.Mul(h1, w2)), b2, nil, []byte{0})))
			cost := G.Must(G.Sum(G.Must(G.HadamardProd(phi, gIn))))
			params := G.Nodes{w1, b1, w2, b2}
			if _, err := G.Grad(cost, params...); err != nil {
				b.Fatal(err)
			}
			vm := G.NewTapeMachine(g, G.BindDualValues(params...))
			defer vm.Close()
			solver := G.NewAdamSolver(G.WithLearnRate(1e-3), G.WithClip(1.0))
			xv := tensor.New(tensor.WithShape(bs, d), tensor.WithBacking(rnd(bs*d)))
			gv := tensor.New(tensor.WithShape(bs, p), tensor.WithBacking(rnd(bs*p)))
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				G.Let(x, xv)
				G.Let(gIn, gv)
				if err := vm.RunAll(); err != nil {
					b.Fatal(err)
				}
				if err := solver.Step(G.NodesToValueGrads(params)); err != nil {
					b.Fatal(err)
				}
				vm.Reset()
			}
			reportCPU(b, c0)
		})
	}
}
