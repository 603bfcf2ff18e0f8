package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGradNormMatchesSum holds GradNorm to the plain float64 sum of squares
// and checks that its bits do not depend on the number of cores.
func TestGradNormMatchesSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var grads [][]float32
	for _, n := range []int{0, 1, 3, 7, normBlock - 1, normBlock, 3*normBlock + 5, 100_003} {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()))
		}
		grads = append(grads, g)
	}
	var s float64
	for _, g := range grads {
		for _, x := range g {
			s += float64(x) * float64(x)
		}
	}
	want := math.Sqrt(s)
	got := GradNorm(grads)
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("GradNorm = %.17g, want %.17g", got, want)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if one := GradNorm(grads); one != got {
		t.Errorf("GradNorm on one core = %.17g, on %d = %.17g", one, runtime.NumCPU(), got)
	}
}
