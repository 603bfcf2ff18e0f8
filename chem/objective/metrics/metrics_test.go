package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestTopK(t *testing.T) {
	s := []float64{0.5, 0.9, 0.1}
	cases := []struct {
		k    int
		want float64
	}{
		{1, 0.9},
		{2, (0.9 + 0.5) / 2},
		{3, ((0.9 + 0.5) + 0.1) / 3},
		{5, ((0.9 + 0.5) + 0.1) / 5}, // missing scores count as 0
	}
	for _, c := range cases {
		if got := TopK(s, c.k); got != c.want {
			t.Errorf("TopK(%v, %d) = %.17g, want %.17g", s, c.k, got, c.want)
		}
	}
	if got := TopK(nil, 10); got != 0 {
		t.Errorf("TopK(nil, 10) = %v", got)
	}
	if s[0] != 0.5 || s[1] != 0.9 {
		t.Errorf("TopK modified its input: %v", s)
	}
}

// TestAUCTopKWorked is a hand-computed case: k=1, freq=2, budget=10, a run
// that stopped after 5 calls.
//
//	idx 2: top1 0.4, area 2*(0.4+0)/2   = 0.4
//	idx 4: top1 0.8, area 2*(0.8+0.4)/2 = 1.2
//	end 5: top1 0.8, area 1*(0.8+0.8)/2 = 0.8
//	fill : 5 calls at 0.8               = 4.0
//	AUC  = 6.4 / 10 = 0.64
func TestAUCTopKWorked(t *testing.T) {
	s := []float64{0.2, 0.4, 0.1, 0.8, 0.5}
	got := AUCTopK(s, 1, 2, 10, true)
	if math.Abs(got-0.64) > 1e-15 {
		t.Errorf("AUCTopK = %.17g, want 0.64", got)
	}
	// Not finished: no fill, still divided by the budget.
	got = AUCTopK(s, 1, 2, 10, false)
	if math.Abs(got-0.24) > 1e-15 {
		t.Errorf("AUCTopK unfinished = %.17g, want 0.24", got)
	}
	// A constant run of 1s over the whole budget: the first segment rises
	// from 0, so the area is 1 - freq/2/budget.
	ones := make([]float64, 1000)
	for i := range ones {
		ones[i] = 1
	}
	if got := AUCTopK(ones, 10, 100, 1000, true); math.Abs(got-0.95) > 1e-15 {
		t.Errorf("AUCTopK(ones) = %.17g, want 0.95", got)
	}
	if got := AUCTopK(nil, 10, 100, 1000, true); got != 0 {
		t.Errorf("AUCTopK(nil) = %v", got)
	}
}

func TestGuacaMolScore(t *testing.T) {
	got := GuacaMolScore([]float64{0.5, 1}, []int{1, 10, 100})
	// compute_global_score in Python, run for these scores.
	want := 0.38833333333333325
	if got != want {
		t.Errorf("GuacaMolScore = %.17g, want %.17g", got, want)
	}
	// Rediscovery: top-1 only.
	if got := GuacaMolScore([]float64{0.3, 0.7}, []int{1}); got != 0.7 {
		t.Errorf("rediscovery score %v", got)
	}
}

// TestPairwiseSumMatchesNumpy compares np.mean with npMean bit for bit on
// random arrays of many lengths (skipped when numpy is not installed; it
// is one of the RDKit worker's dependencies).
func TestPairwiseSumMatchesNumpy(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("numpy not importable by %s: %v", python, err)
		}
		t.Skipf("numpy not importable by %s: %v", python, err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var arrays [][]float64
	var in strings.Builder
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 100, 127, 128, 129, 255, 256, 300, 1000, 4097} {
		a := make([]float64, n)
		for i := range a {
			a[i] = rng.Float64() * math.Pow(10, float64(rng.IntN(7)-3))
		}
		arrays = append(arrays, a)
		for i, v := range a {
			if i > 0 {
				in.WriteByte(' ')
			}
			in.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		in.WriteByte('\n')
	}
	cmd := exec.Command(python, "-c", "import sys, numpy as np\n"+
		"for line in sys.stdin:\n    print(repr(float(np.mean(np.array([float(x) for x in line.split()])))))\n")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	for i, a := range arrays {
		want, _ := strconv.ParseFloat(lines[i], 64)
		if got := npMean(a); got != want {
			t.Errorf("n=%d: npMean %.17g, np.mean %.17g", len(a), got, want)
		}
	}
}

func ExampleTopK() {
	scores := []float64{0.2, 0.9, 0.4}
	fmt.Printf("%.2f\n", TopK(scores, 2))
	fmt.Printf("%.2f\n", TopK(scores, 10))
	// Output:
	// 0.65
	// 0.15
}

// TestFiguresOfHugeScores: scores of 1e308 made Top-10 and AUC Top-10 +Inf (their sums overflowed); every figure
// is a mean of scores, finite and no larger than the largest (issue #56).
func TestFiguresOfHugeScores(t *testing.T) {
	huge := make([]float64, 150)
	for i := range huge {
		huge[i] = 1e308
		if i%3 == 2 {
			huge[i] = -math.MaxFloat64
		}
	}
	for name, v := range map[string]float64{
		"Top-10":       TopK(huge, 10),
		"AUC Top-10":   AUCTopK(huge, 10, DefaultFreq, 200, true),
		"AUC Top-100":  AUCTopK(huge, 100, DefaultFreq, 150, false),
		"GuacaMol":     GuacaMolScore(huge, []int{1, 10, 100}),
		"Top-1 of max": TopK([]float64{math.MaxFloat64, math.MaxFloat64}, 2),
	} {
		if math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > math.MaxFloat64 {
			t.Errorf("%s = %v, want a finite figure", name, v)
		}
	}
	if got := TopK(huge, 10); got != 1e308 {
		t.Errorf("Top-10 of 1e308s = %v, want 1e308", got)
	}
	if got, want := FormatScore(1e308, 4), "1.0000e+308"; got != want {
		t.Errorf("FormatScore(1e308) = %q, want %q", got, want)
	}
	if got, want := FormatScore(0.12345678, 4), "0.1235"; got != want {
		t.Errorf("FormatScore(0.12345678) = %q, want %q", got, want)
	}
}
