package gp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// countCtx is a context whose Err reports context.Canceled from its k-th call on (never when k is 0), and
// counts the calls, so that a test can cancel at each of a method's checks in turn, deterministically.
type countCtx struct {
	context.Context
	k, calls int
}

func (c *countCtx) Err() error {
	c.calls++
	if c.k > 0 && c.calls >= c.k {
		return context.Canceled
	}
	return nil
}

// TestSampleExactCancel cancels SampleExact and SamplePathwise at each of their ctx checks in turn, at
// C = 2·nb + 45 so that the blocked product and factorisation have several block rows. Every cancelled call
// must return an error that wraps context.Canceled, leave dst unchanged and (exact) draw nothing from rng; an
// uncancelled call afterwards must give bit for bit the samples of one made before, and the exact samples must
// match mean + L·E computed with gonum's unblocked Dpotrf from the same normal draws (1e-9, relative).
func TestSampleExactCancel(t *testing.T) {
	const (
		n, d, ns = 100, 5, 3
		c        = 2*nb + 45
	)
	rng := rand.New(rand.NewPCG(21, 22))
	x, _ := randData(rng, n, d)
	s := New(Config{Hidden: 8, MaxInducing: 64}, d, x, n, rand.NewPCG(23, 24))
	perturb(s, rng)
	xt, _ := randData(rng, c, d)
	seed := func() *rand.Rand { return rand.New(rand.NewPCG(25, 26)) }

	for _, kind := range []string{"exact", "pathwise"} {
		sample := func(ctx context.Context, dst []float64, r *rand.Rand) error {
			if kind == "exact" {
				return s.SampleExact(ctx, dst, xt, ns, true, r)
			}
			return s.SamplePathwise(ctx, dst, xt, ns, 32, true, r)
		}
		want := make([]float64, ns*c)
		all := &countCtx{Context: context.Background()}
		if err := sample(all, want, seed()); err != nil {
			t.Fatalf("%s: uncancelled: %v", kind, err)
		}
		checks := all.calls
		if minChecks := 2 * ((c + nb - 1) / nb); kind == "exact" && checks < minChecks {
			t.Errorf("exact: %d ctx checks at C = %d, want at least %d (one per block row of the product and of the factorisation)", checks, c, minChecks)
		}
		got := make([]float64, ns*c)
		for k := 1; k <= checks; k++ {
			for i := range got {
				got[i] = math.NaN()
			}
			r := seed()
			err := sample(&countCtx{Context: context.Background(), k: k}, got, r)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: cancelled at check %d of %d: err = %v, want one wrapping context.Canceled", kind, k, checks, err)
			}
			for i, v := range got {
				if !math.IsNaN(v) {
					t.Fatalf("%s: cancelled at check %d: dst[%d] = %v was written", kind, k, i, v)
				}
			}
			if kind == "exact" && r.Uint64() != seed().Uint64() {
				t.Errorf("exact: cancelled at check %d: rng was drawn from", k)
			}
		}
		if err := sample(context.Background(), got, seed()); err != nil {
			t.Fatalf("%s: after cancellations: %v", kind, err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: after cancellations sample[%d] = %v, before %v", kind, i, got[i], want[i])
			}
		}
	}

	// Reference for the exact sampler: f = mean + L·E, E (C×S) drawn in the sampler's order.
	cov, mean := make([]float64, c*c), make([]float64, c)
	if err := s.JointCovTo(context.Background(), cov, mean, xt, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: c, Stride: c, Data: cov}); !ok {
		t.Fatal("joint covariance is not positive definite")
	}
	r := seed()
	e := make([]float64, c*ns)
	for i := range e {
		e[i] = r.NormFloat64()
	}
	blas64.Trmm(blas.Left, blas.NoTrans, 1, lower(cov, c), gen(e, c, ns))
	got := make([]float64, ns*c)
	if err := s.SampleExact(context.Background(), got, xt, ns, true, seed()); err != nil {
		t.Fatal(err)
	}
	for k := range ns {
		for i := range c {
			want := mean[i] + e[i*ns+k]
			if math.Abs(got[k*c+i]-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("exact: sample[%d][%d] = %.15g, mean + L·E = %.15g", k, i, got[k*c+i], want)
			}
		}
	}
}

// An already-cancelled context stops SampleExact before any O(C²) work; that cancellation mid-run is seen within
// a block of rows is TestBlockedCancel's and TestSampleExactCancel's (counted checks, not timings).
func TestSampleExactCancelled(t *testing.T) {
	const n, d, m, c, ns = 300, 5, 256, 2000, 4
	rng := rand.New(rand.NewPCG(27, 28))
	x, _ := randData(rng, n, d)
	s := New(Config{Hidden: 8, MaxInducing: m}, d, x, n, rand.NewPCG(29, 30))
	perturb(s, rng)
	xt, _ := randData(rng, c, d)
	dst := make([]float64, ns*c)
	tc := &countCtx{Context: context.Background(), k: 1}
	if err := s.SampleExact(tc, dst, xt, ns, true, rng); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if tc.calls != 1 {
		t.Errorf("%d ctx checks before returning, want 1", tc.calls)
	}
}
