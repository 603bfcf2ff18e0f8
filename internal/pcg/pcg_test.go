package pcg

import (
	"math/rand/v2"
	"testing"
)

// TestAdvance: advancing n steps draws what n calls of Uint64 leave to draw, for small n, powers of two and
// their neighbours, and n large enough to use every bit of the exponent's loop.
func TestAdvance(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 7, 8, 9, 255, 256, 257, 1000, 65537, 1 << 20} {
		want := rand.NewPCG(11, 12)
		for range n {
			want.Uint64()
		}
		got := rand.NewPCG(11, 12)
		Advance(got, n)
		for i := range 4 {
			if g, w := got.Uint64(), want.Uint64(); g != w {
				t.Fatalf("n = %d: draw %d after Advance %#x, after stepping %#x", n, i, g, w)
			}
		}
	}
	// Steps compose, past 2^64 steps in all too: 2^63 and then 2^63+5 steps are 3, 2, 2^63 and 2^63 steps.
	a, b := rand.NewPCG(1, 2), rand.NewPCG(1, 2)
	Advance(a, 1<<63)
	Advance(a, 1<<63+5)
	Advance(b, 3)
	Advance(b, 2)
	Advance(b, 1<<63)
	Advance(b, 1<<63)
	if a.Uint64() != b.Uint64() {
		t.Error("Advance(2^63) then Advance(2^63+5) differs from Advance(3), Advance(2), Advance(2^63) twice")
	}
}
