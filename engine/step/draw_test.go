package step

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// randomInputs returns Train's inputs for B sequences of which real carry
// loss, with random tokens and padded lengths.
func randomInputs(cfg model.Config, B, real int, rng *rand.Rand) *Inputs {
	in := &Inputs{Tok: make([]int32, cfg.T*B), Lens: make([]int32, B), Real: real, Key: kernels.KeyOf(rng.Uint64())}
	for r := range in.Tok {
		in.Tok[r] = int32(rng.IntN(cfg.V))
	}
	for b := range in.Lens {
		in.Lens[b] = int32(2 + rng.IntN(cfg.T-1))
	}
	return in
}

// The draws do what their doc comments say: weights 1/real on the real
// rows within their lengths; negatives only there, never the row's token,
// spread over the vocabulary; accepted noise decodes to the row's token
// and has the scale σ; dropout keeps a share 1−p at 1/(1−p); the same key
// gives the same draws.
func TestDrawsMeanWhatTheySay(t *testing.T) {
	cfg := model.Small(30, 40)
	cfg.Noise = 0.3
	rng := rand.New(rand.NewPCG(1, 2))
	const B, real = 64, 50
	in := randomInputs(cfg, B, real, rng)
	p := modeltest.FarParams(t, cfg, 3)
	b, rejected, err := in.Batch(cfg, p.Embed.Data)
	if err != nil {
		t.Fatal(err)
	}
	en := make([]float32, cfg.V*cfg.F)
	kernels.NormalizeRowsTo(en, p.Embed.Data, cfg.V, cfg.F)
	var negs, weighted, accepted int
	var ss float64
	seen := map[int32]bool{}
	for r, w := range b.Wt {
		t0, b0 := r/B, r%B
		want := float32(0)
		if b0 < real && t0 < int(in.Lens[b0]) {
			want = float32(1.0 / real)
		}
		if w != want {
			t.Fatalf("row %d: weight %g, want %g", r, w, want)
		}
		if w == 0 {
			if b.Neg[r] != -1 {
				t.Fatalf("row %d of no weight has negative %d", r, b.Neg[r])
			}
			continue
		}
		weighted++
		if j := b.Neg[r]; j >= 0 {
			negs++
			seen[j] = true
			if j == b.Tok[r] {
				t.Fatalf("row %d: negative is its own token", r)
			}
		}
		e := b.Eps[r*cfg.F : (r+1)*cfg.F]
		if NearestRow(en, int(b.Tok[r]), e) == int(b.Tok[r]) {
			accepted++
			for _, v := range e {
				ss += float64(v) * float64(v)
			}
		}
	}
	if accepted+rejected != weighted || len(seen) < cfg.V-1 || negs < weighted*9/10 {
		t.Errorf("%d weighted rows: %d accepted, %d rejected, %d negatives over %d tokens", weighted, accepted, rejected, negs, len(seen))
	}
	if sd := math.Sqrt(ss / float64(accepted*cfg.F)); math.Abs(sd-cfg.Noise) > 0.05*cfg.Noise {
		t.Errorf("noise sd %g, want about %g", sd, cfg.Noise)
	}
	var kept int
	for _, m := range b.CtxMask[0] {
		switch m {
		case DropoutScale(cfg.Dropout):
			kept++
		case 0:
		default:
			t.Fatalf("mask entry %g", m)
		}
	}
	if share := float64(kept) / float64(len(b.CtxMask[0])); math.Abs(share-(1-cfg.Dropout)) > 0.01 {
		t.Errorf("dropout keeps %.3f, want %.3f", share, 1-cfg.Dropout)
	}
	again, _, _ := in.Batch(cfg, p.Embed.Data)
	for i := range b.Eps {
		if again.Eps[i] != b.Eps[i] {
			t.Fatal("the same key drew other noise")
		}
	}
}

// Train is Run on the batch its inputs draw (Inputs.Batch) followed by
// Adam with the clipping scale from the norm: on the float64 reference
// device the results and the updated weights agree to 1e-9, and a step
// whose loss is not finite leaves the weights and moments as they were.
func TestTrainIsRunOnItsDraws(t *testing.T) {
	cfg := tinyConfig(model.NLSq)
	p := modeltest.FarParams(t, cfg, 5)
	const B = 3
	in := randomInputs(cfg, B, 2, rand.New(rand.NewPCG(8, 9)))
	c := kernels.AdamCoeffs{Beta1: 0.9, Beta2: 0.999, StepSize: 1e-2, BC2Sqrt: 0.05, Eps: 1e-8}
	const clip = 0.5
	b, rejected, err := in.Batch(cfg, p.Embed.Data)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := New(ref{}, cfg, B, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ran.SetParams(p)
	want, err := ran.Run(b)
	if err != nil {
		t.Fatal(err)
	}
	cr := c
	cr.Scale = ClipScale(want.GradNorm*want.GradNorm, clip)
	if cr.Scale == 1 {
		t.Fatalf("gradient norm %g: clipping at %g does not bite", want.GradNorm, clip)
	}
	ran.Apply(cr)
	trained, err := New(ref{}, cfg, B, Options{})
	if err != nil {
		t.Fatal(err)
	}
	trained.SetParams(p)
	got, err := trained.Train(in, c, clip)
	if err != nil {
		t.Fatal(err)
	}
	want.Rejected = rejected
	for _, v := range [][3]float64{{got.Loss, want.Loss}, {got.NLL, want.NLL}, {got.Sim, want.Sim}, {got.GradNorm, want.GradNorm}} {
		if math.Abs(v[0]-v[1]) > 1e-9*math.Abs(v[1]) {
			t.Errorf("Train %+v, Run %+v", got, want)
			break
		}
	}
	if got.Rejected != want.Rejected {
		t.Errorf("rejected %d, want %d", got.Rejected, want.Rejected)
	}
	gp, wp := mem(trained.params), mem(ran.params)
	for i := range gp {
		if math.Abs(gp[i]-wp[i]) > 1e-9*(1+math.Abs(wp[i])) {
			t.Fatalf("weight %d: Train %g, Run+Apply %g", i, gp[i], wp[i])
		}
	}

	// A non-finite loss: an embedding of NaN.
	bad := p.Clone()
	bad.Embed.Data[int(in.Tok[0])*cfg.F] = float32(math.NaN())
	trained.SetParams(bad)
	before := append([]float64(nil), mem(trained.params)...)
	res, err := trained.Train(in, c, clip)
	if err != nil {
		t.Fatal(err)
	}
	if Finite(res.Loss, res.GradNorm*res.GradNorm) {
		t.Fatalf("loss %g, norm %g with a NaN embedding", res.Loss, res.GradNorm)
	}
	for i, v := range mem(trained.params) {
		if v != before[i] && !(math.IsNaN(v) && math.IsNaN(before[i])) {
			t.Fatalf("weight %d changed by a non-finite step", i)
		}
	}
}

// nearestRowRef is NearestRow one row at a time, as its definition reads.
func nearestRowRef(en []float32, x int, e []float32) int {
	F := len(e)
	best, arg := math.Inf(-1), 0
	for k := 0; (k+1)*F <= len(en); k++ {
		var d float64
		for j := range F {
			d += float64(en[k*F+j]) * (float64(en[x*F+j]) + float64(e[j]))
		}
		if d > best {
			best, arg = d, k
		}
	}
	return arg
}

// NearestRow, four rows at a time, picks the row the one-at-a-time sums
// pick, ties and near ties included (duplicated rows, noise that lands
// between two rows), for V not a multiple of four and F wider than its
// stack buffer.
func TestNearestRowMatchesOneAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ V, F int }{{9, 6}, {185, 40}, {7, 70}, {4, 3}} {
		en := make([]float32, c.V*c.F)
		for i := range en {
			en[i] = float32(rng.NormFloat64())
		}
		copy(en[2*c.F:3*c.F], en[1*c.F:2*c.F]) // a tie: rows 1 and 2 equal
		e := make([]float32, c.F)
		var differ int
		for range 2000 {
			x := rng.IntN(c.V)
			for j := range e {
				e[j] = float32(rng.NormFloat64() * 2)
			}
			got, want := NearestRow(en, x, e), nearestRowRef(en, x, e)
			if got != want {
				differ++
			}
		}
		if differ > 0 {
			t.Errorf("V %d F %d: %d of 2000 rows differ", c.V, c.F, differ)
		}
	}
}

// DropoutWords over a split of the words writes DropoutTo's mask.
func TestDropoutWordsSplit(t *testing.T) {
	key := kernels.KeyOf(99)
	for _, n := range []int{1, 7, 64, 1001} {
		want, got := make([]float32, n), make([]float32, n)
		DropoutTo(want, 0.3, key, 5)
		words := (n + 3) / 4
		for lo := 0; lo < words; lo += 3 {
			DropoutWords(got, 0.3, key, 5, lo, min(lo+3, words))
		}
		if !slices.Equal(got, want) {
			t.Errorf("n %d: split mask differs", n)
		}
	}
}

// noiseRowsRef is NoiseRows as its definition reads: every attempt
// checked with NearestRow.
func noiseRowsRef(eps []float32, tok []int32, wt []float32, en []float32, F int, sigma float64, rounds int, key kernels.PhiloxKey) (rejected int) {
	for r := range tok {
		e := eps[r*F : (r+1)*F]
		if wt[r] == 0 {
			clear(e)
			continue
		}
		ok := false
		for a := 0; a < rounds && !ok; a++ {
			noiseDraw(e, r, a, sigma, key)
			ok = NearestRow(en, int(tok[r]), e) == int(tok[r])
		}
		if !ok {
			rejected++
		}
	}
	return rejected
}

// NoiseRows, which settles most first attempts from a float32 product,
// draws the definition's noise and rejects the same rows: with embeddings
// close together (many rows rejected, many near ties; the last two cases
// rows within float32's rounding of each other, which a product without
// NoiseRows' error bound misorders), with exact ties (a
// token's row repeated before and after it: first of ties), and split into
// ranges of rows as a device splits them.
func TestNoiseRowsMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		V, F   int
		spread float64
		sigma  float64
	}{{185, 40, 1, 0.1}, {30, 8, 0.05, 0.1}, {9, 6, 1, 0.5}, {50, 70, 0.02, 0.01}, {20, 40, 3e-7, 3e-7}, {20, 40, 3e-6, 1e-6}} {
		en := make([]float32, c.V*c.F)
		base := make([]float64, c.F)
		for j := range base {
			base[j] = rng.NormFloat64()
		}
		for k := range c.V {
			row := make([]float64, c.F)
			for j := range row {
				row[j] = base[j] + c.spread*rng.NormFloat64()
			}
			n := 0.0
			for _, v := range row {
				n += v * v
			}
			for j, v := range row {
				en[k*c.F+j] = float32(v / math.Sqrt(n))
			}
		}
		copy(en[1*c.F:2*c.F], en[3*c.F:4*c.F]) // rows 1 and 3 tie; and 5 and 3
		copy(en[5*c.F:6*c.F], en[3*c.F:4*c.F])
		n := 700
		tok, wt := make([]int32, n), make([]float32, n)
		for r := range n {
			tok[r] = int32(rng.IntN(c.V))
			if r%3 == 0 {
				tok[r] = int32(1 + 2*rng.IntN(3)) // 1, 3 or 5: the ties
			}
			if r%11 != 0 {
				wt[r] = 1
			}
		}
		key := kernels.KeyOf(rng.Uint64())
		want, got := make([]float32, n*c.F), make([]float32, n*c.F)
		wantRej := noiseRowsRef(want, tok, wt, en, c.F, c.sigma, 4, key)
		var gotRej int
		for lo := 0; lo < n; lo += 150 {
			gotRej += NoiseRows(got, tok, wt, en, c.F, c.sigma, 4, key, lo, min(lo+150, n))
		}
		if gotRej != wantRej || !slices.Equal(got, want) {
			t.Errorf("V %d F %d spread %g: %d rejected, definition %d; noise equal %v", c.V, c.F, c.spread, gotRej, wantRej, slices.Equal(got, want))
		}
		t.Logf("V %d F %d spread %g: %d of %d rows rejected every attempt", c.V, c.F, c.spread, wantRej, n)
	}
}
