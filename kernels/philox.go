package kernels

import "math"

// PhiloxKey is the key of a Philox4x32-10 stream: one training step's
// draws (noise, negative tokens, dropout masks) are a function of the key
// and of each draw's counter alone, so any device, in any order and on any
// number of threads, draws the same values.
type PhiloxKey [2]uint32

// KeyOf splits a 64-bit seed into a key, low word first.
func KeyOf(seed uint64) PhiloxKey { return PhiloxKey{uint32(seed), uint32(seed >> 32)} }

// Philox4x32's round multipliers and key increments (Salmon, Moraes, Dror
// and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the
// constants of Random123 and cuRAND).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox4x32 returns the Philox4x32-10 block of counter ctr under key: ten
// rounds, the key bumped between rounds. engine/cuda's train.cu holds its
// CUDA twin (nfbo_philox), which gives the same bits. The rounds are
// written out: the loop with an array for the counter ran four times
// slower, and a CPU training step draws its dropout masks, noise and
// negative tokens through it.
func Philox4x32(ctr [4]uint32, key PhiloxKey) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	k0, k1 = k0+philoxW0, k1+philoxW1
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	return [4]uint32{c0, c1, c2, c3}
}

// philoxRound is one round of Philox4x32 on the counter c0..c3 with the
// round's key k0, k1.
func philoxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	p0 := uint64(philoxM0) * uint64(c0)
	p1 := uint64(philoxM1) * uint64(c2)
	return uint32(p1>>32) ^ c1 ^ k0, uint32(p1), uint32(p0>>32) ^ c3 ^ k1, uint32(p0)
}

// Uniform24 maps x to [0, 1) with 24 random bits: exact in float32, so
// float32 and float64 code compare the same value.
func Uniform24(x uint32) float64 { return float64(x>>8) * (1.0 / (1 << 24)) }

// BoxMuller returns two standard normal values from two random words: the
// first in (0, 1] (never 0, whose log is infinite), the second in [0, 1).
// The CUDA twin computes the same formula in double; log, cos and sin may
// differ from Go's in the last bit, which the float32 rounding of the draws
// hides all but rarely.
func BoxMuller(x0, x1 uint32) (z0, z1 float64) {
	u1 := (float64(x0) + 1) * (1.0 / (1 << 32))
	u2 := float64(x1) * (1.0 / (1 << 32))
	r := math.Sqrt(-2 * math.Log(u1))
	s, c := math.Sincos(2 * math.Pi * u2)
	return r * c, r * s
}
