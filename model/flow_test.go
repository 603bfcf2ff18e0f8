package model

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/kernels"
	"gonum.org/v1/gonum/mat"
)

// tinyConfig is small enough for the naive float64 oracle and finite
// differences, yet has every structural feature: several blocks (so both
// coupling orders), a 2-layer LSTM and 2 hidden layers per coupling net.
func tinyConfig(tr Transform) Config {
	return Config{V: 12, F: 6, T: 7, MaxT: 9, Blocks: 3, LSTMLayers: 2, H: 8,
		Couplings: 3, U: 10, CouplingDepth: 2, Transform: tr, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// hardParams are random parameters far from the near-identity reference
// initialisation: coupling weights U(−w, w) and biases N(0, 0.3²), so the
// NLSq maps are strongly non-linear.
func hardParams(t testing.TB, cfg Config, seed uint64, w float64) *Params {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	p, err := NewParams(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Blocks {
		for _, c := range b.Couplings {
			for _, d := range c.Layers {
				for i := range d.W.Data {
					d.W.Data[i] = float32((2*rng.Float64() - 1) * w)
				}
				for i := range d.B.Data {
					d.B.Data[i] = float32(0.3 * rng.NormFloat64())
				}
			}
		}
	}
	return p
}

func mustFlow(t testing.TB, p *Params) *Flow {
	t.Helper()
	f, err := NewFlow(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// randomSequences returns B valid sequences (B×T): n ∈ [0, T−1] tokens drawn
// from ids 2..V−1, then <stop> padding, as vocab.Encode produces.
func randomSequences(rng *rand.Rand, B, T, V int) []int {
	x := make([]int, B*T)
	for b := 0; b < B; b++ {
		n := rng.IntN(T)
		for t := 0; t < T; t++ {
			if t < n {
				x[b*T+t] = 2 + rng.IntN(V-2)
			} else {
				x[b*T+t] = StopID
			}
		}
	}
	return x
}

func close64(a, b, atol, rtol float64) bool {
	return math.Abs(a-b) <= atol+rtol*math.Max(math.Abs(a), math.Abs(b))
}

// Flow's forward pass (float32, batched, row-lookup positional code, fused
// context products) must match the naive float64 oracle.
func TestForwardMatchesReference(t *testing.T) {
	for _, tr := range []Transform{NLSq, Affine} {
		cfg := tinyConfig(tr)
		p := hardParams(t, cfg, 1, 0.4)
		f := mustFlow(t, p)
		ref := refFlow{p}
		rng := rand.New(rand.NewPCG(7, 7))
		const B = 5
		v := make([]float32, B*cfg.T*cfg.F)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		z := make([]float32, len(v))
		ld := make([]float64, B*cfg.T)
		ws := &Workspace{Workers: 2}
		if err := f.ForwardTo(context.Background(), z, ld, v, ws); err != nil {
			t.Fatal(err)
		}
		TF := cfg.T * cfg.F
		for b := 0; b < B; b++ {
			zr, ldr := ref.forward(f64(v[b*TF : (b+1)*TF]))
			for i := range zr {
				// float32 arithmetic through 3 blocks × 3 couplings.
				if !close64(float64(z[b*TF+i]), zr[i], 2e-5, 2e-5) {
					t.Fatalf("%v: sequence %d, z[%d] = %.7g, oracle %.7g", tr, b, i, z[b*TF+i], zr[i])
				}
			}
			for ti := range ldr {
				if !close64(ld[b*cfg.T+ti], ldr[ti], 1e-4, 1e-4) {
					t.Fatalf("%v: sequence %d position %d: logdet %.7g, oracle %.7g", tr, b, ti, ld[b*cfg.T+ti], ldr[ti])
				}
			}
		}
	}
}

func TestInverseMatchesReference(t *testing.T) {
	for _, tr := range []Transform{NLSq, Affine} {
		cfg := tinyConfig(tr)
		p := hardParams(t, cfg, 2, 0.4)
		f := mustFlow(t, p)
		ref := refFlow{p}
		rng := rand.New(rand.NewPCG(8, 8))
		const B = 4
		z := make([]float32, B*cfg.T*cfg.F)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		v := make([]float32, len(z))
		if err := f.InverseTo(context.Background(), v, z, &Workspace{Workers: 3}); err != nil {
			t.Fatal(err)
		}
		TF := cfg.T * cfg.F
		for b := 0; b < B; b++ {
			vr := ref.inverse(f64(z[b*TF : (b+1)*TF]))
			for i := range vr {
				if !close64(float64(v[b*TF+i]), vr[i], 1e-4, 1e-4) {
					t.Fatalf("%v: sequence %d, v[%d] = %.7g, oracle %.7g", tr, b, i, v[b*TF+i], vr[i])
				}
			}
		}
	}
}

// The per-position log-dets must add up to log|det ∂z/∂v| of the whole
// sequence, computed from a central finite-difference Jacobian of the
// float64 oracle. The Jacobian is block lower triangular over positions
// (autoregressive), so this also checks that no position sees the future.
func TestLogDetFiniteDifferenceJacobian(t *testing.T) {
	for _, tr := range []Transform{NLSq, Affine} {
		cfg := tinyConfig(tr)
		cfg.T, cfg.F = 4, 4
		p := hardParams(t, cfg, 3, 0.4)
		f := mustFlow(t, p)
		ref := refFlow{p}
		rng := rand.New(rand.NewPCG(9, 9))
		n := cfg.T * cfg.F
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		jac := mat.NewDense(n, n, nil)
		const h = 1e-6
		for j := 0; j < n; j++ {
			vp := append([]float64(nil), v...)
			vm := append([]float64(nil), v...)
			vp[j] += h
			vm[j] -= h
			zp, _ := ref.forward(vp)
			zm, _ := ref.forward(vm)
			for i := 0; i < n; i++ {
				jac.Set(i, j, (zp[i]-zm[i])/(2*h))
				if i/cfg.F < j/cfg.F && math.Abs(jac.At(i, j)) > 1e-8 {
					t.Fatalf("%v: ∂z[%d]/∂v[%d] = %g: position %d depends on later position %d", tr, i, j, jac.At(i, j), i/cfg.F, j/cfg.F)
				}
			}
		}
		logDet, sign := mat.LogDet(jac)
		v32 := make([]float32, n)
		for i := range v {
			v32[i] = float32(v[i])
		}
		z := make([]float32, n)
		ld := make([]float64, cfg.T)
		if err := f.ForwardTo(context.Background(), z, ld, v32, nil); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, l := range ld {
			sum += l
		}
		if sign <= 0 || !close64(sum, logDet, 1e-4, 1e-4) {
			t.Fatalf("%v: Σ logdet = %.8g, finite-difference log|det J| = %.8g (sign %g)", tr, sum, logDet, sign)
		}
	}
}

// LogProbTo is Σ log N(z) + Σ logdet, per position and per sequence.
func TestLogProb(t *testing.T) {
	cfg := tinyConfig(NLSq)
	f := mustFlow(t, hardParams(t, cfg, 4, 0.3))
	rng := rand.New(rand.NewPCG(10, 10))
	const B = 3
	x := randomSequences(rng, B, cfg.T, cfg.V)
	logp := make([]float64, B)
	pos := make([]float64, B*cfg.T)
	if err := f.LogProbTo(context.Background(), logp, pos, x, nil); err != nil {
		t.Fatal(err)
	}
	ref := refFlow{f.p}
	v := make([]float32, B*cfg.T*cfg.F)
	if err := f.EmbedTo(v, x); err != nil {
		t.Fatal(err)
	}
	TF := cfg.T * cfg.F
	for b := 0; b < B; b++ {
		z, ld := ref.forward(f64(v[b*TF : (b+1)*TF]))
		want := 0.0
		for ti := 0; ti < cfg.T; ti++ {
			lp := ld[ti]
			for i := 0; i < cfg.F; i++ {
				e := z[ti*cfg.F+i]
				lp += -0.5*e*e - 0.5*math.Log(2*math.Pi)
			}
			if !close64(pos[b*cfg.T+ti], lp, 1e-4, 1e-5) {
				t.Fatalf("sequence %d position %d: log p %.8g, oracle %.8g", b, ti, pos[b*cfg.T+ti], lp)
			}
			want += lp
		}
		if !close64(logp[b], want, 1e-3, 1e-5) {
			t.Fatalf("sequence %d: log p %.8g, oracle %.8g", b, logp[b], want)
		}
	}
}

// roundTrip checks decode(encode(x)) == x token for token.
func roundTrip(t *testing.T, f *Flow, B int, seed uint64, ws *Workspace) {
	t.Helper()
	cfg := f.Config()
	rng := rand.New(rand.NewPCG(seed, 99))
	x := randomSequences(rng, B, cfg.T, cfg.V)
	z := make([]float32, B*cfg.T*cfg.F)
	ctx := context.Background()
	start := time.Now()
	if err := f.EncodeTo(ctx, z, x, ws); err != nil {
		t.Fatal(err)
	}
	enc := time.Since(start)
	got := make([]int, len(x))
	for i := range got {
		got[i] = -1
	}
	start = time.Now()
	if err := f.DecodeTo(ctx, got, z, ws); err != nil {
		t.Fatal(err)
	}
	t.Logf("B=%d T=%d: encode %v, decode %v", B, cfg.T, enc, time.Since(start))
	for i := range x {
		if got[i] != x[i] {
			b := i / cfg.T
			t.Fatalf("B=%d: sequence %d differs at position %d:\n got %v\nwant %v", B, b, i%cfg.T,
				got[b*cfg.T:(b+1)*cfg.T], x[b*cfg.T:(b+1)*cfg.T])
		}
	}
}

func TestRoundTripTiny(t *testing.T) {
	for _, tr := range []Transform{NLSq, Affine} {
		cfg := tinyConfig(tr)
		for seed, w := range []float64{0.07, 0.4, 0.7} {
			f := mustFlow(t, hardParams(t, cfg, uint64(seed+20), w))
			ws := &Workspace{Workers: 2}
			for _, B := range []int{1, 2, 67, 300} { // 67, 300: several chunks
				roundTrip(t, f, B, uint64(B), ws)
			}
		}
	}
}

func TestRoundTripSmallPreset(t *testing.T) {
	cfg := Small(60, 48)
	p, err := NewParams(cfg, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, mustFlow(t, p), 40, 1, nil)
	roundTrip(t, mustFlow(t, hardParams(t, cfg, 6, 0.2)), 40, 2, nil)
}

func TestRoundTripPaperPreset(t *testing.T) {
	if testing.Short() {
		t.Skip("paper preset: ~30 s on 2 cores")
	}
	cfg := Paper(185, 64)
	p, err := NewParams(cfg, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, mustFlow(t, p), 8, 3, nil)
}

// Reusing a workspace across calls of different batch sizes must not change
// results, and after the first call the buffers are reused.
func TestWorkspaceReuse(t *testing.T) {
	cfg := tinyConfig(NLSq)
	f := mustFlow(t, hardParams(t, cfg, 11, 0.4))
	rng := rand.New(rand.NewPCG(12, 12))
	ctx := context.Background()
	ws := &Workspace{Workers: 2}
	for _, B := range []int{70, 3, 1, 129} {
		x := randomSequences(rng, B, cfg.T, cfg.V)
		z1 := make([]float32, B*cfg.T*cfg.F)
		z2 := make([]float32, len(z1))
		if err := f.EncodeTo(ctx, z1, x, ws); err != nil {
			t.Fatal(err)
		}
		if err := f.EncodeTo(ctx, z2, x, nil); err != nil {
			t.Fatal(err)
		}
		for i := range z1 {
			if z1[i] != z2[i] {
				t.Fatalf("B=%d: reused workspace gives z[%d] = %g, fresh %g", B, i, z1[i], z2[i])
			}
		}
	}
	// gonum's parallel GEMM starts goroutines (small allocations); the
	// workspace buffers themselves must not be reallocated.
	x := randomSequences(rng, 2000, cfg.T, cfg.V)
	z := make([]float32, len(x)*cfg.F)
	ids := make([]int, len(x))
	run := func(ws *Workspace) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f.EncodeTo(ctx, z, x, ws)
		f.DecodeTo(ctx, ids, z, ws)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	warm := &Workspace{Workers: 2}
	run(warm)
	cold, hot := run(nil), run(warm)
	t.Logf("encode+decode of 2000 sequences: %d bytes allocated with a fresh workspace, %d with a warm one", cold, hot)
	if hot*4 > cold {
		t.Fatalf("a warm workspace still allocates %d bytes per call (fresh: %d)", hot, cold)
	}
}

func TestCancelled(t *testing.T) {
	cfg := tinyConfig(NLSq)
	f := mustFlow(t, hardParams(t, cfg, 13, 0.1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	z := make([]float32, 4*cfg.T*cfg.F)
	if err := f.DecodeTo(ctx, make([]int, 4*cfg.T), z, nil); err == nil {
		t.Fatal("DecodeTo ignored a cancelled context")
	}
}

func TestBadInput(t *testing.T) {
	cfg := tinyConfig(NLSq)
	f := mustFlow(t, hardParams(t, cfg, 14, 0.1))
	x := make([]int, 2*cfg.T)
	x[cfg.T+3] = cfg.V
	err := f.EncodeTo(context.Background(), make([]float32, 2*cfg.T*cfg.F), x, nil)
	if err == nil || !strings.Contains(err.Error(), "sequence 1 position 3") {
		t.Fatalf("out-of-range id: err = %v", err)
	}
	for name, fn := range map[string]func(){
		"EncodeTo": func() { f.EncodeTo(context.Background(), make([]float32, 3), make([]int, cfg.T), nil) },
		"DecodeTo": func() { f.DecodeTo(context.Background(), make([]int, 3), make([]float32, cfg.T*cfg.F), nil) },
		"ragged":   func() { f.DecodeTo(context.Background(), make([]int, cfg.T), make([]float32, cfg.T*cfg.F+1), nil) },
	} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "model: ") {
					t.Errorf("%s: panic %q, want a model: message", name, r)
				}
			}()
			fn()
		}()
	}
	bad := ZeroParams(cfg)
	bad.Blocks[1].LSTM[0].Whh.Data = bad.Blocks[1].LSTM[0].Whh.Data[1:]
	if _, err := NewFlow(bad); err == nil || !strings.Contains(err.Error(), "block1.lstm0.whh") {
		t.Fatalf("NewFlow with a short tensor: err = %v", err)
	}
}

func TestForceStop(t *testing.T) {
	x := []int{5, 1, 7, 1, 2, 3, 4, 5}
	ForceStop(x, 4)
	want := []int{5, 1, 1, 1, 2, 3, 4, 5}
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("got %v, want %v", x, want)
		}
	}
}

func TestConfusedToken(t *testing.T) {
	cfg := tinyConfig(NLSq)
	p := hardParams(t, cfg, 31, 0.4)
	if tok, as := mustFlow(t, p).ConfusedToken(); tok != -1 || as != -1 {
		t.Fatalf("random embeddings: token %d decodes as %d, want every token to itself", tok, as)
	}
	// Token 5's embedding a multiple of token 3's: the same unit vector, so the decoder (ties to the lower
	// index) never produces 5, and a sequence holding 5 does not reconstruct.
	F := cfg.F
	for i := range F {
		p.Embed.Data[5*F+i] = 2 * p.Embed.Data[3*F+i]
	}
	f := mustFlow(t, p)
	if tok, as := f.ConfusedToken(); tok != 5 || as != 3 {
		t.Fatalf("ConfusedToken = %d, %d; want 5, 3", tok, as)
	}
	x := make([]int, cfg.T)
	for i := range x {
		x[i] = 2 + i%(cfg.V-2)
	}
	x[0] = 5
	z := make([]float32, cfg.T*F)
	ws := &Workspace{}
	if err := f.EncodeTo(context.Background(), z, x, ws); err != nil {
		t.Fatal(err)
	}
	got := make([]int, cfg.T)
	if err := f.DecodeTo(context.Background(), got, z, ws); err != nil {
		t.Fatal(err)
	}
	if got[0] != 3 {
		t.Errorf("decoded the merged token as %d, want 3", got[0])
	}
}

// DecodeTo stops each sequence at its <stop> (decodeStopping): on latents far from any encoding, and on
// perturbed encodings whose molecules end at many different positions, its ids are those of the whole flow
// run block by block (InverseTo), the nearest tokens and ForceStop, sequence by sequence, across chunks.
func TestDecodeStopsAtStop(t *testing.T) {
	for _, tr := range []Transform{NLSq, Affine} {
		cfg := tinyConfig(tr)
		cfg.T = 9
		f := mustFlow(t, hardParams(t, cfg, 4, 0.3))
		rng := rand.New(rand.NewPCG(11, 12))
		const B = 300 // two chunks of maxDecodeChunk and a part
		x := randomSequences(rng, B, cfg.T, cfg.V)
		z := make([]float32, B*cfg.T*cfg.F)
		ctx := context.Background()
		ws := &Workspace{Workers: 2}
		if err := f.EncodeTo(ctx, z, x, ws); err != nil {
			t.Fatal(err)
		}
		for i := range z {
			z[i] += float32(0.3 * rng.NormFloat64())
		}
		for i := range 20 * cfg.T * cfg.F { // the first 20: far from any encoding
			z[i] = float32(2 * rng.NormFloat64())
		}
		v := make([]float32, len(z))
		if err := f.InverseTo(ctx, v, z, ws); err != nil {
			t.Fatal(err)
		}
		want := make([]int, B*cfg.T)
		scores := make([]float32, B*cfg.T*cfg.V)
		kernels.NearestCosineTo(want, v, f.UnitEmbedding(), scores, B*cfg.T, cfg.F, cfg.V)
		ForceStop(want, cfg.T)
		got := make([]int, len(want))
		if err := f.DecodeTo(ctx, got, z, ws); err != nil {
			t.Fatal(err)
		}
		lengths := map[int]bool{}
		for b := range B {
			w, g := want[b*cfg.T:(b+1)*cfg.T], got[b*cfg.T:(b+1)*cfg.T]
			if !slices.Equal(g, w) {
				t.Fatalf("%v: sequence %d decoded %v, block by block %v", tr, b, g, w)
			}
			lengths[slices.Index(w, StopID)] = true
		}
		if len(lengths) < cfg.T/2 {
			t.Fatalf("%v: the decoded sequences end at only %d distinct positions: the test does not exercise stopping", tr, len(lengths))
		}
	}
}

// DropStopped writes the position's tokens, pads a stopped sequence with <stop> and moves the live rows' states
// down in order.
func TestDropStopped(t *testing.T) {
	const T, w = 4, 2
	x := make([]int, 3*T)
	rows := []int{2, 0, 1} // live row i decodes sequence rows[i]
	st := []float32{20, 21, 0, 1, 10, 11}
	live := DropStopped(x, T, 1, []int{5, StopID, 7}, rows, w, [][]float32{st})
	if live != 2 || !slices.Equal(rows[:2], []int{2, 1}) || !slices.Equal(st[:4], []float32{20, 21, 10, 11}) {
		t.Fatalf("live %d, rows %v, states %v", live, rows, st)
	}
	if want := []int{0, StopID, StopID, StopID, 0, 7, 0, 0, 0, 5, 0, 0}; !slices.Equal(x, want) {
		t.Fatalf("x = %v, want %v", x, want)
	}
}
