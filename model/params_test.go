package model

import (
	"math/rand/v2"
	"testing"
)

// The reference's count for the paper preset with the 185-token GuacaMol
// vocabulary: embedding 185×40 = 7,400 plus 5 blocks of 6,253,500.
func TestPaperParamCount(t *testing.T) {
	p, err := NewParams(Paper(185, 128), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const want = 7400 + 5*6253500
	if got := p.NumParams(); got != want {
		t.Fatalf("paper preset has %d parameters, want %d", got, want)
	}
	t.Logf("paper preset (V=185): %d parameters (%.2fM)", want, float64(want)/1e6)
}

func TestTensorNamesUnique(t *testing.T) {
	p := ZeroParams(Small(10, 20))
	seen := map[string]bool{}
	for _, ts := range p.Tensors() {
		if seen[ts.Name] {
			t.Fatalf("duplicate tensor name %q", ts.Name)
		}
		seen[ts.Name] = true
	}
}

func TestConfigValidate(t *testing.T) {
	bad := Small(10, 300)
	if err := bad.Validate(); err == nil {
		t.Fatal("seq_len 300 > max 288 accepted")
	}
	odd := Small(10, 20)
	odd.F = 41
	if err := odd.Validate(); err == nil {
		t.Fatal("odd F accepted")
	}
}
