package kernels

import (
	"math"
	"testing"
)

// The known-answer vectors of Random123's kat_vectors for philox4x32_10.
func TestPhilox4x32KnownAnswers(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  PhiloxKey
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, PhiloxKey{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, PhiloxKey{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, PhiloxKey{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%#x, %#x) = %#x, want %#x", c.ctr, c.key, got, c.want)
		}
	}
}

// Box-Muller's normals have mean 0 and variance 1, and Uniform24 stays in
// [0, 1), over a million draws.
func TestBoxMullerMoments(t *testing.T) {
	const n = 1 << 19
	var s, s2 float64
	key := KeyOf(0x1234_5678_9abc_def0)
	for i := range uint32(n) {
		x := Philox4x32([4]uint32{i, 0, 0, 0}, key)
		a, b := BoxMuller(x[0], x[1])
		if math.IsInf(a, 0) || math.IsNaN(a) || math.IsNaN(b) {
			t.Fatalf("draw %d: %g, %g", i, a, b)
		}
		s += a + b
		s2 += a*a + b*b
		if u := Uniform24(x[2]); u < 0 || u >= 1 {
			t.Fatalf("Uniform24(%#x) = %g", x[2], u)
		}
	}
	mean, v := s/(2*n), s2/(2*n)
	if math.Abs(mean) > 0.005 || math.Abs(v-1) > 0.01 {
		t.Errorf("mean %g, variance %g of %d normals", mean, v, 2*n)
	}
	if Uniform24(0xffffffff) >= 1 || Uniform24(0) != 0 {
		t.Error("Uniform24 leaves [0, 1)")
	}
	if a, _ := BoxMuller(0xffffffff, 0); a != 0 { // u1 = 1: r = 0
		t.Errorf("BoxMuller(max, 0) = %g, want 0", a)
	}
}
