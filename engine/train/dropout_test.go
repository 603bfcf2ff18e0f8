package train

import (
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/nfbo/nfbo/model"
	"gorgonia.org/tensor"
)

// TestFillDropout checks the masks fillDropout draws, in a graph whose
// masks span several random streams (maskChunk entries each): every entry
// is 0 or 1/(1−p), a fraction p of them 0; the same rng state gives the
// same masks whatever the number of cores; another state gives others.
func TestFillDropout(t *testing.T) {
	cfg := tinyConfig(model.NLSq)
	cfg.T, cfg.MaxT, cfg.H = 20, 24, 16
	p := modeltest.FarParams(t, cfg, 3)
	const B = 256 // the inter-layer mask: 19·256·16 entries, two streams
	g, err := buildGraphOpts(p, B, tensor.Float32, kindTrain, graphOpts{lstmOp: true, couplingOp: true})
	if err != nil {
		t.Fatal(err)
	}
	masks := func(procs int, seed uint64) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		fillDropout(g, cfg.Dropout, rand.New(rand.NewPCG(seed, 1)))
		var all []float32
		for k := range g.interMask {
			for l := range g.interMask[k] {
				for _, f := range g.interMask[k][l] {
					all = append(all, f.val.Data().([]float32)...)
				}
			}
		}
		for _, f := range g.ctxMask {
			all = append(all, f.val.Data().([]float32)...)
		}
		return all
	}
	one, two := masks(1, 9), masks(2, 9)
	if n := len(g.interMask[0][0][0].val.Data().([]float32)); n <= maskChunk {
		t.Fatalf("inter-layer mask of %d entries: one stream only", n)
	}
	keep := float32(1 / (1 - cfg.Dropout))
	zeros := 0
	for i, v := range one {
		if v != 0 && v != keep {
			t.Fatalf("entry %d = %v, want 0 or %v", i, v, keep)
		}
		if v == 0 {
			zeros++
		}
		if two[i] != v {
			t.Fatalf("entry %d: %v on one core, %v on two", i, v, two[i])
		}
	}
	// A binomial fraction of ~10⁵ entries: 5 standard deviations is 0.006.
	if frac := float64(zeros) / float64(len(one)); math.Abs(frac-cfg.Dropout) > 0.006 {
		t.Errorf("%.4f of %d entries dropped, want %.2f", frac, len(one), cfg.Dropout)
	}
	// The streams of a mask's chunks differ.
	first := g.interMask[0][0][0].val.Data().([]float32)
	rest := min(len(first)-maskChunk, maskChunk)
	if string(float32Bytes(first[:rest])) == string(float32Bytes(first[maskChunk:maskChunk+rest])) {
		t.Error("a mask's second stream repeats its first")
	}
	other, same := masks(2, 10), 0
	for i := range one {
		if other[i] == one[i] {
			same++
		}
	}
	if same == len(one) {
		t.Error("another seed drew the same masks")
	}
}

func float32Bytes(x []float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		u := math.Float32bits(v)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

// TestPrepareBatchNoise checks the rejection-sampled noise: the same rng
// state gives the same noise whatever the number of cores; every accepted
// row's noisy embedding is nearest its own token, and the rows that are
// not are the ones counted as rejected; padding rows get no noise. σ is
// large enough that many first draws are rejected and drawn again.
func TestPrepareBatchNoise(t *testing.T) {
	cfg := tinyConfig(model.NLSq)
	cfg.T, cfg.MaxT = 12, 16
	p := modeltest.FarParams(t, cfg, 5)
	seqs := randomSeqs(cfg, 5, rand.New(rand.NewPCG(1, 1)))
	lens := []int{12, 7, 12, 3, 9}
	const B, sigma = 8, 0.6 // 24 of the 43 rows' first draws are rejected
	batch := func(procs int) *batchInputs {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return prepareBatch(p, seqs, lens, B, sigma, rand.New(rand.NewPCG(7, 7)))
	}
	one, two := batch(1), batch(2)
	if one.rejected != two.rejected {
		t.Fatalf("rejected %d on one core, %d on two", one.rejected, two.rejected)
	}
	for i := range one.eps {
		if one.eps[i] != two.eps[i] {
			t.Fatalf("noise entry %d: %v on one core, %v on two", i, one.eps[i], two.eps[i])
		}
	}
	en := normalisedEmbeddings(p)
	F := cfg.F
	wrong, weighted := 0, 0
	v := make([]float64, F)
	for b := range B {
		for tt := range cfg.T {
			r := tt*B + b
			e := one.eps[r*F : (r+1)*F]
			if b >= len(seqs) || tt >= lens[b] {
				for _, x := range e {
					if x != 0 {
						t.Fatalf("padding row %d (b %d, t %d) has noise %v", r, b, tt, e)
					}
				}
				continue
			}
			weighted++
			x := seqs[b][tt]
			for i := range v {
				v[i] = en[x*F+i] + e[i]
			}
			if nearest(en, v, F) != x {
				wrong++
			}
		}
	}
	if one.rejected > weighted/10 {
		t.Errorf("%d of %d rows rejected after %d draws: the rows are not drawn again", one.rejected, weighted, maxRejectRounds)
	}
	if wrong != one.rejected {
		t.Errorf("%d of %d weighted rows are nearest another token, %d counted as rejected", wrong, weighted, one.rejected)
	}
	other := prepareBatch(p, seqs, lens, B, sigma, rand.New(rand.NewPCG(8, 7)))
	same := 0
	for i := range one.eps {
		if one.eps[i] == other.eps[i] {
			same++
		}
	}
	if same == len(one.eps) {
		t.Error("another seed drew the same noise")
	}
}

// TestDrawMask32MatchesDrawMask draws masks in pieces of every parity from
// one stream with both forms: the same entries, and the stream left in the
// same place.
func TestDrawMask32MatchesDrawMask(t *testing.T) {
	const p = 0.3
	thresh := uint32(1288490189) // p·2³²
	keep := float32(1 / (1 - p))
	var a, b bitStream
	a.seed(5, 6)
	b.seed(5, 6)
	kept := 0
	for _, n := range []int{0, 1, 2, 3, 1, 8, 5, 0, 64, 7, 1, 1, 100} {
		want, got := make([]float32, n), make([]float32, n)
		drawMask(want, thresh, keep, &a)
		drawMask32(got, thresh, keep, &b)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("piece of %d, entry %d: %v, want %v", n, i, got[i], want[i])
			}
			if want[i] != 0 {
				kept++
			}
		}
	}
	if kept == 0 {
		t.Fatal("no entry kept")
	}
	if x, y := a.next(), b.next(); x != y {
		t.Errorf("next draw after the pieces: %#x, want %#x", y, x)
	}
}
