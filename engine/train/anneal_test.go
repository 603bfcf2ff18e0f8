package train

import (
	"context"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAnneal(t *testing.T) {
	a := Anneal{From: 100, To: 300, Peak: 1e-3, Min: 1e-5}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step int64
		want float64
	}{{0, 1e-3}, {100, 1e-3}, {200, (1e-3 + 1e-5) / 2}, {150, 1e-5 + (1e-3-1e-5)*(1+math.Sqrt2/2)/2}, {300, 1e-5}, {1000, 1e-5}} {
		if got := a.LR(tc.step); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("LR(%d) = %g, want %g", tc.step, got, tc.want)
		}
	}
	for s := a.From; s < a.To; s++ {
		if a.LR(s+1) >= a.LR(s) {
			t.Fatalf("LR(%d) = %g is not below LR(%d) = %g", s+1, a.LR(s+1), s, a.LR(s))
		}
	}
	for _, bad := range []Anneal{{From: 5, To: 5, Peak: 1, Min: 0}, {From: -1, To: 5, Peak: 1}, {To: 5, Peak: 1, Min: 2},
		{To: 5, Peak: 1, Min: -1}, {To: 5, Peak: math.Inf(1)}, {To: 5, Peak: 1, Min: math.NaN()}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// Pretrain takes every step at the rate PretrainConfig.LearnRate gives for it, reports that rate, and leaves
// the last step's rate in Adam (and so in a checkpoint).
func TestPretrainLearnRate(t *testing.T) {
	cfg := smallTrainConfig()
	train := randomSeqs(cfg, 7, rand.New(rand.NewPCG(4, 4)))
	tr, err := NewTrainer(modeltest.FarParams(t, cfg, 21), rand.NewPCG(1, 2), Options{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	a := Anneal{From: 1, To: 4, Peak: 1e-3, Min: 1e-4}
	var got []float64
	err = tr.Pretrain(context.Background(), train, PretrainConfig{Steps: 5, LearnRate: a.LR,
		Recorder: RecorderFunc(func(pr Progress) error {
			if tr.Adam().LR != pr.LR {
				t.Errorf("step %d: Adam's rate %g, reported %g", pr.Step, tr.Adam().LR, pr.LR)
			}
			got = append(got, pr.LR)
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{a.LR(0), a.LR(1), a.LR(2), a.LR(3), a.LR(4)}
	if len(got) != len(want) {
		t.Fatalf("rates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d at rate %g, want %g", i+1, got[i], want[i])
		}
	}
	if want[4] != 1e-4 || want[1] != 1e-3 || !(want[2] < want[1] && want[3] < want[2]) {
		t.Errorf("schedule %v does not fall from 1e-3 to 1e-4", want)
	}
}
