package flowstats

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

// editRec is the textbook recursive definition of the Levenshtein distance.
func editRec(a, b []int) int {
	switch {
	case len(a) == 0:
		return len(b)
	case len(b) == 0:
		return len(a)
	}
	sub := editRec(a[1:], b[1:])
	if a[0] != b[0] {
		sub++
	}
	return min(sub, editRec(a[1:], b)+1, editRec(a, b[1:])+1)
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b []int
		want int
	}{
		{nil, nil, 0},
		{[]int{1, 2, 3}, nil, 3},
		{[]int{1, 2, 3}, []int{1, 2, 3}, 0},
		{[]int{1, 2, 3}, []int{1, 3}, 1},
		{[]int{1, 2, 3}, []int{1, 4, 3}, 1},
		{[]int{1, 2, 3, 4}, []int{2, 3, 4, 5}, 2},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seq := func() []int {
		s := make([]int, rng.IntN(7))
		for i := range s {
			s[i] = rng.IntN(3)
		}
		return s
	}
	for range 500 {
		a, b := seq(), seq()
		if got, want := EditDistance(a, b), editRec(a, b); got != want {
			t.Fatalf("EditDistance(%v, %v) = %d, recursive definition %d", a, b, got, want)
		}
	}
}

func TestSummariseLengths(t *testing.T) {
	s := SummariseLengths([]int{5, 1, 3, 2, 4})
	if s.N != 5 || s.Mean != 3 || s.Min != 1 || s.Q25 != 2 || s.Median != 3 || s.Q75 != 4 || s.Max != 5 ||
		math.Abs(s.Std-math.Sqrt(2.5)) > 1e-12 {
		t.Errorf("summary %+v", s)
	}
	if s := SummariseLengths([]int{1, 2}); s.Median != 1.5 || s.Q25 != 1.25 {
		t.Errorf("interpolation: %+v", s)
	}
	if s := SummariseLengths(nil); s != (LengthSummary{}) {
		t.Errorf("empty: %+v", s)
	}
}

// roundFlow is a flow with F = 1 whose latent of a token is the token id and whose decoding rounds a latent to
// the nearest id in [0, V): a perturbation of less than ½ keeps the token.
type roundFlow struct{ t, v int }

func (r roundFlow) Shape() (int, int) { return r.t, 1 }

func (r roundFlow) Encode(_ context.Context, dst []float64, tokens []int) error {
	for i, x := range tokens {
		dst[i] = float64(x)
	}
	return nil
}

func (r roundFlow) Decode(_ context.Context, dst []int, latents []float64) error {
	for i, z := range latents {
		dst[i] = min(max(int(math.Round(z)), 0), r.v-1)
	}
	return nil
}

func (r roundFlow) FineTune(context.Context, []int, *rand.Rand) error { return nil }

func TestLocality(t *testing.T) {
	const stop = 0
	flow := roundFlow{t: 6, v: 10}
	anchors := []int{
		3, 4, 5, 6, 0, 0,
		7, 7, 0, 0, 0, 0,
	}
	rows, err := Locality(context.Background(), flow, nil, anchors, stop,
		LocalityConfig{Lengths: []float64{0.1, 2}, PerAnchor: 50, Prob: 0.5}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	// L = 0.1: moves within ±0.4 never change a token.
	if r := rows[0]; r.Candidates != 100 || r.Same != 100 || r.MeanEdits != 0 || r.LengthKept != 1 || r.AnchorLen != 3 {
		t.Errorf("L = 0.1: %+v, want every candidate equal to its anchor", r)
	}
	// L = 2: moves within ±8 change tokens, and a stop anywhere shortens the molecule.
	if r := rows[1]; r.Same >= 50 || r.MeanEdits < 1 {
		t.Errorf("L = 2: %+v, want most candidates to differ", r)
	}
	// Regrown with every token kept: the candidates keep the anchor and the prior writes on after it; a latent
	// below ½ is the stop, so P = 0.691 that a candidate is its anchor.
	rows, err = Locality(context.Background(), flow, nil, anchors, stop,
		LocalityConfig{Lengths: []float64{0.1}, PerAnchor: 500, Prob: 0.5, Keep: []float64{1}}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[1]; r.Keep != 1 || r.Length != 0 || math.Abs(float64(r.Same)/1000-0.691) > 0.05 || r.LengthKept <= 1 ||
		r.Distinct < 2 || r.Distinct > 1000-r.Same {
		t.Errorf("regrown, all kept: %+v, want about 691 of 1000 the anchor, the rest longer and distinct", r)
	}
	if _, err := Locality(context.Background(), flow, nil, anchors, stop, LocalityConfig{Keep: []float64{1.5}}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a kept share of 1.5: no error")
	}
	if _, err := Locality(context.Background(), flow, nil, anchors[:5], stop, LocalityConfig{}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("anchors not a multiple of T: no error")
	}
}

func TestPriorLengths(t *testing.T) {
	flow := roundFlow{t: 8, v: 3}
	got, invalid, err := PriorLengths(context.Background(), flow, nil, 2000, 0, rand.New(rand.NewPCG(5, 6)))
	if err != nil || invalid != 0 || len(got) != 2000 {
		t.Fatalf("%d lengths, %d invalid, err %v", len(got), invalid, err)
	}
	// A latent decodes to the stop 0 when z < ½ (rounding, then clamping to [0, 3)): P = 0.691, so a molecule is
	// empty with that probability.
	empty := 0
	for _, l := range got {
		if l < 0 || l > 8 {
			t.Fatalf("length %d outside [0, 8]", l)
		}
		if l == 0 {
			empty++
		}
	}
	if p := float64(empty) / float64(len(got)); math.Abs(p-0.691) > 0.04 {
		t.Errorf("fraction of empty molecules %.3f, want 0.691", p)
	}
}

// TestNLLAt: at T one more than a molecule's length every position is the molecule's own, so both means agree
// and equal −log p / T from LogProbTo; a longer T adds padding positions, and too long a molecule is left out.
func TestNLLAt(t *testing.T) {
	cfg := modeltest.Tiny(model.NLSq)
	f := modeltest.Flow(t, cfg, 7, 0.3)
	p := f.Params()
	stop := model.StopID
	seq := []int{4, 2, 3, 5, stop}
	long := []int{4, 2, 3, 5, 2, 3, 4, 2, stop}
	ctx := context.Background()
	got, err := NLLAt(ctx, p, 5, [][]int{seq, long}, stop)
	if err != nil {
		t.Fatal(err)
	}
	if got.Measured != 1 || math.Abs(got.All-got.Molecule) > 1e-12 {
		t.Errorf("T = 5: %+v, want one molecule and equal means", got)
	}
	q := p.Clone()
	q.Config.T = 5
	g, err := model.NewFlow(q)
	if err != nil {
		t.Fatal(err)
	}
	logp := make([]float64, 1)
	if err := g.LogProbTo(ctx, logp, nil, seq, nil); err != nil {
		t.Fatal(err)
	}
	if want := -logp[0] / 5; math.Abs(got.All-want) > 1e-9*math.Abs(want) {
		t.Errorf("T = 5: NLL %.9g, want −log p / T = %.9g", got.All, want)
	}
	at12, err := NLLAt(ctx, p, 9, [][]int{seq, long}, stop)
	if err != nil {
		t.Fatal(err)
	}
	if at12.Measured != 2 || at12.All == at12.Molecule {
		t.Errorf("T = 9: %+v, want two molecules and padding in All only", at12)
	}
	if _, err := NLLAt(ctx, p, 3, [][]int{seq}, stop); err == nil {
		t.Error("no molecule shorter than T: no error")
	}
	if p.Config.T != cfg.T {
		t.Errorf("NLLAt changed the model's T to %d", p.Config.T)
	}
}

// dropCodec is a codec over roundFlow's tokens whose canonical form leaves out the token 9 (as the SELFIES
// decoder skips a token that cannot bond) and for which a sequence holding 8 is invalid.
type dropCodec struct{ stop int }

func (c dropCodec) Canonical(dst, tokens []int) (string, bool) {
	k := 0
	for _, x := range tokens {
		switch x {
		case 8:
			return "", false
		case 9:
			continue
		}
		dst[k] = x
		k++
	}
	for ; k < len(dst); k++ {
		dst[k] = c.stop
	}
	return "", true
}

// TestCanonicalLengths: with a codec, lengths and edits are those of the canonical molecules and invalid
// molecules are counted apart.
func TestCanonicalLengths(t *testing.T) {
	flow := roundFlow{t: 6, v: 10}
	codec := dropCodec{stop: 0}
	anchors := []int{3, 4, 5, 6, 0, 0}
	rows, err := Locality(context.Background(), flow, codec, anchors, 0,
		LocalityConfig{Lengths: []float64{0.1, 3}, PerAnchor: 400, Prob: 1}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Same != 400 || r.Invalid != 0 {
		t.Errorf("L = 0.1: %+v", r)
	}
	if r := rows[1]; r.Invalid == 0 || r.Invalid == 400 || r.Same+r.Invalid > 400 {
		t.Errorf("L = 3: %+v, want some invalid candidates", r)
	}
	// Prior: a latent near 9 is skipped in the canonical form, near 8 invalidates the molecule.
	raw, _, err := PriorLengths(context.Background(), roundFlow{t: 4, v: 10}, nil, 3000, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	flat := func(l []int) int {
		s := 0
		for _, v := range l {
			s += v
		}
		return s
	}
	// Scale latents up so that 8 and 9 occur: a flow whose decode multiplies by 5.
	wide := scaleFlow{roundFlow{t: 4, v: 10}, 5}
	can, invalid, err := PriorLengths(context.Background(), wide, codec, 3000, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if invalid == 0 || len(can)+invalid != 3000 {
		t.Errorf("%d valid + %d invalid prior molecules, want some invalid and 3000 in all", len(can), invalid)
	}
	if len(raw) != 3000 || flat(raw) == 0 {
		t.Errorf("raw prior lengths: %d, sum %d", len(raw), flat(raw))
	}
}

// scaleFlow decodes s·z with its roundFlow.
type scaleFlow struct {
	roundFlow
	s float64
}

func (f scaleFlow) Decode(ctx context.Context, dst []int, latents []float64) error {
	z := make([]float64, len(latents))
	for i, v := range latents {
		z[i] = f.s * v
	}
	return f.roundFlow.Decode(ctx, dst, z)
}
