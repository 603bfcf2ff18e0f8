package bo

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLookaheadPicks checks that decoding later anchors' chunks ahead changes no pick: a run with a candidate
// target buys the same molecules in the same order, examines the same candidates, and decodes them in fewer
// Flow.Decode calls than one that decodes each anchor's chunks alone.
func TestLookaheadPicks(t *testing.T) {
	run := func(alone bool) ([]string, []float64, *recorder, int) {
		cfg := toyConfig("")
		toScreened(&cfg, 10)
		cfg.CandidateTarget = 12 // chunks of 8: most anchors read two or more
		flow := &toyFlow{t: toyT, v: toyV}
		init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
		prob := Problem{Flow: flow, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}}, Initial: init,
			Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		rec := &recorder{}
		o, err := NewOptimizer(cfg, prob, rand.NewPCG(3, 3), rec)
		if err != nil {
			t.Fatal(err)
		}
		o.prop.(*screenedProposer).alone = alone
		if _, err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, y, smiles := o.Data()
		return smiles, y, rec, flow.decodes
	}
	sa, ya, ra, ca := run(true)
	sb, yb, rb, cb := run(false)
	if !slices.Equal(sa, sb) || !slices.Equal(ya, yb) {
		t.Fatal("looking ahead changed the molecules bought")
	}
	if len(ra.log) != len(rb.log) {
		t.Fatalf("%d iterations alone, %d looking ahead", len(ra.log), len(rb.log))
	}
	spare := 0
	for i := range ra.log {
		a, b := ra.log[i], rb.log[i]
		if a.Screened.Decoded != b.Screened.Decoded || a.Screened.Novel != b.Screened.Novel || a.Duplicate != b.Duplicate {
			t.Errorf("iteration %d: decoded %d (%d new, %d dup) alone, %d (%d new, %d dup) looking ahead",
				a.Iteration, a.Screened.Decoded, a.Screened.Novel, a.Duplicate, b.Screened.Decoded, b.Screened.Novel, b.Duplicate)
		}
		if a.Screened.Spare != 0 {
			t.Errorf("iteration %d: %d spare candidates decoding alone", a.Iteration, a.Screened.Spare)
		}
		spare += b.Screened.Spare
	}
	if cb >= ca {
		t.Errorf("%d Decode calls looking ahead, %d alone: want fewer", cb, ca)
	}
	t.Logf("Decode calls: %d alone, %d looking ahead (%d candidates spare)", ca, cb, spare)
}

// TestLookaheadChunks checks chunkOf's bookkeeping: the rows it returns are the chunk's decoded rows however
// they were batched, the first chunk is decoded for every anchor up to reach in one call, a later one ahead only
// when three quarters of the previous iteration's anchors read it, and nothing is decoded twice.
func TestLookaheadChunks(t *testing.T) {
	const n, c, chunk = 4, 20, 8 // chunks of 8, 8 and 4 rows
	flow := &toyFlow{t: toyT, v: toyV}
	d := toyT * 2
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]float64, n*c*d)
	for i := range lat {
		lat[i] = rng.NormFloat64()
	}
	want := make([]int, n*c*toyT)
	flow.Decode(context.Background(), want, lat)
	flow.decodes = 0
	ctx := context.Background()
	check := func(l *lookahead, a, j, reach, calls, rows int) {
		t.Helper()
		got, _, err := l.chunkOf(ctx, flow, a, j, reach)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := j*chunk, min((j+1)*chunk, c)
		if !slices.Equal(got, want[(a*c+lo)*toyT:(a*c+hi)*toyT]) {
			t.Errorf("anchor %d chunk %d: wrong rows", a, j)
		}
		if flow.decodes != calls || l.rows != rows {
			t.Errorf("anchor %d chunk %d: %d calls, %d rows; want %d, %d", a, j, flow.decodes, l.rows, calls, rows)
		}
	}
	pts := &boxPoints{n: n, c: c, d: d, all: lat}
	l := newLookahead(pts, toyT, c, chunk, nil)
	check(l, 0, 0, 3, 1, 3*8) // anchors 0-2 at once
	check(l, 0, 1, 3, 2, 4*8) // no history: anchor 0 alone
	check(l, 1, 0, 3, 2, 4*8) // decoded ahead
	check(l, 2, 0, 4, 2, 4*8) // decoded ahead
	check(l, 3, 0, 4, 3, 5*8) // anchor 3 had been out of reach
	check(l, 3, 2, 4, 4, 5*8+4)
	if !slices.Equal(l.read, []int{4, 1, 1}) {
		t.Errorf("read %v, want [4 1 1]", l.read)
	}
	flow.decodes = 0
	l = newLookahead(pts, toyT, c, chunk, []int{4, 3, 2}) // chunk 1 read by three quarters, chunk 2 by half
	check(l, 1, 0, 4, 1, 3*8)
	check(l, 1, 1, 4, 2, 6*8) // anchors 1-3
	check(l, 2, 1, 4, 2, 6*8)
	check(l, 1, 2, 4, 3, 6*8+4) // anchor 1 alone
	check(l, 0, 0, 1, 4, 6*8+4+8)
}

// slowFlow is a toyFlow whose fine-tune takes a while, so that a refit beside it overlaps it.
type slowFlow struct{ *toyFlow }

func (f slowFlow) FineTune(ctx context.Context, tokens []int, rng *rand.Rand) error {
	time.Sleep(2 * time.Millisecond)
	return f.toyFlow.FineTune(ctx, tokens, rng)
}

// TestLearnBesideFineTune: the screened surrogate refitted beside the fine-tune (the default) buys the
// molecules it buys refitted after it, with the same flow state; run with -race, it also checks that the two
// share nothing they write.
func TestLearnBesideFineTune(t *testing.T) {
	run := func(after bool) ([]string, []float64, toyFlow) {
		cfg := toyConfig("")
		toScreened(&cfg, 10)
		cfg.TrainEvery = 10
		flow := &toyFlow{t: toyT, v: toyV}
		init := toyInitial(rand.New(rand.NewPCG(99, 99)), 30, toyT, toyV)
		prob := Problem{Flow: slowFlow{flow}, Codec: toyCodec{}, Objective: memObjective{&toyScorer{}}, Initial: init,
			Vocab: toyV, Stop: 0, Alphabet: []int{1, 2, 3, 4, 5, 6, 7}}
		o, err := NewOptimizer(cfg, prob, rand.NewPCG(3, 3), &recorder{})
		if err != nil {
			t.Fatal(err)
		}
		o.prop.(*screenedProposer).after = after
		if _, err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, y, smiles := o.Data()
		return smiles, y, *flow
	}
	sa, ya, fa := run(true)
	sb, yb, fb := run(false)
	if fa.finetunes < 2 {
		t.Fatalf("%d fine-tunes: the test needs several", fa.finetunes)
	}
	if !slices.Equal(sa, sb) || !slices.Equal(ya, yb) || fa.finetunes != fb.finetunes || fa.drift != fb.drift {
		t.Fatalf("refitting beside the fine-tune changed the run: %d molecules and %d fine-tunes after, %d and %d beside",
			len(sa), fa.finetunes, len(sb), fb.finetunes)
	}
}
