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

// The medium preset with the 267-token guacamol+zinc vocabulary, counted by
// hand: per block the initial-state MLP (576·320+320, 320·640+640), the LSTM
// (616·1280, 320·1280, two biases of 1280) and 6 couplings of
// (340·80+80, 80·80+80, 80·100+100); plus the embedding 267×40.
func TestMediumParamCount(t *testing.T) {
	p, err := NewParams(Medium(267, 109), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	block := (576*320 + 320 + 320*640 + 640) + (616*1280 + 320*1280 + 2*1280) + 6*(340*80+80+80*80+80+80*100+100)
	if want := 267*40 + 3*block; p.NumParams() != want {
		t.Fatalf("medium preset has %d parameters, want %d", p.NumParams(), want)
	}
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
