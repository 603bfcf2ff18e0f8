package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// TestMulPackedTo checks MulPackedTo against the product computed from its
// definition in float64, for shapes on and off the 4×16 block grid, both
// layouts of B, with and without accumulation, and row strides wider than
// the rows; entries of dst outside the product must be left alone.
func TestMulPackedTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p Packed // reused across cases, as callers reuse it
	for _, m := range []int{1, 3, 4, 5, 8, 16, 19} {
		for _, k := range []int{0, 1, 2, 3, 8, 37, 256} {
			for _, n := range []int{1, 15, 16, 17, 40, 64} {
				for _, trans := range []bool{false, true} {
					for _, add := range []bool{false, true} {
						for _, transA := range []bool{false, true} {
							name := fmt.Sprintf("m=%d/k=%d/n=%d/trans=%v/add=%v/transA=%v", m, k, n, trans, add, transA)
							lda, ldc := k+3, n+5
							ldb := n + 2
							if trans {
								ldb = k + 1
							}
							var a []float32
							var aAt func(i, kk int) float32
							if transA {
								lda = m + 3 // a is k×m
								a = randSlice(rng, max(k, 1)*lda)
								aAt = func(i, kk int) float32 { return a[kk*lda+i] }
							} else {
								a = randSlice(rng, m*lda)
								aAt = func(i, kk int) float32 { return a[i*lda+kk] }
							}
							b := randSlice(rng, max(k, n)*ldb)
							dst := randSlice(rng, m*ldc)
							orig := append([]float32(nil), dst...)
							p.Pack(b, ldb, k, n, trans)
							if transA {
								MulPackedTransTo(dst, ldc, a, lda, m, &p, add)
							} else {
								MulPackedTo(dst, ldc, a, lda, m, &p, add)
							}
							for i := range m {
								for j := range ldc {
									got := dst[i*ldc+j]
									if j >= n {
										if got != orig[i*ldc+j] {
											t.Fatalf("%s: dst[%d][%d] outside the product changed", name, i, j)
										}
										continue
									}
									var want, scale float64
									if add {
										want = float64(orig[i*ldc+j])
										scale = math.Abs(want)
									}
									for kk := range k {
										bv := b[kk*ldb+j]
										if trans {
											bv = b[j*ldb+kk]
										}
										pr := float64(aAt(i, kk)) * float64(bv)
										want += pr
										scale += math.Abs(pr)
									}
									if d := math.Abs(float64(got) - want); d > 1e-6*scale+1e-7 {
										t.Fatalf("%s: dst[%d][%d] = %v, want %v (scale %v)", name, i, j, got, want, scale)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestKernel4x16MatchesGo checks the micro-kernel this build runs (assembly
// where PackedAccelerated) against the Go one: they differ only by FMA's
// single rounding of each multiply-add.
func TestKernel4x16MatchesGo(t *testing.T) {
	t.Logf("PackedAccelerated: %v", PackedAccelerated())
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 2, 5, 64, 1000} {
		for _, add := range []int{0, 1} {
			const lda, ldc = 1003, 21
			a, b := randSlice(rng, 4*lda), randSlice(rng, k*PanelCols)
			c := randSlice(rng, 4*ldc)
			want := append([]float32(nil), c...)
			kernel4x16(k, a, lda, b, c, ldc, add)
			kernel4x16Go(k, a, lda, b, want, ldc, add)
			for i, v := range c {
				if d := math.Abs(float64(v - want[i])); d > 2e-5*math.Sqrt(float64(k)) {
					t.Fatalf("k=%d add=%d: c[%d] = %v, Go kernel %v", k, add, i, v, want[i])
				}
			}
			// The transposed form: a as k rows of at least 4 (row stride 7).
			const ldt = 7
			at := randSlice(rng, k*ldt)
			c = randSlice(rng, 4*ldc)
			want = append(want[:0], c...)
			kernel4x16T(k, at, ldt, b, c, ldc, add)
			kernel4x16TGo(k, at, ldt, b, want, ldc, add)
			for i, v := range c {
				if d := math.Abs(float64(v - want[i])); d > 2e-5*math.Sqrt(float64(k)) {
					t.Fatalf("transposed, k=%d add=%d: c[%d] = %v, Go kernel %v", k, add, i, v, want[i])
				}
			}
		}
	}
}

// TestMulPackedRowIndependent: a row of the product is the same, bit for bit, whatever the number of rows
// multiplied with it, so a decoder that drops finished sequences from its batch gets each one's values as if it
// ran alone. (The last 1-3 rows of a call once took a scalar path that rounds differently from the
// micro-kernel's fused multiply-adds.) A stored-transposed a of fewer than 4 rows keeps the scalar path.
func TestMulPackedRowIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, n, rows = 37, 40, 19
	for _, transA := range []bool{false, true} {
		var p Packed
		p.Pack(randSlice(rng, k*n), n, k, n, false)
		first := 1
		if transA {
			first = kernelRows
		}
		a := randSlice(rng, rows*k) // rows×k, or k×rows with transA
		want := make([]float32, rows*n)
		mul := func(dst []float32, m int) {
			if transA {
				MulPackedTransTo(dst, n, a, rows, m, &p, false)
			} else {
				MulPackedTo(dst, n, a, k, m, &p, false)
			}
		}
		mul(want, rows)
		for m := first; m < rows; m++ {
			got := make([]float32, m*n)
			mul(got, m)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("transA=%v: row %d of %d rows: column %d = %v, %v in a call of %d rows", transA, i/n, m, i%n, got[i], want[i], rows)
				}
			}
		}
	}
}

// BenchmarkMulPacked times MulPackedTo on the recurrent products of an LSTM
// step, h [m, H] · Whh [H, 4H] and backwards dG [m, 4H] · Whhᵀ, at the rows
// one core owns in a training step (B = 32 over 2 cores, and B = 128), beside
// the BLAS on the same product (sgemmImpl: gonum, or OpenBLAS under the
// openblas tag, which packs its operands on every call). Run with
// OPENBLAS_NUM_THREADS=1 for the one-core rates the training engine uses.
//
//	go test -run '^$' -bench MulPacked ./kernels/
func BenchmarkMulPacked(b *testing.B) {
	impl, name := sgemmImpl()
	for _, s := range []struct {
		preset string
		H      int
	}{{"small", 256}, {"paper", 500}} {
		for _, m := range []int{16, 64} {
			for _, bwd := range []bool{false, true} {
				k, n := s.H, 4*s.H
				dir := "fwd"
				if bwd {
					k, n, dir = 4*s.H, s.H, "bwd"
				}
				rng := rand.New(rand.NewPCG(uint64(m), uint64(k)))
				a, w := randSlice(rng, m*k), randSlice(rng, s.H*4*s.H)
				dst := make([]float32, m*n)
				flops := 2 * float64(m) * float64(k) * float64(n)
				tB, ldb := blas.NoTrans, n
				if bwd {
					tB, ldb = blas.Trans, k
				}
				b.Run(fmt.Sprintf("%s/%s/m=%d/packed", s.preset, dir, m), func(b *testing.B) {
					var p Packed
					p.Pack(w, ldb, k, n, bwd)
					MulPackedTo(dst, n, a, k, m, &p, false)
					b.ResetTimer()
					for range b.N {
						MulPackedTo(dst, n, a, k, m, &p, false)
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
				b.Run(fmt.Sprintf("%s/%s/m=%d/blas=%s", s.preset, dir, m, name), func(b *testing.B) {
					impl.Sgemm(blas.NoTrans, tB, m, n, k, 1, a, k, w, ldb, 0, dst, n)
					b.ResetTimer()
					for range b.N {
						impl.Sgemm(blas.NoTrans, tB, m, n, k, 1, a, k, w, ldb, 0, dst, n)
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
