// Package sobol generates scrambled Sobol low-discrepancy points in [0, 1)^D for any D ≥ 1.
//
// Direction numbers. The reference uses torch's SobolEngine, which carries the Joe–Kuo (2008)
// "new-joe-kuo-6.21201" table. That table is not vendored here. Instead, dimension j ≥ 1 uses the j-th primitive
// polynomial over GF(2) in order of degree and then of coefficient value (enumerated and tested for primitivity
// at construction), and its initial direction numbers m₁..m_s are drawn once, as odd integers mₖ < 2ᵏ, from a
// PCG stream with a fixed seed (the construction of Bratley & Fox 1988 with random initial values, which keeps
// every one-dimensional projection a (0,1)-sequence in base 2). Dimension 0 is van der Corput. The numbers are
// therefore the same in every run and every process, but they are not Joe–Kuo's, so low-dimensional projections
// may be somewhat less uniform than torch's.
//
// Scrambling follows torch's SobolEngine(scramble=True): a random linear matrix scramble (a random lower
// triangular binary matrix with unit diagonal per dimension, applied to the direction numbers) plus a random
// digital shift, both drawn from the caller's rand.Source. Points have 32 bits of resolution, so at most 2³²
// points can be drawn.
package sobol

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

const nbits = 32

// Sobol is a (scrambled) Sobol sequence in D dimensions. It is not safe for concurrent use.
type Sobol struct {
	d     int
	v     []uint32 // 32×D direction numbers, row k = direction k of every dimension
	shift []uint32 // D, the first point: the digital shift (zero unscrambled)
	state []uint32 // D, current point (Gray-code order)
	n     uint64   // index of the next point
}

// Directions holds the unscrambled direction numbers of a D-dimensional Sobol sequence. Computing them costs
// O(D) primitivity tests (about 0.2 s at D = 4000); a Directions is immutable and may be shared and reused.
type Directions struct {
	d int
	v []uint32 // D×32
}

// NewDirections returns the direction numbers for D dimensions.
func NewDirections(d int) *Directions {
	if d <= 0 {
		panic(fmt.Sprintf("sobol: bad dimension %d", d))
	}
	return &Directions{d: d, v: directions(d)}
}

// Dim returns D.
func (dir *Directions) Dim() int { return dir.d }

// New returns a D-dimensional Sobol sequence. If src is nil the sequence is unscrambled (its first point is the
// origin); otherwise it is scrambled with a linear matrix scramble and a digital shift drawn from src.
func New(d int, src rand.Source) *Sobol { return NewFrom(NewDirections(d), src) }

// NewFrom is New with precomputed direction numbers.
func NewFrom(dir *Directions, src rand.Source) *Sobol {
	d := dir.d
	s := &Sobol{d: d, v: append([]uint32(nil), dir.v...), state: make([]uint32, d)}
	if src != nil {
		rng := rand.New(src)
		var rows [nbits]uint32
		for j := range d {
			// rows[i] masks the input bits (MSB = bit 31) that feed output bit i: unit diagonal, random below.
			for i := range nbits {
				rows[i] = 1 << (31 - i)
				if i > 0 {
					rows[i] |= rng.Uint32() & ^(uint32(1)<<(32-i) - 1)
				}
			}
			vj := s.v[j*nbits : (j+1)*nbits]
			for k, x := range vj {
				var y uint32
				for i := range nbits {
					y |= uint32(bits.OnesCount32(rows[i]&x)&1) << (31 - i)
				}
				vj[k] = y
			}
			s.state[j] = rng.Uint32()
		}
	}
	// Store bit-major (row k holds direction k of every dimension) so that Next reads one contiguous row.
	vt := make([]uint32, d*nbits)
	for j := range d {
		for k := range nbits {
			vt[k*d+j] = s.v[j*nbits+k]
		}
	}
	s.v = vt
	s.shift = append([]uint32(nil), s.state...)
	return s
}

// Seek makes point n (counting from 0) the next point Next writes, as if n points had been drawn: point n is
// the shift XOR the direction numbers of the bits of n's Gray code, n ^ (n >> 1).
func (s *Sobol) Seek(n uint64) {
	if n >= 1<<nbits {
		panic("sobol: Seek past 2^32 points")
	}
	copy(s.state, s.shift)
	s.n = n
	if n == 0 {
		return
	}
	g := (n - 1) ^ ((n - 1) >> 1) // Next flips from the state of point n−1
	for k := 0; g != 0; k, g = k+1, g>>1 {
		if g&1 != 0 {
			for j, v := range s.v[k*s.d : (k+1)*s.d] {
				s.state[j] ^= v
			}
		}
	}
}

// Dim returns D.
func (s *Sobol) Dim() int { return s.d }

// Next writes the next point into dst (length D).
func (s *Sobol) Next(dst []float64) {
	if len(dst) != s.d {
		panic("sobol: len(dst) != D")
	}
	const scale = 1.0 / (1 << 32)
	if s.n > 0 {
		c := bits.TrailingZeros64(s.n) // Gray code: flip direction number c
		if c >= nbits {
			panic("sobol: more than 2^32 points")
		}
		for j, v := range s.v[c*s.d : (c+1)*s.d] {
			s.state[j] ^= v
		}
	}
	s.n++
	for j, x := range s.state {
		dst[j] = float64(x) * scale
	}
}

// Draw writes the next n points into dst (n×D, row-major).
func (s *Sobol) Draw(dst []float64, n int) {
	if len(dst) != n*s.d {
		panic("sobol: len(dst) != n·D")
	}
	for i := range n {
		s.Next(dst[i*s.d : (i+1)*s.d])
	}
}

// directions returns the unscrambled D×32 direction numbers vₖ = mₖ·2^(32−k).
func directions(d int) []uint32 {
	v := make([]uint32, d*nbits)
	for k := range nbits {
		v[k] = 1 << (31 - k)
	}
	if d == 1 {
		return v
	}
	polys := primitivePolys(d - 1)
	init := rand.New(rand.NewPCG(0x5eed50b01, 0x21201)) // fixed: the same direction numbers everywhere
	m := make([]uint32, nbits)
	for j := 1; j < d; j++ {
		p := polys[j-1]
		deg := bits.Len64(p) - 1
		for k := range deg { // odd mₖ < 2^(k+1), k is 0-based
			m[k] = uint32(init.Uint64N(1<<k))<<1 | 1
		}
		// mₖ = 2a₁mₖ₋₁ ⊕ 2²a₂mₖ₋₂ ⊕ … ⊕ 2^(s−1)a_(s−1)mₖ₋ₛ₊₁ ⊕ 2ˢmₖ₋ₛ ⊕ mₖ₋ₛ, p = xˢ + a₁x^(s−1) + … + 1.
		for k := deg; k < nbits; k++ {
			x := m[k-deg] ^ (m[k-deg] << deg)
			for i := 1; i < deg; i++ {
				if p>>(deg-i)&1 == 1 {
					x ^= m[k-i] << i
				}
			}
			m[k] = x
		}
		for k := range nbits {
			v[j*nbits+k] = m[k] << (31 - k)
		}
	}
	return v
}

// primitivePolys returns the first n primitive polynomials over GF(2) of degree ≥ 1 as bit masks (bit i is the
// coefficient of xⁱ), ordered by degree and then by value. x + 1 comes first.
func primitivePolys(n int) []uint64 {
	out := make([]uint64, 0, n)
	for deg := 1; len(out) < n; deg++ {
		if deg > 31 {
			panic("sobol: dimension too large")
		}
		order := uint64(1)<<deg - 1
		primes := primeFactors(order)
		for p := uint64(1)<<deg | 1; p < uint64(1)<<(deg+1) && len(out) < n; p += 2 {
			if isPrimitive(p, deg, order, primes) {
				out = append(out, p)
			}
		}
	}
	return out
}

// isPrimitive reports whether x has multiplicative order 2^deg − 1 modulo p.
func isPrimitive(p uint64, deg int, order uint64, primes []uint64) bool {
	if deg == 1 {
		return true // x + 1
	}
	if polyPowMod(2, order, p, deg) != 1 {
		return false
	}
	for _, q := range primes {
		if polyPowMod(2, order/q, p, deg) == 1 {
			return false
		}
	}
	return true
}

func polyMulMod(a, b, p uint64, deg int) uint64 {
	var r uint64
	for b != 0 {
		if b&1 == 1 {
			r ^= a
		}
		b >>= 1
		a <<= 1
		if a>>deg&1 == 1 {
			a ^= p
		}
	}
	return r
}

func polyPowMod(a, e, p uint64, deg int) uint64 {
	r := uint64(1)
	for e > 0 {
		if e&1 == 1 {
			r = polyMulMod(r, a, p, deg)
		}
		a = polyMulMod(a, a, p, deg)
		e >>= 1
	}
	return r
}

func primeFactors(n uint64) []uint64 {
	var f []uint64
	for q := uint64(2); q*q <= n; q++ {
		if n%q == 0 {
			f = append(f, q)
			for n%q == 0 {
				n /= q
			}
		}
	}
	if n > 1 {
		f = append(f, n)
	}
	return f
}
