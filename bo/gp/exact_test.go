package gp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// synth returns n points of [−1, 1]^d and a smooth function of them with a little noise.
func synth(rng *rand.Rand, n, d int, noise float64) (x, y []float64) {
	x = make([]float64, n*d)
	y = make([]float64, n)
	for i := range n {
		row := x[i*d : (i+1)*d]
		for j := range row {
			row[j] = 2*rng.Float64() - 1
		}
		y[i] = math.Sin(3*row[0]) + row[1]*row[1] - 0.5*row[2] + noise*rng.NormFloat64()
	}
	return x, y
}

// synthCounts returns n sparse count vectors of d entries (as fingerprints are) and their similarity to a target
// vector drawn from the PCG(1, 1) stream, with a little noise: an objective of the kind the Tanimoto kernel is for.
func synthCounts(rng *rand.Rand, n, d int, noise float64) (x, y []float64) {
	x = make([]float64, n*d)
	y = make([]float64, n)
	target := make([]float64, d)
	trng := rand.New(rand.NewPCG(1, 1))
	for j := range target {
		if trng.Float64() < 0.3 {
			target[j] = float64(1 + trng.IntN(3))
		}
	}
	for i := range n {
		row := x[i*d : (i+1)*d]
		for j := range row {
			if rng.Float64() < 0.3 {
				row[j] = float64(1 + rng.IntN(3))
			}
		}
		y[i] = tanimoto(row, target) + noise*rng.NormFloat64()
	}
	return x, y
}

// tanimoto is the kernel's definition, for the tests.
func tanimoto(a, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	if aa+bb-ab <= 0 {
		return 1
	}
	return ab / (aa + bb - ab)
}

// inputs returns kernel k's kind of synthetic data: for TanimotoMatern, count vectors of split(k, d) entries then
// d − split continuous ones (d ≥ 4), scored by the sum of the two objectives.
func inputs(k Kernel, rng *rand.Rand, n, d int, noise float64) (x, y []float64) {
	switch k {
	case Tanimoto:
		return synthCounts(rng, n, d, noise)
	case TanimotoMatern:
		d1 := split(k, d)
		x1, y1 := synthCounts(rng, n, d1, noise)
		x2, y2 := synth(rng, n, d-d1, 0)
		x, y = make([]float64, 0, n*d), make([]float64, n)
		for i := range n {
			x = append(append(x, x1[i*d1:(i+1)*d1]...), x2[i*(d-d1):(i+1)*(d-d1)]...)
			y[i] = y1[i] + 0.3*y2[i]
		}
		return x, y
	}
	return synth(rng, n, d, noise)
}

// split is the ExactConfig.Split of the tests' TanimotoMatern data of d inputs, else 0.
func split(k Kernel, d int) int {
	if k == TanimotoMatern {
		return d - 3
	}
	return 0
}

func TestExactNLLGradient(t *testing.T) {
	for _, k := range []Kernel{Matern52, RBF, Tanimoto, TanimotoMatern} {
		rng := rand.New(rand.NewPCG(1, 2))
		const n, d = 30, 5
		x, y := inputs(k, rng, n, d, 0.1)
		e := NewExact(ExactConfig{Kernel: k, Split: split(k, d)}, d)
		nb := e.blocks()
		e.x, e.tr = x, e.rows(x, n)
		e.yMu, e.ySd = meanStd(y)
		for _, v := range y {
			e.y = append(e.y, (v-e.yMu)/e.ySd)
		}
		d2 := make([]float64, nb*n*n)
		e.pairs(d2, e.tr, e.tr)
		e.med = medianOffDiag(d2[(nb-1)*n*n:], n)
		w := newMLLWork(n)
		u := []float64{0.3, -0.2, 0.4, 0.7}[:2+nb]
		g := make([]float64, len(u))
		e.nll(w, d2, u, g)
		for i := range u {
			const h = 1e-6
			up, dn := slices.Clone(u), slices.Clone(u)
			up[i] += h
			dn[i] -= h
			fd := (e.nll(w, d2, up, nil) - e.nll(w, d2, dn, nil)) / (2 * h)
			if math.Abs(fd-g[i]) > 1e-6*max(1, math.Abs(fd)) {
				t.Errorf("%v: ∂NLL/∂u[%d] = %.9g, finite difference %.9g", k, i, g[i], fd)
			}
		}
	}
}

// TestExactPosteriorDirect checks Predict and the sample moments against the textbook formulas computed with
// gonum/mat.
func TestExactPosteriorDirect(t *testing.T) {
	for _, kind := range []Kernel{Matern52, Tanimoto, TanimotoMatern} {
		t.Run(kind.String(), func(t *testing.T) { testExactPosteriorDirect(t, kind) })
	}
}

func testExactPosteriorDirect(t *testing.T, kind Kernel) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d, c = 25, 4, 6
	x, y := inputs(kind, rng, n, d, 0.05)
	e := NewExact(ExactConfig{Kernel: kind, Split: split(kind, d)}, d)
	if err := e.Fit(context.Background(), x, y); err != nil {
		t.Fatal(err)
	}
	xs, _ := inputs(kind, rng, c, d, 0)
	ell, s, noise := e.Hyper()
	matern := func(a, b []float64) float64 {
		var d2 float64
		for i := range a {
			d2 += (a[i] - b[i]) * (a[i] - b[i])
		}
		v, _ := matern52(d2, ell)
		return v
	}
	k := func(a, b []float64) float64 {
		switch kind {
		case Tanimoto:
			return s * tanimoto(a, b)
		case TanimotoMatern:
			w, m := e.weight(), split(kind, d)
			return s * (w*tanimoto(a[:m], b[:m]) + (1-w)*matern(a[m:], b[m:]))
		}
		return s * matern(a, b)
	}
	kxx := mat.NewSymDense(n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := k(x[i*d:(i+1)*d], x[j*d:(j+1)*d])
			if i == j {
				v += noise
			}
			kxx.SetSym(i, j, v)
		}
	}
	ks := mat.NewDense(n, c, nil)
	for i := range n {
		for j := range c {
			ks.Set(i, j, k(x[i*d:(i+1)*d], xs[j*d:(j+1)*d]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(kxx) {
		t.Fatal("not PD")
	}
	yt := mat.NewVecDense(n, nil)
	for i, v := range y {
		yt.SetVec(i, (v-e.yMu)/e.ySd)
	}
	var alpha mat.VecDense
	if err := ch.SolveVecTo(&alpha, yt); err != nil {
		t.Fatal(err)
	}
	var sol mat.Dense
	if err := ch.SolveTo(&sol, ks); err != nil {
		t.Fatal(err)
	}
	mean, vari := make([]float64, c), make([]float64, c)
	e.Predict(mean, vari, xs, false)
	for j := range c {
		var m, q float64
		for i := range n {
			m += ks.At(i, j) * alpha.AtVec(i)
			q += ks.At(i, j) * sol.At(i, j)
		}
		wantM := e.yMu + e.ySd*m
		wantV := (s - q) * e.ySd * e.ySd
		if math.Abs(mean[j]-wantM) > 1e-8*max(1, math.Abs(wantM)) || math.Abs(vari[j]-wantV) > 1e-8*max(1, wantV) {
			t.Errorf("point %d: mean %g var %g, want %g %g", j, mean[j], vari[j], wantM, wantV)
		}
	}
	// Sample moments agree with Predict.
	const ns = 20000
	dst := make([]float64, ns*c)
	if err := e.Sample(context.Background(), dst, xs, ns, false, rng); err != nil {
		t.Fatal(err)
	}
	for j := range c {
		col := make([]float64, ns)
		for k := range ns {
			col[k] = dst[k*c+j]
		}
		m, sd := stat.MeanStdDev(col, nil)
		if math.Abs(m-mean[j]) > 5*math.Sqrt(vari[j]/ns)+1e-6 || math.Abs(sd*sd-vari[j]) > 0.05*vari[j]+1e-6 {
			t.Errorf("point %d: sample mean %g var %g, posterior %g %g", j, m, sd*sd, mean[j], vari[j])
		}
	}
}

// TestExactImprovesWithData is the surrogate's learning test: on a synthetic function, the rank correlation
// between the posterior mean and the truth on held-out points rises with the training set, and ends high.
func TestExactImprovesWithData(t *testing.T) {
	for _, kind := range []Kernel{Matern52, Tanimoto, TanimotoMatern} {
		t.Run(kind.String(), func(t *testing.T) { testExactImprovesWithData(t, kind) })
	}
}

func testExactImprovesWithData(t *testing.T, kind Kernel) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := 6
	if kind != Matern52 {
		d = 64 // count vectors need more entries to tell points apart
	}
	xt, yt := inputs(kind, rng, 300, d, 0)
	var prev float64 = -1
	for _, n := range []int{10, 40, 160} {
		x, y := inputs(kind, rng, n, d, 0.01)
		e := NewExact(ExactConfig{Kernel: kind, Split: split(kind, d)}, d)
		if err := e.Fit(context.Background(), x, y); err != nil {
			t.Fatal(err)
		}
		mean, vari := make([]float64, len(yt)), make([]float64, len(yt))
		e.Predict(mean, vari, xt, false)
		rho := Spearman(mean, yt)
		t.Logf("n=%d: held-out Spearman %.3f, hyper %v", n, rho, fmtHyper(e))
		if rho < prev-0.02 {
			t.Errorf("n=%d: Spearman %.3f fell from %.3f", n, rho, prev)
		}
		prev = rho
	}
	if prev < 0.9 {
		t.Errorf("Spearman %.3f with 160 points, want ≥ 0.9", prev)
	}
}

func fmtHyper(e *Exact) []float64 {
	l, s, n := e.Hyper()
	return []float64{l / e.med, s, n}
}

// TestExactMarshalRoundTrip: a restored model samples bit-identically.
func TestExactMarshalRoundTrip(t *testing.T) {
	for _, kind := range []Kernel{Matern52, Tanimoto, TanimotoMatern} {
		t.Run(kind.String(), func(t *testing.T) { testExactMarshalRoundTrip(t, kind) })
	}
}

func testExactMarshalRoundTrip(t *testing.T, kind Kernel) {
	rng := rand.New(rand.NewPCG(7, 8))
	x, y := inputs(kind, rng, 40, 5, 0.1)
	e := NewExact(ExactConfig{Kernel: kind, Split: split(kind, 5)}, 5)
	if err := e.Fit(context.Background(), x, y); err != nil {
		t.Fatal(err)
	}
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var r Exact
	if err := r.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	xs, _ := inputs(kind, rng, 10, 5, 0)
	a1, a2 := make([]float64, 30), make([]float64, 30)
	if err := e.Sample(context.Background(), a1, xs, 3, true, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	if err := r.Sample(context.Background(), a2, xs, 3, true, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a1, a2) {
		t.Fatalf("restored model samples differ:\n%v\n%v", a1, a2)
	}
}

// TestTanimotoMaternWeightRefits: the weight of TanimotoMatern is fitted afresh at every Fit. Data scored by the
// Matérn part's inputs alone drive it to saturation (w ≈ 1e-37); a later Fit on data scored by the fingerprints
// alone must bring it back off it, which a weight warm-started where its gradient w(1−w) vanishes cannot (it
// stays at 1e-37). From the other hyperparameters' warm start it need not reach the fresh fit's w ≈ 1.
func TestTanimotoMaternWeightRefits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d = 60, 8
	d1 := split(TanimotoMatern, d)
	join := func(x1, x2 []float64) []float64 {
		x := make([]float64, 0, n*d)
		for i := range n {
			x = append(append(x, x1[i*d1:(i+1)*d1]...), x2[i*(d-d1):(i+1)*(d-d1)]...)
		}
		return x
	}
	e := NewExact(ExactConfig{Kernel: TanimotoMatern, Split: d1}, d)
	xc, _ := synthCounts(rng, n, d1, 0)
	xm, ym := synth(rng, n, d-d1, 0)
	if err := e.Fit(context.Background(), join(xc, xm), ym); err != nil {
		t.Fatal(err)
	}
	first := e.weight()
	xc, yc := synthCounts(rng, n, d1, 0)
	xm, _ = synth(rng, n, d-d1, 0)
	if err := e.Fit(context.Background(), join(xc, xm), yc); err != nil {
		t.Fatal(err)
	}
	if second := e.weight(); !(first < 1e-6 && second > 1e-3) {
		t.Errorf("the weight on the fingerprints: %.3g on data scored by the other inputs, then %.3g on data scored by the fingerprints; want < 1e-6, then > 1e-3", first, second)
	}
}

// TestExactHugeTargets: targets whose squares overflow made the standard deviation +Inf and every prediction NaN
// without a word; Fit says so instead (bo scales such scores first), and targets at the scale bo gives them fit.
func TestExactHugeTargets(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	e := NewExact(ExactConfig{MaxIter: 20}, 1)
	if err := e.Fit(context.Background(), x, []float64{1e308, -1e308, 1e155, 0}); err == nil || !strings.Contains(err.Error(), "does not standardise") {
		t.Errorf("Fit on ±1e308: err = %v, want one saying the targets do not standardise", err)
	}
	if err := e.Fit(context.Background(), x, []float64{0.5, -0.5, 1e-153, 5e-324}); err != nil {
		t.Fatal(err)
	}
	mean, v := make([]float64, 2), make([]float64, 2)
	e.Predict(mean, v, []float64{0.5, 2.5}, false)
	for i := range mean {
		if math.IsNaN(mean[i]) || math.IsInf(mean[i], 0) || math.IsNaN(v[i]) {
			t.Errorf("prediction %d: mean %v variance %v", i, mean[i], v[i])
		}
	}
}
