package bo

import (
	"context"
	"fmt"
	"slices"
)

// libraryNeighbours is how many of the library's molecules nearest a parent its library crossovers draw from.
const libraryNeighbours = 8

// libraryIndex holds Problem.Library's feature vectors (the surrogate's: Problem.Features', or token counts),
// sparse, for the nearest-neighbour search of the GA children's library crossovers
// (ScreenedSettings.LibraryCrossovers). It is built once, from the library alone, so it is not checkpointed.
type libraryIndex struct {
	keys  []string
	near  map[string][]string // a parent's nearest, by its key: the best molecules change a few an iteration
	start []int               // row i's nonzeros are cols[start[i]:start[i+1]], vals likewise
	cols  []int32             // column of each nonzero
	vals  []float64           // value of each nonzero
	norm2 []float64           // each row's squared norm
}

// newLibraryIndex computes the library's features a thousand molecules at a time and keeps their nonzeros.
func (o *Optimizer) newLibraryIndex(ctx context.Context) (*libraryIndex, error) {
	lib, t := o.prob.Library, o.t
	l := &libraryIndex{keys: lib.Keys, near: map[string][]string{}, start: make([]int, 1, len(lib.Keys)+1)}
	const chunk = 1000
	for lo := 0; lo < len(lib.Keys); lo += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+chunk, len(lib.Keys))
		x, err := o.features(lib.Tokens[lo*t:hi*t], lib.Keys[lo:hi])
		if err != nil {
			return nil, fmt.Errorf("bo: library: %w", err)
		}
		w := len(x) / (hi - lo)
		for i := range hi - lo {
			var n2 float64
			for j, v := range x[i*w : (i+1)*w] {
				if v != 0 {
					l.cols = append(l.cols, int32(j))
					l.vals = append(l.vals, v)
					n2 += v * v
				}
			}
			l.norm2 = append(l.norm2, n2)
			l.start = append(l.start, len(l.cols))
		}
	}
	return l, nil
}

// nearest returns the indices of the k library molecules most similar to the dense vector p by the Tanimoto
// similarity of their vectors, ⟨p,x⟩ / (|p|² + |x|² − ⟨p,x⟩), most similar first (ties by index).
func (l *libraryIndex) nearest(p []float64, k int) []int {
	var p2 float64
	for _, v := range p {
		p2 += v * v
	}
	type hit struct {
		i   int
		sim float64
	}
	best := make([]hit, 0, k+1)
	for i := range l.norm2 {
		var dot float64
		for n := l.start[i]; n < l.start[i+1]; n++ {
			dot += p[l.cols[n]] * l.vals[n]
		}
		den := p2 + l.norm2[i] - dot
		sim := 0.0
		if den > 0 {
			sim = dot / den
		}
		if len(best) == k && sim <= best[k-1].sim {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, sim, func(h hit, s float64) int {
			if h.sim >= s {
				return -1
			}
			return 1
		})
		best = slices.Insert(best, at, hit{i, sim})
		if len(best) > k {
			best = best[:k]
		}
	}
	idx := make([]int, len(best))
	for j, h := range best {
		idx[j] = h.i
	}
	return idx
}

// partners returns, for each parent (keys, and their token rows tokens, P×T), the keys of its
// libraryNeighbours nearest library molecules, searching for those of parents it has not seen before.
func (o *Optimizer) partners(l *libraryIndex, keys []string, tokens []int) ([][]string, error) {
	t := o.t
	var newKeys []string
	var newTok []int
	for i, k := range keys {
		if _, ok := l.near[k]; !ok {
			newKeys = append(newKeys, k)
			newTok = append(newTok, tokens[i*t:(i+1)*t]...)
		}
	}
	if len(newKeys) > 0 {
		x, err := o.features(newTok, newKeys)
		if err != nil {
			return nil, err
		}
		w := len(x) / len(newKeys)
		for i, k := range newKeys {
			var near []string
			for _, j := range l.nearest(x[i*w:(i+1)*w], libraryNeighbours) {
				near = append(near, l.keys[j])
			}
			l.near[k] = near
		}
	}
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = l.near[k]
	}
	return out, nil
}
