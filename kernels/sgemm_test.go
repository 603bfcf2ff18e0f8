package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// BenchmarkSgemm measures the machine's float32 matrix-product rate, the
// peak against which the flow's GFLOP/s (engine/ort BenchmarkEncode and
// BenchmarkDecode, engine/train BenchmarkTrainStep) are read: C = A·B for
// square n×n matrices, 2n³ FLOPs per op, reported as GFLOP/s. The BLAS is
// gonum's pure Go by default and OpenBLAS with the openblas build tag (see
// sgemmImpl), called directly rather than through blas32's process-wide
// setting or MulAddTo's serial panels, so that it runs on every core:
// gonum splits large products over GOMAXPROCS goroutines (-cpu 1 gives the
// one-core rate) and OpenBLAS over its own threads (OPENBLAS_NUM_THREADS=1
// gives the one-core rate).
//
//	go test -run '^$' -bench Sgemm ./kernels/
//	CGO_LDFLAGS=-lopenblas go test -tags openblas -run '^$' -bench Sgemm ./kernels/
func BenchmarkSgemm(b *testing.B) {
	impl, name := sgemmImpl()
	for _, n := range []int{256, 1024, 2048} {
		b.Run(fmt.Sprintf("blas=%s/n=%d", name, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			x, w := randSlice(rng, n*n), randSlice(rng, n*n)
			dst := make([]float32, n*n)
			// One untimed product first: OpenBLAS starts its threads on the
			// first call, and dst's pages fault in on the first write.
			impl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, w, n, 0, dst, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				impl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, w, n, 0, dst, n)
			}
			flops := 2 * float64(n) * float64(n) * float64(n)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmShapes times the products a SeqFlow training step is made of, at their own shapes (batch
// B = 32, T = 109), against which BenchmarkSgemm's square peak is read: how much of the peak the BLAS itself
// reaches on the model's work, before any cost around it. Shapes are M×K·K×N, op(A)·op(B) with the
// transposes lstmop.go and couplingop.go use:
//   - lstm-step: one recurrent step, h [B, H] · Whh [H, 4H], taken T−1 times in sequence per block and layer
//     (and again, transposed, in the backward pass: dG [B, 4H] · Whhᵀ);
//   - lstm-in: every step's input at once, [S·B, In] · Wih [In, 4H];
//   - lstm-wgrad: a weight gradient over all steps, Xᵀ [In, S·B] · dG [S·B, 4H];
//   - coupling-in: a coupling net's hidden layer from the LSTM state, [T·B, H] · [H, U].
func BenchmarkSgemmShapes(b *testing.B) {
	impl, name := sgemmImpl()
	const B, T = 32, 109
	S := T - 1
	type shape struct {
		name    string
		tA, tB  bool
		m, k, n int
	}
	var shapes []shape
	for _, p := range []struct {
		preset  string
		F, H, U int
	}{{"small", 40, 256, 64}, {"paper", 40, 500, 100}} {
		shapes = append(shapes,
			shape{p.preset + "/lstm-step", false, false, B, p.H, 4 * p.H},
			shape{p.preset + "/lstm-step-bwd", false, true, B, 4 * p.H, p.H},
			shape{p.preset + "/lstm-in", false, false, S * B, p.F, 4 * p.H},
			shape{p.preset + "/lstm-wgrad", true, false, p.H, S * B, 4 * p.H},
			shape{p.preset + "/coupling-in", false, false, T * B, p.H, p.U},
		)
	}
	shapes = append(shapes, shape{"paper/lstm2-in", false, false, S * B, 500, 2000})
	for _, s := range shapes {
		b.Run(fmt.Sprintf("blas=%s/%s/%dx%dx%d", name, s.name, s.m, s.k, s.n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(s.m*s.k), uint64(s.n)))
			x, w := randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n)
			dst := make([]float32, s.m*s.n)
			tA, lda := blas.NoTrans, s.k
			if s.tA {
				tA, lda = blas.Trans, s.m
			}
			tB, ldb := blas.NoTrans, s.n
			if s.tB {
				tB, ldb = blas.Trans, s.k
			}
			impl.Sgemm(tA, tB, s.m, s.n, s.k, 1, x, lda, w, ldb, 0, dst, s.n)
			b.ResetTimer()
			for range b.N {
				impl.Sgemm(tA, tB, s.m, s.n, s.k, 1, x, lda, w, ldb, 0, dst, s.n)
			}
			flops := 2 * float64(s.m) * float64(s.k) * float64(s.n)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
