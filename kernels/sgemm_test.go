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
