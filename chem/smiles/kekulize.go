package smiles

import (
	"errors"
	"fmt"
)

// ErrKekulize is wrapped by every kekulisation failure.
var ErrKekulize = errors.New("kekulization failed")

type kekScratch struct {
	labelToNode []int
	nodeToLabel []int
	graph       [][]int
	matching    []int
	free        []int
	heap        []degNode
	set         pySet
	parents     [][2]int
	queue       []int
	path        []int
	arena       []int // spare storage for new adjacency lists
}

// Kekulize replaces the aromatic atoms and bonds of g by a Kekulé structure,
// as selfies 2.0.0's MolecularGraph.kekulize does: the delocalisation
// subgraph is pruned of atoms that cannot take a double bond, a perfect
// matching of the rest becomes the double bonds, and every other aromatic
// bond becomes single. Failures wrap ErrKekulize.
func (g *Graph) Kekulize() error {
	if g.IsKekulized() {
		return nil
	}
	k := &g.kek
	n := len(g.Atoms)
	k.labelToNode = k.labelToNode[:0]
	k.nodeToLabel = resizeInts(k.nodeToLabel, n)
	for i := 0; i < n; i++ {
		k.nodeToLabel[i] = -1
		if !g.inDS[i] {
			continue
		}
		prune, err := g.pruneFromDS(i)
		if err != nil {
			return err
		}
		if !prune {
			k.nodeToLabel[i] = len(k.labelToNode)
			k.labelToNode = append(k.labelToNode, i)
		}
	}

	m := len(k.labelToNode)
	if cap(k.graph) < m {
		k.graph = append(k.graph[:cap(k.graph)], make([][]int, m-cap(k.graph))...)
	}
	k.graph = k.graph[:m]
	for label, node := range k.labelToNode {
		adj := k.graph[label][:0]
		if adj == nil {
			// Share one chunk among new lists; an aromatic atom has at most
			// three aromatic neighbours in practice.
			if len(k.arena) < 3 {
				k.arena = make([]int, 3*max(m, 16))
			}
			adj = k.arena[:0:3]
			k.arena = k.arena[3:]
		}
		for _, v := range g.ds[node] {
			if l := k.nodeToLabel[v]; l >= 0 {
				adj = append(adj, l)
			}
		}
		k.graph[label] = adj
	}

	matching, err := k.perfectMatching()
	if err != nil {
		return err
	}

	// De-aromatise, then make the matched bonds double.
	for node := 0; node < n; node++ {
		if !g.inDS[node] {
			continue
		}
		for _, adj := range g.ds[node] {
			g.UpdateBondOrder(node, adj, Single)
		}
		g.Atoms[node].Aromatic = false
	}
	for label, mate := range matching {
		g.UpdateBondOrder(k.labelToNode[label], k.labelToNode[mate], Double)
	}
	for i := 0; i < n; i++ {
		g.inDS[i] = false
		g.ds[i] = g.ds[i][:0]
	}
	g.nDS = 0
	return nil
}

// pruneFromDS reports whether atom i cannot take part in a double bond of
// the Kekulé structure (selfies' _prune_from_ds, without the radical rule
// that selfies 2.2.0 added).
func (g *Graph) pruneFromDS(i int) (bool, error) {
	adj := g.ds[i]
	if len(adj) == 0 {
		return true, nil // aromatic atom without aromatic bonds
	}
	a := &g.Atoms[i]
	vals, nv := aromaticValences(a.Element)
	valences := vals[:nv]
	if nv == 0 {
		// selfies raises a KeyError here.
		return false, fmt.Errorf("%w: element %s cannot be aromatic", ErrKekulize, a.Element)
	}
	// Every aromatic bond counts 1.5; treat it as single.
	used := (g.counts[i] - len(adj)) / 2
	if a.HCount == ImplicitH {
		for _, v := range valences {
			if used == v {
				return true, nil
			}
		}
		return false, nil
	}
	valence := valences[len(valences)-1] - a.Charge
	used += a.HCount
	free := valence - used
	return !(free >= 0 && free%2 != 0), nil
}

func resizeInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// degNode is a heap entry (free degree, node), ordered as Python tuples.
type degNode struct{ deg, node int }

func (a degNode) less(b degNode) bool {
	return a.deg < b.deg || (a.deg == b.deg && a.node < b.node)
}

func (k *kekScratch) heapPush(x degNode) {
	h := append(k.heap, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	k.heap = h
}

func (k *kekScratch) heapPop() degNode {
	h := k.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	k.heap = h
	return top
}

// perfectMatching ports selfies' find_perfect_matching: a greedy maximal
// matching that takes nodes with the fewest free neighbours first, then BFS
// augmenting paths from each unmatched node, in CPython set order.
func (k *kekScratch) perfectMatching() ([]int, error) {
	g := k.graph
	n := len(g)
	match := resizeInts(k.matching, n)
	k.matching = match
	free := resizeInts(k.free, n)
	k.free = free
	k.heap = k.heap[:0]
	for i := range n {
		match[i] = -1
		free[i] = len(g[i])
	}
	// The popped sequence of a binary heap depends only on the values, so
	// any correct heap reproduces heapq here.
	for i := range n {
		k.heapPush(degNode{free[i], i})
	}
	for len(k.heap) > 0 {
		node := k.heapPop().node
		if match[node] >= 0 || free[node] == 0 {
			continue
		}
		mate := -1
		for _, v := range g[node] {
			if match[v] < 0 {
				mate = v
				break
			}
		}
		if mate < 0 {
			// selfies would raise StopIteration; free degrees and matches
			// are kept consistent, so this does not happen.
			return nil, fmt.Errorf("%w: inconsistent free degrees", ErrKekulize)
		}
		match[node], match[mate] = mate, node
		for _, nb := range [2]int{node, mate} {
			for _, adj := range g[nb] {
				free[adj]--
				if match[adj] < 0 && free[adj] > 0 {
					k.heapPush(degNode{free[adj], adj})
				}
			}
		}
	}

	k.set.reset()
	for i := range n {
		if match[i] < 0 {
			k.set.add(i)
		}
	}
	for k.set.used > 0 {
		root := k.set.pop()
		path, err := k.augmentingPath(root)
		if err != nil {
			return nil, err
		}
		if path == nil {
			return nil, ErrKekulize
		}
		for i := 0; i+1 < len(path); i += 2 {
			a, b := path[i], path[i+1]
			match[a], match[b] = b, a
		}
		k.set.discard(path[0])
		k.set.discard(path[len(path)-1])
	}
	return match, nil
}

// augmentingPath runs selfies' modified BFS from the unmatched root. It
// returns nil when there is none.
func (k *kekScratch) augmentingPath(root int) ([]int, error) {
	g, match := k.graph, k.matching
	n := len(g)
	if cap(k.parents) < n {
		k.parents = make([][2]int, n)
	}
	parents := k.parents[:n]
	const unvisited = -2 // parents[v][0]; -1 stands for Python's None
	for i := range parents {
		parents[i] = [2]int{unvisited, unvisited}
	}
	parents[root] = [2]int{-1, -1}
	queue := append(k.queue[:0], root)
	other := -1
	for head := 0; head < len(queue) && other < 0; head++ {
		node := queue[head]
		for _, adj := range g[node] {
			if match[adj] < 0 {
				parents[adj] = [2]int{node, adj}
				other = adj
				break
			}
			mate := match[adj]
			if parents[mate][0] == unvisited {
				parents[mate] = [2]int{node, adj}
				queue = append(queue, mate)
			}
		}
	}
	k.queue = queue[:0]
	if other < 0 {
		return nil, nil
	}
	if other == root {
		// The BFS came back to the root through an odd cycle. selfies then
		// builds an empty path and fails with an IndexError.
		return nil, fmt.Errorf("%w: odd cycle through unmatched atom", ErrKekulize)
	}
	path := k.path[:0]
	for node := other; node != root; node = parents[node][0] {
		path = append(path, parents[node][1], parents[node][0])
	}
	k.path = path
	return path, nil
}

// pySet emulates CPython's set of small non-negative ints (hash(i) == i)
// closely enough to reproduce the order in which set.pop returns them:
// open addressing with 9 linear probes then perturbation, growth when the
// table is 60% full, pop scanning from a moving finger. The matching depends
// on that order.
type pySet struct {
	table  []int // -1 empty, -2 dummy (deleted), else the key
	fill   int   // active + dummy slots
	used   int   // active slots
	finger int
}

const (
	pySetMinSize  = 8
	pyLinearProbe = 9
	pyPerturb     = 5
	pyEmpty       = -1
	pyDummy       = -2
)

func (s *pySet) reset() {
	s.table = resizeInts(s.table, pySetMinSize)
	for i := range s.table {
		s.table[i] = pyEmpty
	}
	s.fill, s.used, s.finger = 0, 0, 0
}

// insertClean places key in a table without dummies (set_insert_clean); it
// is also the probe sequence set_add_entry follows on a table without
// dummies, which is the only case add meets.
func insertClean(table []int, key int) int {
	mask := len(table) - 1
	perturb := uint(key)
	i := key & mask
	for {
		if table[i] == pyEmpty {
			table[i] = key
			return i
		}
		if i+pyLinearProbe <= mask {
			for j := 1; j <= pyLinearProbe; j++ {
				if table[i+j] == pyEmpty {
					table[i+j] = key
					return i + j
				}
			}
		}
		perturb >>= pyPerturb
		i = (i*5 + 1 + int(perturb)) & mask
	}
}

// add inserts a key that is not in the set yet; keys arrive before any
// removal, as in set(generator).
func (s *pySet) add(key int) {
	insertClean(s.table, key)
	s.fill++
	s.used++
	mask := len(s.table) - 1
	if s.fill*5 < mask*3 {
		return
	}
	minused := s.used * 4
	if s.used > 50000 {
		minused = s.used * 2
	}
	size := pySetMinSize
	for size <= minused {
		size <<= 1
	}
	old := s.table
	s.table = make([]int, size)
	for i := range s.table {
		s.table[i] = pyEmpty
	}
	for _, k := range old {
		if k >= 0 {
			insertClean(s.table, k)
		}
	}
	s.fill = s.used
}

func (s *pySet) pop() int {
	mask := len(s.table) - 1
	i := s.finger & mask
	for s.table[i] < 0 {
		i++
		if i > mask {
			i = 0
		}
	}
	key := s.table[i]
	s.table[i] = pyDummy
	s.used--
	s.finger = i + 1
	return key
}

func (s *pySet) discard(key int) {
	mask := len(s.table) - 1
	perturb := uint(key)
	i := key & mask
	for {
		probes := 0
		if i+pyLinearProbe <= mask {
			probes = pyLinearProbe
		}
		for j := 0; j <= probes; j++ {
			switch s.table[i+j] {
			case pyEmpty:
				return
			case key:
				s.table[i+j] = pyDummy
				s.used--
				return
			}
		}
		perturb >>= pyPerturb
		i = (i*5 + 1 + int(perturb)) & mask
	}
}
