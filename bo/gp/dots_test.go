package gp

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// countRows draws r rows of d counts, about nnz of them nonzero a row, as Morgan and token counts are.
func countRows(rng *rand.Rand, r, d, nnz int) []float64 {
	x := make([]float64, r*d)
	for i := range r {
		for range nnz {
			x[i*d+rng.IntN(d)] += float64(1 + rng.IntN(3))
		}
	}
	return x
}

// dotsTo must write the dense product's values bit for bit: on count rows (its sparse path, on column views as
// pairs reads them, with alpha 1 and −2), and on rows it must leave to the dense product (fractions, dense rows,
// sums that could round).
func TestDotsToMatchesGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d, split = 700, 512
	a, b := countRows(rng, 150, d, 40), countRows(rng, 37, d, 40)
	dense := make([]float64, 150*37)
	for i := range dense {
		dense[i] = float64(rng.IntN(5))
	}
	frac := append([]float64(nil), b...)
	frac[3] = 0.5
	huge := append([]float64(nil), b...)
	huge[5] = 1 << 45
	cols := func(x []float64, r, off, w int) blas64.General {
		return blas64.General{Rows: r, Cols: w, Stride: d, Data: x[off : (r-1)*d+off+w]}
	}
	for _, tc := range []struct {
		name  string
		alpha float64
		a, b  blas64.General
	}{
		{"counts", 1, gen(a, 150, d), gen(b, 37, d)},
		{"counts, alpha −2", -2, gen(a, 150, d), gen(b, 37, d)},
		{"first columns", 1, cols(a, 150, 0, split), cols(b, 37, 0, split)},
		{"last columns, alpha −2", -2, cols(a, 150, split, d-split), cols(b, 37, split, d-split)},
		{"dense rows", 1, gen(dense, 150, 37), gen(dense[:37*37], 37, 37)},
		{"a fraction", 1, gen(a, 150, d), gen(frac, 37, d)},
		{"sums past 2^53", 1, gen(a, 150, d), gen(huge, 37, d)},
		{"one row", -2, gen(a, 1, d), gen(b, 1, d)},
	} {
		r, c := tc.a.Rows, tc.b.Rows
		want, got := make([]float64, r*c), make([]float64, r*c)
		blas64.Gemm(blas.NoTrans, blas.Trans, tc.alpha, tc.a, tc.b, 0, gen(want, r, c))
		dotsTo(got, tc.alpha, tc.a, sparseRows(tc.a), tc.b, sparseRows(tc.b))
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s: entry %d: dotsTo %v, Gemm %v", tc.name, i, got[i], want[i])
			}
		}
	}
}

// The sparse path must be the one count rows take, and not others: a test of the values alone would pass with
// every product dense.
func TestSparseRowsChoosesCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	if sparseRows(gen(countRows(rng, 20, 300, 30), 20, 300)) == nil {
		t.Error("count rows were not taken as sparse")
	}
	x := countRows(rng, 20, 300, 30)
	x[7] = 0.25
	if sparseRows(gen(x, 20, 300)) != nil {
		t.Error("a row with 0.25 was taken as sparse")
	}
	if sparseRows(gen(countRows(rng, 20, 300, 200), 20, 300)) != nil {
		t.Error("rows half nonzero were taken as sparse")
	}
}

// BenchmarkDots is the screened surrogate's cross products for one anchor's candidates: 1,000 training rows
// against 330 candidates, 2,048 Morgan count columns with about 45 nonzeros a row.
func BenchmarkDots(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, c, d = 1000, 330, 2048
	x, y := gen(countRows(rng, n, d, 45), n, d), gen(countRows(rng, c, d, 45), c, d)
	dst := make([]float64, n*c)
	b.Run("dense", func(b *testing.B) {
		for b.Loop() {
			blas64.Gemm(blas.NoTrans, blas.Trans, 1, x, y, 0, gen(dst, n, c))
		}
	})
	b.Run("dotsTo", func(b *testing.B) {
		sx := sparseRows(x) // the training rows' form is kept from the fit
		for b.Loop() {
			dotsTo(dst, 1, x, sx, y, sparseRows(y))
		}
	})
}
