package sobol

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPrimitivePolys(t *testing.T) {
	// Known counts of primitive polynomials of degree 1..10 (OEIS A011260).
	counts := []int{1, 1, 2, 2, 6, 6, 18, 16, 48, 60}
	total := 0
	for _, c := range counts {
		total += c
	}
	ps := primitivePolys(total)
	got := make([]int, len(counts))
	for _, p := range ps {
		deg := 0
		for q := p; q > 1; q >>= 1 {
			deg++
		}
		got[deg-1]++
	}
	for i := range counts {
		if got[i] != counts[i] {
			t.Errorf("degree %d: %d primitive polynomials, want %d", i+1, got[i], counts[i])
		}
	}
	if ps[1] != 7 || ps[2] != 11 || ps[3] != 13 {
		t.Errorf("first polynomials %v, want [3 7 11 13 ...]", ps[:4])
	}
}

// TestStratification checks the (0,1)-sequence property: the first 2^k points of every dimension fall one in
// each interval [i/2^k, (i+1)/2^k), scrambled or not, and the (0,k,2)-net property of dimensions 0 and 1.
func TestStratification(t *testing.T) {
	const d, k = 3000, 8
	n := 1 << k
	for _, src := range []rand.Source{nil, rand.NewPCG(1, 2)} {
		s := New(d, src)
		pts := make([]float64, n*d)
		s.Draw(pts, n)
		for j := range d {
			seen := make([]bool, n)
			for i := range n {
				x := pts[i*d+j]
				if x < 0 || x >= 1 {
					t.Fatalf("point %d dim %d = %v outside [0,1)", i, j, x)
				}
				b := int(x * float64(n))
				if seen[b] {
					t.Fatalf("scrambled=%v dim %d: interval %d hit twice in the first %d points", src != nil, j, b, n)
				}
				seen[b] = true
			}
		}
		for a := 0; a <= k; a++ {
			seen := make(map[[2]int]bool)
			for i := range n {
				key := [2]int{int(pts[i*d] * float64(int(1)<<a)), int(pts[i*d+1] * float64(int(1)<<(k-a)))}
				if seen[key] {
					t.Fatalf("scrambled=%v: dims 0,1 box %v of shape 2^-%d×2^-%d hit twice", src != nil, key, a, k-a)
				}
				seen[key] = true
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, b := New(50, rand.NewPCG(3, 4)), New(50, rand.NewPCG(3, 4))
	x, y := make([]float64, 50*10), make([]float64, 50*10)
	a.Draw(x, 10)
	b.Draw(y, 10)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("same seed, different point at %d", i)
		}
	}
}

func BenchmarkDraw(b *testing.B) {
	for _, d := range []int{400, 4000} {
		b.Run("D="+itoa(d), func(b *testing.B) {
			s := New(d, rand.NewPCG(1, 1))
			dst := make([]float64, 1000*d)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.Draw(dst, 1000)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf []byte
	for ; n > 0; n /= 10 {
		buf = append([]byte{byte('0' + n%10)}, buf...)
	}
	return string(buf)
}

func BenchmarkNew(b *testing.B) {
	for _, d := range []int{4000, 11520} {
		b.Run("D="+itoa(d), func(b *testing.B) {
			for range b.N {
				New(d, rand.NewPCG(1, 1))
			}
		})
	}
}

// TestSeek: after Seek(n) the points are points n, n+1, … of the sequence drawn from its start, scrambled or not,
// whatever was drawn before.
func TestSeek(t *testing.T) {
	const d, m = 7, 300
	for _, src := range []rand.Source{nil, rand.NewPCG(3, 4)} {
		var seed []byte
		if src != nil {
			seed, _ = src.(*rand.PCG).MarshalBinary()
		}
		fresh := func() *Sobol {
			if seed == nil {
				return New(d, nil)
			}
			p := &rand.PCG{}
			p.UnmarshalBinary(seed)
			return New(d, p)
		}
		all := make([]float64, m*d)
		fresh().Draw(all, m)
		s := fresh()
		got := make([]float64, d)
		for _, n := range []int{0, 1, 2, 3, 5, 64, 127, 128, 255, 17, 0, 299} {
			s.Seek(uint64(n))
			for i := n; i < min(n+3, m); i++ {
				s.Next(got)
				if !slices.Equal(got, all[i*d:(i+1)*d]) {
					t.Fatalf("scrambled %v: point %d after Seek(%d): %v, want %v", src != nil, i, n, got, all[i*d:(i+1)*d])
				}
			}
		}
	}
}
