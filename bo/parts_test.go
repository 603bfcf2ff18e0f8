package bo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestThompsonSelect(t *testing.T) {
	// 3 samples over 4 candidates; sample 1's best (0) is taken by sample 0, so it takes its next best (2).
	samples := []float64{
		5, 1, 2, 0,
		9, 0, 8, 1,
		9, 0, 8, 7,
	}
	got := make([]int, 3)
	ThompsonSelect(got, samples, 4)
	if want := []int{0, 2, 3}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("ThompsonSelect = %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("q > C did not panic")
		}
	}()
	ThompsonSelect(make([]int, 5), make([]float64, 20), 4)
}

func TestSelectAnchors(t *testing.T) {
	y := []float64{0.1, 0.9, 0.5, 0.9, 0.2}
	got := make([]int, 3)
	SelectAnchors(got, y, 0, nil)
	if got[0] != 1 || got[1] != 3 || got[2] != 2 {
		t.Errorf("greedy = %v, want [1 3 2]", got)
	}
	// First draw with temperature τ: P(i) = exp(minmax(y)ᵢ/τ)/Σ. Check frequencies over 200k draws at 4σ.
	const draws = 200000
	tau := 0.5
	counts := make([]int, len(y))
	rng := rand.New(rand.NewPCG(1, 2))
	one := make([]int, 1)
	for range draws {
		SelectAnchors(one, y, tau, rng)
		counts[one[0]]++
	}
	var z float64
	w := make([]float64, len(y))
	for i, v := range y {
		w[i] = math.Exp((v - 0.1) / 0.8 / tau)
		z += w[i]
	}
	for i := range y {
		p := w[i] / z
		sd := math.Sqrt(p * (1 - p) / draws)
		if got := float64(counts[i]) / draws; math.Abs(got-p) > 4*sd {
			t.Errorf("P(anchor %d) = %.4f, want %.4f ± %.4f", i, got, p, 4*sd)
		}
	}
	// The paper's rule: P(i) = exp(yᵢ/τ)/Σ on the raw scores, here with y scaled by 3 so that min-max
	// scaling would give other probabilities.
	y3 := make([]float64, len(y))
	for i, v := range y {
		y3[i] = 3 * v
	}
	clear(counts)
	for range draws {
		SelectAnchorsRule(one, y3, AnchorsRaw, tau, rng)
		counts[one[0]]++
	}
	z = 0
	for i, v := range y3 {
		w[i] = math.Exp(v / tau)
		z += w[i]
	}
	for i := range y {
		p := w[i] / z
		sd := math.Sqrt(p * (1 - p) / draws)
		if got := float64(counts[i]) / draws; math.Abs(got-p) > 4*sd {
			t.Errorf("raw rule: P(anchor %d) = %.4f, want %.4f ± %.4f", i, got, p, 4*sd)
		}
	}
	if r, err := ParseAnchorRule("raw"); err != nil || r != AnchorsRaw || r.String() != "raw" || r.DefaultTemperature() != 0.1 {
		t.Errorf("ParseAnchorRule(raw) = %v, %v", r, err)
	}
	if _, err := ParseAnchorRule("paper"); err == nil {
		t.Error("ParseAnchorRule(paper): no error")
	}
	// Without replacement: all distinct.
	all := make([]int, len(y))
	SelectAnchors(all, y, 0.01, rng)
	seen := map[int]bool{}
	for _, i := range all {
		if seen[i] {
			t.Fatalf("anchor %d drawn twice: %v", i, all)
		}
		seen[i] = true
	}
}

func TestUpdateTrustRegion(t *testing.T) {
	s := NewTrustRegion(1)
	for _, tc := range []struct {
		newPts int
		want   float64
	}{{2, 0.8 * 1.2}, {10, 0.8}, {30, 0.8 / 1.2}} {
		got := UpdateTrustRegion(s, TRNovelty, NoveltyBand{}, Outcome{Proposed: 100, New: tc.newPts})
		if math.Abs(got.Length-tc.want) > 1e-15 {
			t.Errorf("novelty, %d/100 new: length %v, want %v", tc.newPts, got.Length, tc.want)
		}
	}
	// A band of its own: 30 of 100 new is 70 % stale, inside (0.4, 0.8); 70 new is 30 % stale, below 0.4.
	band := NoveltyBand{Shrink: 0.4, Grow: 0.8}
	for _, tc := range []struct {
		newPts int
		want   float64
	}{{10, 0.8 * 1.2}, {30, 0.8}, {70, 0.8 / 1.2}} {
		got := UpdateTrustRegion(s, TRNovelty, band, Outcome{Proposed: 100, New: tc.newPts})
		if math.Abs(got.Length-tc.want) > 1e-15 {
			t.Errorf("novelty band %v, %d/100 new: length %v, want %v", band, tc.newPts, got.Length, tc.want)
		}
	}
	if s.Length != TRLengthInit {
		t.Error("UpdateTrustRegion modified its input")
	}
	// TuRBO: 3 successes double the length; failTol = ceil(max(4/q, D/q)) = 2 failures halve it.
	tr := NewTrustRegion(1)
	for i := range 3 {
		tr = UpdateTrustRegion(tr, TRTuRBO, NoveltyBand{}, Outcome{Proposed: 10, New: 1, BestNew: 2 + float64(i), D: 20})
	}
	if tr.Length != 1.6 || tr.Best != 4 {
		t.Errorf("after 3 successes: length %v best %v, want 1.6 and 4", tr.Length, tr.Best)
	}
	for range 2 {
		tr = UpdateTrustRegion(tr, TRTuRBO, NoveltyBand{}, Outcome{Proposed: 10, New: 1, BestNew: 0, D: 20})
	}
	if tr.Length != 0.8 {
		t.Errorf("after 2 failures: length %v, want 0.8", tr.Length)
	}
	for range 14 {
		tr = UpdateTrustRegion(tr, TRTuRBO, NoveltyBand{}, Outcome{Proposed: 10, D: 20})
	}
	if tr.Restarts != 1 || tr.Length != TRLengthInit {
		t.Errorf("after 7 halvings: restarts %d length %v, want 1 and %v", tr.Restarts, tr.Length, TRLengthInit)
	}
}

func TestPerturb(t *testing.T) {
	const c, tt, f = 4000, 5, 3
	d := tt * f
	centre := make([]float64, d)
	for i := range centre {
		centre[i] = float64(i)
	}
	prob := []float64{0, 0.1, 0.5, 1, 0.1}
	unit := make([]float64, c*d)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range unit {
		unit[i] = rng.Float64()
	}
	dst := make([]float64, c*d)
	Perturb(dst, centre, 2, prob, f, unit, rng)
	changed := make([]int, d)
	for i := range c {
		for j := range d {
			v := dst[i*d+j]
			if v != centre[j] {
				changed[j]++
				if want := centre[j] + 2*(2*unit[i*d+j]-1); v != want {
					t.Fatalf("candidate %d dim %d = %v, want %v", i, j, v, want)
				}
			}
		}
	}
	for j := range d {
		p := prob[j/f]
		sd := math.Sqrt(p*(1-p)/c) + 1e-12
		if got := float64(changed[j]) / c; math.Abs(got-p) > 4*sd {
			t.Errorf("dim %d perturbed with frequency %.4f, want %.2f ± %.4f", j, got, p, 4*sd)
		}
	}
}

func TestTACSProbabilities(t *testing.T) {
	// With the toy flow every resampled position changes at most one token, except that position 0 can also
	// make the sequence invalid (token 0 first): then every position mismatches, so position 0 gets the
	// largest PMI on average. Check the hand formula on one anchor with a fixed seed, and the invariants.
	flow := &toyFlow{t: 4, v: 6}
	tok := []int{2, 3, 4, 5}
	z := make([]float64, 8)
	flow.Encode(context.Background(), z, tok)
	cfg := TACSConfig{Tau: 2, Samples: 3}
	got := make([]float64, 4)
	rng := rand.New(rand.NewPCG(5, 6))
	if err := TACSProbabilities(context.Background(), got, flow, toyCodec{}, tok, z, cfg, 0.1, -1, rng); err != nil {
		t.Fatal(err)
	}
	// Recompute with the same random stream by hand.
	rng = rand.New(rand.NewPCG(5, 6))
	hit, miss := math.Log(0.95), math.Log(0.05)
	om := make([]float64, 4)
	for tp := range 4 {
		lp := make([]float64, 3)
		for b := range 3 {
			lat := append([]float64(nil), z...)
			lat[2*tp], lat[2*tp+1] = rng.NormFloat64(), rng.NormFloat64()
			dec := make([]int, 4)
			flow.Decode(context.Background(), dec, lat)
			hits := 0
			if dec[0] != 0 {
				for k := range 4 {
					if dec[k] == tok[k] {
						hits++
					}
				}
			}
			lp[b] = float64(hits)*hit + float64(4-hits)*miss
		}
		om[tp] = 4*hit - logMeanExp(lp)
	}
	var sum float64
	for tp := range om {
		sum += math.Exp(om[tp] / 2)
	}
	for tp := range om {
		want := min(0.1*4*math.Exp(om[tp]/2)/sum, 1)
		if math.Abs(got[tp]-want) > 1e-12 {
			t.Errorf("prob[%d] = %.15g, want %.15g", tp, got[tp], want)
		}
	}
}

// stopFlow is an autoregressive toy flow that stops: position t's token is toyFlow's token of z_t shifted by the
// previous token (mod v), and every position after the first stop (token 0) is stop. It counts the rows it
// decodes.
type stopFlow struct {
	toyFlow
	rows int
}

func (f *stopFlow) Decode(ctx context.Context, dst []int, latents []float64) error {
	if err := f.toyFlow.Decode(ctx, dst, latents); err != nil {
		return err
	}
	t := f.t
	for r := range len(dst) / t {
		row, prev := dst[r*t:(r+1)*t], 0
		for k := range row {
			if k > 0 && prev == 0 {
				row[k] = 0
				continue
			}
			row[k] = (row[k] + prev) % f.v
			prev = row[k]
		}
	}
	f.rows += len(dst) / t
	return nil
}

// stopCodec reads a sequence up to its first stop (token 0); an empty one is not a molecule.
type stopCodec struct{}

func (stopCodec) Canonical(dst, tokens []int) (string, bool) {
	clear(dst)
	end := slices.Index(tokens, 0)
	if end < 0 {
		end = len(tokens)
	}
	if end == 0 {
		return "", false
	}
	copy(dst, tokens[:end])
	return fmt.Sprint(tokens[:end]), true
}

// TestTACSSkipsAfterStop checks that TACSProbabilities with the stop id gives bit for bit the probabilities it
// gives decoding every copy, for a flow and codec that keep the contract it relies on, while decoding only the
// copies resampled up to the anchor's stop.
func TestTACSSkipsAfterStop(t *testing.T) {
	const T, n = 12, 5
	flow := &stopFlow{toyFlow: toyFlow{t: T, v: 6}}
	rng := rand.New(rand.NewPCG(7, 8))
	z := make([]float64, n*T*2)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	tok := make([]int, n*T)
	flow.Decode(context.Background(), tok, z)
	canon := make([]int, T)
	for a := range n {
		stopCodec{}.Canonical(canon, tok[a*T:(a+1)*T])
		copy(tok[a*T:(a+1)*T], canon)
	}
	cfg := TACSConfig{Tau: 3, Samples: 2}
	probs := func(stop int) ([]float64, int) {
		flow.rows = 0
		got := make([]float64, n*T)
		if err := TACSProbabilities(context.Background(), got, flow, stopCodec{}, tok, z, cfg, 0.1, stop, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatal(err)
		}
		return got, flow.rows
	}
	all, rowsAll := probs(-1)
	skip, rowsSkip := probs(0)
	if !slices.Equal(all, skip) {
		t.Errorf("probabilities differ:\n every copy %v\n skipping   %v", all, skip)
	}
	ends := 0 // positions up to and including each anchor's stop
	for a := range n {
		e := slices.Index(tok[a*T:(a+1)*T], 0)
		if e < 0 {
			e = T - 1
		}
		ends += e + 1
	}
	if ends == n*T {
		t.Fatal("no anchor stops before T: nothing to skip")
	}
	if want := n + ends*cfg.Samples; rowsSkip != want || rowsAll != n*T*cfg.Samples {
		t.Errorf("decoded %d rows skipping, %d every copy; want %d and %d", rowsSkip, rowsAll, want, n*T*cfg.Samples)
	}
}

func TestDistinctScores(t *testing.T) {
	y := []float64{0.5, 0.9, 0.5, 0.9, 0.2, 0.9}
	got := DistinctScores(y)
	if want := []int{0, 1, 4}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("DistinctScores = %v, want %v", got, want)
	}
}

// A plateau of equal best scores takes every greedy anchor and parent unless DistinctScores draws one per score.
func TestDistinctScoresAnchorsAndParents(t *testing.T) {
	y := []float64{0.1, 0.9, 0.9, 0.9, 0.5, 0.9, 0.3}
	for _, tc := range []struct {
		distinct      bool
		anchors, pars []int
	}{
		{false, []int{1, 2, 3}, []int{1, 2, 3, 5}},
		{true, []int{1, 4, 6}, []int{1, 4, 6, 0}},
	} {
		o := &Optimizer{cfg: Config{Temperature: -1, DistinctScores: tc.distinct}, st: state{Y: y}}
		got := make([]int, 3)
		o.selectAnchors(got)
		if !slices.Equal(got, tc.anchors) {
			t.Errorf("distinct %v: anchors %v, want %v", tc.distinct, got, tc.anchors)
		}
		if p, _ := o.parentSet(4); !slices.Equal(p, tc.pars) {
			t.Errorf("distinct %v: parents %v, want %v", tc.distinct, p, tc.pars)
		}
	}
	// Fewer distinct scores than anchors: the ties are drawn too.
	o := &Optimizer{cfg: Config{Temperature: -1, DistinctScores: true}, st: state{Y: []float64{0.9, 0.9, 0.9, 0.1}}}
	got := make([]int, 3)
	o.selectAnchors(got)
	if want := []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("2 distinct scores, 3 anchors: %v, want %v", got, want)
	}
	// Fewer distinct scores than half the parents: one per score, then the rest best first, the oldest first
	// among ties; half or more: one per score, as without the rule.
	o.st.Y = []float64{0, 0, 0.5, 0, 0, 0.5, 0}
	if p, plateau := o.parentSet(4); !slices.Equal(p, []int{2, 0}) || plateau {
		t.Errorf("2 distinct scores, 4 parents: %v (plateau %v), want [2 0], not a plateau", p, plateau)
	}
	if p, plateau := o.parentSet(5); !slices.Equal(p, []int{2, 0, 5, 1, 3}) || !plateau {
		t.Errorf("2 distinct scores, 5 parents: %v (plateau %v), want [2 0 5 1 3], a plateau", p, plateau)
	}
	if p, _ := o.parentSet(10); !slices.Equal(p, []int{2, 0, 5, 1, 3, 4, 6}) {
		t.Errorf("2 distinct scores, 10 parents of 7 points: %v, want [2 0 5 1 3 4 6]", p)
	}
	// A plateau of zeros: the first 100 points.
	o.st.Y = make([]float64, 300)
	if p, _ := o.parentSet(100); len(p) != 100 || p[0] != 0 || p[1] != 1 || p[99] != 99 {
		t.Errorf("300 zeros, 100 parents: %v", p)
	}
}

// TiesDrawn draws the point of each distinct score among its equals, at every call, uniformly; scores held by one
// point keep it, and the set stays one point per score in DistinctScores' order.
func TestTiesDrawn(t *testing.T) {
	y := []float64{0.1, 0.9, 0.9, 0.9, 0.5, 0.9, 0.3}
	o := &Optimizer{cfg: Config{Temperature: -1, DistinctScores: true, Ties: TiesDrawn}, st: state{Y: y},
		rng: rand.New(rand.NewPCG(1, 2))}
	const draws = 4000
	count := make(map[int]int)
	for range draws {
		idx := o.distinctScores()
		if len(idx) != 4 || idx[0] != 0 || idx[2] != 4 || idx[3] != 6 || y[idx[1]] != 0.9 {
			t.Fatalf("distinctScores = %v, want [0 (a point of 0.9) 4 6]", idx)
		}
		count[idx[1]]++
		anchors := make([]int, 3)
		o.selectAnchors(anchors)
		if y[anchors[0]] != 0.9 || anchors[1] != 4 || anchors[2] != 6 {
			t.Fatalf("anchors %v, want [(a point of 0.9) 4 6]", anchors)
		}
		if p, _ := o.parentSet(4); y[p[0]] != 0.9 || !slices.Equal(p[1:], []int{4, 6, 0}) {
			t.Fatalf("parents %v, want [(a point of 0.9) 4 6 0]", p)
		}
	}
	// Each of the four points of 0.9 is drawn a quarter of the time: 1,000 of 4,000, sd 27.
	for _, i := range []int{1, 2, 3, 5} {
		if c := count[i]; c < 880 || c > 1120 {
			t.Errorf("point %d drawn %d times of %d, want about %d", i, c, draws, draws/4)
		}
	}
	if _, err := (Config{Budget: 10, Ties: TiesDrawn}).resolved(4); err == nil {
		t.Error("TiesDrawn without DistinctScores: no error")
	}
}

// oneFeature is a Featurizer of width 1.
type oneFeature struct{}

func (oneFeature) Width() int                                        { return 1 }
func (oneFeature) Features(dst []float64, _ []string, _ []int) error { return nil }

// sampleless is a Surrogate that must not be asked.
type sampleless struct{ Surrogate }

func (sampleless) Sample(context.Context, []float64, []float64, int, *rand.Rand) error {
	return errors.New("sampled")
}

// While every score is equal the picks are a uniform draw from the pool, without the surrogate; one score apart,
// the surrogate picks.
func TestThompsonPicksFlat(t *testing.T) {
	const m, k, draws = 20, 5, 2000
	o := &Optimizer{st: state{Y: make([]float64, 50)}, surr: sampleless{}, rng: rand.New(rand.NewPCG(1, 2)),
		prob: Problem{Features: oneFeature{}}}
	keys := make([]string, m)
	count := make([]int, m)
	for range draws {
		pick, err := o.thompsonPicks(context.Background(), k, nil, keys, &batch{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, i := range pick {
			if seen[i] {
				t.Fatalf("picks %v repeat a candidate", pick)
			}
			seen[i] = true
			count[i]++
		}
	}
	// Each candidate is picked with probability k/m: a count within 5 standard deviations of its mean.
	mean := float64(draws * k / m)
	sd := math.Sqrt(draws * k / m * (1 - float64(k)/m))
	for i, c := range count {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("candidate %d picked %d times in %d draws, want about %.0f", i, c, draws, mean)
		}
	}
	o.st.Y[7] = 1e-22
	if _, err := o.thompsonPicks(context.Background(), k, nil, keys, &batch{}); err == nil {
		t.Error("one score apart: the surrogate was not asked")
	}
}

// fixedMean is a Surrogate with a posterior mean of 10·i at candidate i (its first feature).
type fixedMean struct{ Surrogate }

func (fixedMean) Predict(mean, z []float64) {
	for i := range mean {
		mean[i] = 10 * z[i]
	}
}

// Spread scales each sample's deviation from the posterior mean, leaves the samples as drawn at 0 and 1, and asks
// for a surrogate with a mean otherwise.
func TestSpread(t *testing.T) {
	x := []float64{0, 1, 2}
	drawn := []float64{1, 12, 17, -4, 10, 26} // two samples of three candidates; means 0, 10, 20
	for _, c := range []struct {
		spread float64
		want   []float64
	}{
		{0, drawn},
		{1, drawn},
		{0.5, []float64{0.5, 11, 18.5, -2, 10, 23}},
		{2, []float64{2, 14, 14, -8, 10, 32}},
	} {
		o := &Optimizer{surr: fixedMean{}}
		o.cfg.Spread = c.spread
		got := slices.Clone(drawn)
		if err := o.spread(got, x, 3); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Spread %v: %v, %v; want %v", c.spread, got, err, c.want)
		}
	}
	o := &Optimizer{surr: sampleless{}}
	o.cfg.Spread = 0.5
	if err := o.spread(slices.Clone(drawn), x, 3); err == nil {
		t.Error("Spread 0.5 without a posterior mean: no error")
	}
}
