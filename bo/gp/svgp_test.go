package gp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randData(rng *rand.Rand, n, d int) (x, y []float64) {
	x = make([]float64, n*d)
	y = make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range y {
		y[i] = math.Sin(x[i*d]) + 0.1*rng.NormFloat64()
	}
	return x, y
}

// perturb moves every parameter group off its initial value so that no gradient term vanishes by symmetry.
func perturb(s *SVGP, rng *rand.Rand) {
	t, l := s.Params(), s.Layout()
	for i := range s.m {
		t[l.M+i] = 0.5 * rng.NormFloat64()
		for k := 0; k <= i; k++ {
			t[l.R+i*s.m+k] = 0.2 * rng.NormFloat64()
		}
		t[l.R+i*s.m+i] = 0.5 + 0.5*rng.Float64()
	}
	t[l.Mu] = 0.3
	t[l.RawScale] = 0.2
	t[l.RawLen] = 0.4
	t[l.RawNoise] = -0.5
	for i := l.Z; i < l.Z+s.m*s.p; i++ {
		t[i] += 0.1 * rng.NormFloat64()
	}
	s.Changed()
}

func TestLossGradient(t *testing.T) {
	const (
		n, d, b = 9, 5, 6
		h       = 1e-6
		absTol  = 1e-7
		relTol  = 1e-5
	)
	for _, tc := range []struct {
		kl   KLScaling
		loss LossKind
	}{{KLBatch, LossPLL}, {KLData, LossPLL}, {KLBatch, LossELBO}} {
		t.Run(fmt.Sprintf("kl=%d/loss=%d", tc.kl, tc.loss), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			x, y := randData(rng, n, d)
			s := New(Config{Hidden: 4, MaxInducing: 5, KL: tc.kl, Loss: tc.loss}, d, x, n, rand.NewPCG(3, 4))
			perturb(s, rng)
			xb, yb := x[:b*d], y[:b]
			grad := make([]float64, len(s.Params()))
			if _, err := s.Loss(grad, xb, yb, n); err != nil {
				t.Fatal(err)
			}
			l := s.Layout()
			groups := []struct {
				name     string
				from, to int
			}{
				{"W1", l.W1, l.B1}, {"b1", l.B1, l.W2}, {"W2", l.W2, l.B2}, {"b2", l.B2, l.Z},
				{"Z", l.Z, l.M}, {"m", l.M, l.R}, {"R", l.R, l.Mu}, {"mu", l.Mu, l.RawScale},
				{"rawScale", l.RawScale, l.RawLen}, {"rawLen", l.RawLen, l.RawNoise}, {"rawNoise", l.RawNoise, l.Len},
			}
			th := s.Params()
			for _, g := range groups {
				var worst float64
				for i := g.from; i < g.to; i++ {
					orig := th[i]
					th[i] = orig + h
					s.Changed()
					fp, err := s.Loss(nil, xb, yb, n)
					if err != nil {
						t.Fatal(err)
					}
					th[i] = orig - h
					fm, _ := s.Loss(nil, xb, yb, n)
					th[i] = orig
					fd := (fp - fm) / (2 * h)
					if diff := math.Abs(fd - grad[i]); diff > absTol+relTol*math.Abs(fd) {
						t.Errorf("%s[%d]: analytic %.10g, finite difference %.10g", g.name, i-g.from, grad[i], fd)
					} else if diff > worst {
						worst = diff
					}
				}
				t.Logf("%-8s max |analytic − fd| = %.2e", g.name, worst)
			}
		})
	}
}

// TestDenseExactGP sets Z = φ(X) and the optimal q(v) of a Gaussian likelihood; the SVGP posterior must then
// equal the exact GP posterior on the features.
func TestDenseExactGP(t *testing.T) {
	const (
		n, d, c = 12, 4, 7
		tol     = 1e-8
	)
	rng := rand.New(rand.NewPCG(5, 6))
	x, y := randData(rng, n, d)
	s := New(Config{Hidden: 6, InducingJitter: 1e-13, PredictiveJitter: -1}, d, x, n, rand.NewPCG(7, 8))
	th, l := s.Params(), s.Layout()
	th[l.Mu] = 0.2
	th[l.RawLen] = 0.3
	s.Changed()
	mu, scale, ell, noise := s.Hyper()
	_ = scale
	_ = ell
	// L = chol(K(Z,Z) + εu I); posterior of v: S = (I + LᵀL/σ²)⁻¹, m = S·Lᵀ(y − μ)/σ².
	p, err := s.prepare()
	if err != nil {
		t.Fatal(err)
	}
	L := mat.NewTriDense(n, mat.Lower, append([]float64(nil), p.l...))
	prec := mat.NewSymDense(n, nil)
	prec.SymOuterK(1/noise, L.T())
	for i := range n {
		prec.SetSym(i, i, prec.At(i, i)+1)
	}
	var chol mat.Cholesky
	if !chol.Factorize(prec) {
		t.Fatal("precision not PD")
	}
	var sCov mat.SymDense
	if err := chol.InverseTo(&sCov); err != nil {
		t.Fatal(err)
	}
	var sChol mat.Cholesky
	if !sChol.Factorize(&sCov) {
		t.Fatal("S not PD")
	}
	var rl mat.TriDense
	sChol.LTo(&rl)
	res := mat.NewVecDense(n, nil)
	for i := range n {
		res.SetVec(i, (y[i]-mu)/noise)
	}
	var ltr, mv mat.VecDense
	ltr.MulVec(L.T(), res)
	mv.MulVec(&sCov, &ltr)
	for i := range n {
		th[l.M+i] = mv.AtVec(i)
		for k := range n {
			th[l.R+i*n+k] = rl.At(i, k)
		}
	}
	s.Changed()

	xt, _ := randData(rng, c, d)
	mean, vari := make([]float64, c), make([]float64, c)
	if err := s.Predict(mean, vari, xt, false); err != nil {
		t.Fatal(err)
	}
	cov, jm := make([]float64, c*c), make([]float64, c)
	if err := s.JointCovTo(context.Background(), cov, jm, xt, false); err != nil {
		t.Fatal(err)
	}

	// Exact GP on features: K = k(Φ,Φ), mean* = μ + K*ᵀ(K + σ²I)⁻¹(y − μ), cov* = K** − K*ᵀ(K + σ²I)⁻¹K*.
	phi := make([]float64, n*s.p)
	s.Features(phi, x)
	phit := make([]float64, c*s.p)
	s.Features(phit, xt)
	kern := func(a []float64, ra int, b []float64, rb int) *mat.Dense {
		k := make([]float64, ra*rb)
		rbfTo(k, a, ra, b, rb, s.p, scale, ell, make([]float64, ra), make([]float64, rb), false, make([]float64, rb*s.p))
		return mat.NewDense(ra, rb, k)
	}
	kxx := kern(phi, n, phi, n)
	for i := range n {
		kxx.Set(i, i, kxx.At(i, i)+noise)
	}
	kxs := kern(phi, n, phit, c)
	kss := kern(phit, c, phit, c)
	var sol mat.Dense
	if err := sol.Solve(kxx, kxs); err != nil {
		t.Fatal(err)
	}
	var wmean mat.VecDense
	yc := mat.NewVecDense(n, nil)
	for i := range n {
		yc.SetVec(i, y[i]-mu)
	}
	wmean.MulVec(sol.T(), yc)
	var q mat.Dense
	q.Mul(kxs.T(), &sol)
	for i := range c {
		wantM := mu + wmean.AtVec(i)
		if math.Abs(mean[i]-wantM) > tol || math.Abs(jm[i]-wantM) > tol {
			t.Errorf("mean[%d] = %.12g (joint %.12g), exact GP %.12g", i, mean[i], jm[i], wantM)
		}
		for k := range c {
			want := kss.At(i, k) - q.At(i, k)
			if math.Abs(cov[i*c+k]-want) > tol {
				t.Errorf("cov[%d,%d] = %.12g, exact GP %.12g", i, k, cov[i*c+k], want)
			}
		}
		if math.Abs(vari[i]-cov[i*c+i]) > tol {
			t.Errorf("var[%d] = %.12g, joint diagonal %.12g", i, vari[i], cov[i*c+i])
		}
	}
}

// TestSamplersMoments checks that the exact and the pathwise sampler both reproduce the analytic posterior mean
// and covariance (observation noise included). With K draws the Monte Carlo standard error of a covariance entry
// is about √((Σii·Σjj + Σij²)/K); the tolerance is 5 of those plus 1e-3 of the diagonal scale.
func TestSamplersMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("long sampler moment test")
	}
	const (
		n, d, c = 10, 3, 4
	)
	rng := rand.New(rand.NewPCG(9, 10))
	x, _ := randData(rng, n, d)
	s := New(Config{Hidden: 5, MaxInducing: 6}, d, x, n, rand.NewPCG(11, 12))
	perturb(s, rng)
	xt, _ := randData(rng, c, d)
	cov, mean := make([]float64, c*c), make([]float64, c)
	if err := s.JointCovTo(context.Background(), cov, mean, xt, true); err != nil {
		t.Fatal(err)
	}
	check := func(name string, draw func(dst []float64) error, calls, per int) {
		k := calls * per
		sum := make([]float64, c)
		sq := make([]float64, c*c)
		buf := make([]float64, per*c)
		for range calls {
			if err := draw(buf); err != nil {
				t.Fatal(err)
			}
			for r := range per {
				row := buf[r*c : (r+1)*c]
				for i := range c {
					sum[i] += row[i]
					for j := range c {
						sq[i*c+j] += (row[i] - mean[i]) * (row[j] - mean[j])
					}
				}
			}
		}
		for i := range c {
			se := math.Sqrt(cov[i*c+i] / float64(k))
			if got := sum[i] / float64(k); math.Abs(got-mean[i]) > 5*se {
				t.Errorf("%s: mean[%d] = %.5f, want %.5f ± %.5f", name, i, got, mean[i], 5*se)
			}
			for j := range c {
				se := math.Sqrt((cov[i*c+i]*cov[j*c+j] + cov[i*c+j]*cov[i*c+j]) / float64(k))
				if got := sq[i*c+j] / float64(k); math.Abs(got-cov[i*c+j]) > 5*se+1e-3*cov[i*c+i] {
					t.Errorf("%s: cov[%d,%d] = %.5f, want %.5f ± %.5f", name, i, j, got, cov[i*c+j], 5*se)
				}
			}
		}
	}
	r1 := rand.New(rand.NewPCG(13, 14))
	check("exact", func(dst []float64) error { return s.SampleExact(context.Background(), dst, xt, len(dst)/c, true, r1) }, 20, 10000)
	r2 := rand.New(rand.NewPCG(15, 16))
	check("pathwise", func(dst []float64) error {
		return s.SamplePathwise(context.Background(), dst, xt, len(dst)/c, 64, true, r2)
	}, 40000, 5)
}

func TestFitDecreasesLoss(t *testing.T) {
	const n, d = 200, 6
	rng := rand.New(rand.NewPCG(17, 18))
	x, y := randData(rng, n, d)
	s := New(Config{Hidden: 8, MaxInducing: 32}, d, x, n, rand.NewPCG(19, 20))
	before, err := s.Loss(nil, x, y, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fit(context.Background(), x, y, FitSettings{Epochs: 30, BatchSize: 32}, rng); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Loss(nil, x, y, n)
	if !(after < before-0.1) {
		t.Errorf("loss did not decrease by 0.1: before %.4f after %.4f", before, after)
	}
	// Checkpoint round trip gives the same predictions bit for bit.
	blob, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var s2 SVGP
	if err := s2.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	m1, v1, m2, v2 := make([]float64, 5), make([]float64, 5), make([]float64, 5), make([]float64, 5)
	if err := s.Predict(m1, v1, x[:5*d], true); err != nil {
		t.Fatal(err)
	}
	if err := s2.Predict(m2, v2, x[:5*d], true); err != nil {
		t.Fatal(err)
	}
	for i := range m1 {
		if m1[i] != m2[i] || v1[i] != v2[i] {
			t.Errorf("restored model predicts (%v, %v), original (%v, %v)", m2[i], v2[i], m1[i], v1[i])
		}
	}
}

func TestShapesPanicAndInputsUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	x, y := randData(rng, 6, 3)
	s := New(Config{Hidden: 4}, 3, x, 6, rand.NewPCG(1, 1))
	xc, yc := append([]float64(nil), x...), append([]float64(nil), y...)
	if _, err := s.Loss(make([]float64, len(s.Params())), x, y, 6); err != nil {
		t.Fatal(err)
	}
	m, v := make([]float64, 6), make([]float64, 6)
	if err := s.Predict(m, v, x, true); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if x[i] != xc[i] {
			t.Fatal("Loss or Predict modified x")
		}
	}
	for i := range y {
		if y[i] != yc[i] {
			t.Fatal("Loss modified y")
		}
	}
	for name, f := range map[string]func(){
		"Loss x":        func() { s.Loss(nil, x[:5], y, 6) },
		"Loss grad":     func() { s.Loss(make([]float64, 3), x, y, 6) },
		"Predict dst":   func() { s.Predict(m[:2], v, x, true) },
		"SampleExact":   func() { s.SampleExact(context.Background(), make([]float64, 5), x, 2, true, rng) },
		"Features dst":  func() { s.Features(make([]float64, 3), x) },
		"New bad shape": func() { New(Config{}, 3, x[:4], 2, rand.NewPCG(1, 1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on a wrong shape", name)
				}
			}()
			f()
		}()
	}
}

// TestLossGradientBlocked repeats the finite-difference check with M and B larger than the block size of the
// triangular kernels, on 25 random entries per parameter group.
func TestLossGradientBlocked(t *testing.T) {
	if testing.Short() {
		t.Skip("larger gradient check")
	}
	const (
		n, d, b = 2*nb + 9, 5, nb + 13
		h       = 1e-6
		absTol  = 1e-7
		relTol  = 1e-5
		per     = 25
	)
	rng := rand.New(rand.NewPCG(31, 32))
	x, y := randData(rng, n, d)
	s := New(Config{Hidden: 6}, d, x, n, rand.NewPCG(33, 34)) // M = n = 265
	perturb(s, rng)
	xb, yb := x[:b*d], y[:b]
	grad := make([]float64, len(s.Params()))
	if _, err := s.Loss(grad, xb, yb, n); err != nil {
		t.Fatal(err)
	}
	l, th := s.Layout(), s.Params()
	for _, g := range []struct {
		name     string
		from, to int
	}{
		{"W1", l.W1, l.B1}, {"b1", l.B1, l.W2}, {"W2", l.W2, l.B2}, {"b2", l.B2, l.Z}, {"Z", l.Z, l.M},
		{"m", l.M, l.R}, {"R", l.R, l.Mu}, {"rest", l.Mu, l.Len},
	} {
		for k := 0; k < per; k++ {
			i := g.from + rng.IntN(g.to-g.from)
			if g.name == "R" { // a lower-triangle entry
				r, c := (i-l.R)/s.m, (i-l.R)%s.m
				if c > r {
					r, c = c, r
				}
				i = l.R + r*s.m + c
			}
			orig := th[i]
			th[i] = orig + h
			fp, _ := s.Loss(nil, xb, yb, n)
			th[i] = orig - h
			fm, _ := s.Loss(nil, xb, yb, n)
			th[i] = orig
			fd := (fp - fm) / (2 * h)
			if math.Abs(fd-grad[i]) > absTol+relTol*math.Abs(fd) {
				t.Errorf("%s[%d]: analytic %.10g, finite difference %.10g", g.name, i-g.from, grad[i], fd)
			}
		}
	}
}
