package bo

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestLibraryNearest: the library's nearest rows by Tanimoto are those a dense search finds, most similar first.
func TestLibraryNearest(t *testing.T) {
	const l, w, k = 300, 24, 8
	rng := rand.New(rand.NewPCG(1, 2))
	dense := make([]float64, l*w)
	for i := range dense {
		if rng.IntN(4) == 0 {
			dense[i] = float64(rng.IntN(4))
		}
	}
	lib := &libraryIndex{start: []int{0}}
	for i := range l {
		var n2 float64
		for j, v := range dense[i*w : (i+1)*w] {
			if v != 0 {
				lib.cols, lib.vals = append(lib.cols, int32(j)), append(lib.vals, v)
				n2 += v * v
			}
		}
		lib.norm2, lib.start = append(lib.norm2, n2), append(lib.start, len(lib.cols))
	}
	for trial := range 20 {
		p := make([]float64, w)
		for j := range p {
			p[j] = float64(rng.IntN(3))
		}
		sims := make([]float64, l)
		for i := range l {
			var dot, x2, p2 float64
			for j := range w {
				dot += p[j] * dense[i*w+j]
				x2 += dense[i*w+j] * dense[i*w+j]
				p2 += p[j] * p[j]
			}
			if den := p2 + x2 - dot; den > 0 {
				sims[i] = dot / den
			}
		}
		want := make([]int, l)
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(a, b int) bool { return sims[want[a]] > sims[want[b]] })
		if got := lib.nearest(p, k); !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d: nearest %v, want %v", trial, got, want[:k])
		}
	}
}

// TestBreederPartners: with Partners and PartnerShare p, about a share p of the crossovers take their second
// parent from the first parent's partners; at 0 none do.
func TestBreederPartners(t *testing.T) {
	const stop, tt, n = 1, 8, 4000
	parents := []int{
		2, 3, 4, 5, 1, 1, 1, 1,
		6, 6, 6, 6, 6, 6, 1, 1,
	}
	for _, share := range []float64{0, 0.25} {
		cross := &keyCrosser{}
		b := &Breeder{Alphabet: []int{9}, Stop: stop, CrossoverRate: 1, Crosser: cross, Keys: []string{"a", "bb"},
			Partners: [][]string{{"lib-a"}, {"lib-b1", "lib-b2"}}, PartnerShare: share}
		rng := rand.New(rand.NewPCG(1, 2))
		child := make([]int, tt)
		for range n {
			b.Child(child, parents, rng)
		}
		lib := 0
		for pair, c := range cross.pairs {
			switch pair {
			case "a+lib-a", "bb+lib-b1", "bb+lib-b2":
				lib += c
			case "a+a", "a+bb", "bb+a", "bb+bb":
			default:
				t.Errorf("share %v: crossover %s", share, pair)
			}
		}
		if got := float64(lib) / n; (share == 0 && lib != 0) || got < share-0.03 || got > share+0.03 {
			t.Errorf("share %v: %d of %d crossovers with a library partner", share, lib, n)
		}
	}
}

// keyCrosser records the pairs of keys it is asked to cross and crosses none.
type keyCrosser struct{ pairs map[string]int }

func (c *keyCrosser) Cross(dst []int, a, b string, _ bool, _ *rand.Rand) bool {
	if c.pairs == nil {
		c.pairs = map[string]int{}
	}
	c.pairs[a+"+"+b]++
	return false
}
