// Package pcg advances math/rand/v2's PCG generator by any number of steps in O(log n) time, so that a stream's
// draws can be made out of order and the stream still be left where drawing them in order leaves it.
//
// rand.PCG is a 128-bit linear congruential generator, state ← a·state + c (mod 2¹²⁸), with an output
// permutation; every Uint64 (and so every rand.Rand.Float64) takes one step. n steps are one step with the
// multiplier aⁿ and the increment c·(aⁿ⁻¹ + … + a + 1), computed by squaring (F. B. Brown, "Random number
// generation with arbitrary strides", Trans. Am. Nucl. Soc. 71, 1994). The state is read and written through
// PCG's MarshalBinary and UnmarshalBinary; the constants are Go's (math/rand/v2/pcg.go), and the tests check the
// result against stepping.
package pcg

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Go's PCG multiplier and increment (math/rand/v2, PCG.next).
var (
	mul = u128{hi: 2549297995355413924, lo: 4865540595714422341}
	inc = u128{hi: 6364136223846793005, lo: 1442695040888963407}
)

type u128 struct{ hi, lo uint64 }

func (x u128) mul(y u128) u128 {
	hi, lo := bits.Mul64(x.lo, y.lo)
	hi += x.hi*y.lo + x.lo*y.hi
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

// Advance moves p n steps forward: afterwards it draws what it would have drawn after n calls of Uint64.
func Advance(p *rand.PCG, n uint64) {
	b, _ := p.MarshalBinary()
	if len(b) != 20 || string(b[:4]) != "pcg:" {
		panic(fmt.Sprintf("pcg: unexpected PCG encoding %q", b))
	}
	s := u128{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])}
	am, ac := u128{0, 1}, u128{} // the composite step so far: state ← am·state + ac
	m, c := mul, inc             // the step of 2^k single steps
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			am, ac = am.mul(m), ac.mul(m).add(c)
		}
		c = m.add(u128{0, 1}).mul(c)
		m = m.mul(m)
	}
	s = am.mul(s).add(ac)
	binary.BigEndian.PutUint64(b[4:], s.hi)
	binary.BigEndian.PutUint64(b[12:], s.lo)
	if err := p.UnmarshalBinary(b); err != nil {
		panic(err)
	}
}
