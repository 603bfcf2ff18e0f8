package bo

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// lookahead decodes the anchors' latent candidates a chunk at a time for decodeToTarget, and decodes the
// same chunk of the later anchors in the same Flow.Decode call when they are likely to read it: one call of
// 1,000 rows decodes 1.2-1.5x the sequences a second of eight calls of 125 on the CPU (BenchmarkCodec's
// rows-a-call cases), more on a GPU. Which chunks an anchor reads depends only on the molecules it finds new,
// never on what was decoded ahead, so looking ahead changes no pick; a chunk decoded ahead that its anchor
// never reads is spare.
type lookahead struct {
	pts      *boxPoints // N·C×D latent candidates, anchor-major
	lat      []float64  // the rows of a call
	t, d     int
	c, chunk int   // candidates an anchor, rows a chunk
	k        int   // chunks an anchor: ⌈C/chunk⌉
	dec      []int // N·C×T decoded rows, where have says
	have     []bool
	read     []int // read[k]: anchors of this iteration that read chunk k
	prev     []int // read of the previous iteration (nil: none yet)
	rows     int   // rows decoded, read or not
	alone    bool  // never decode ahead
}

// newLookahead returns a lookahead over pts (N·C×D, C = c) in chunks of chunk rows; prev is the previous
// iteration's read counts (lookahead.read), or nil.
func newLookahead(pts *boxPoints, t, c, chunk int, prev []int) *lookahead {
	n, d := pts.n, pts.d
	k := (c + chunk - 1) / chunk
	return &lookahead{pts: pts, t: t, d: d, c: c, chunk: chunk, k: k,
		dec: make([]int, n*c*t), have: make([]bool, n*k), read: make([]int, k), prev: prev}
}

// ahead reports whether chunk j of the anchors after the one asking is decoded with it: the first chunk
// always (every anchor the batch reaches reads it), a later one when at least three quarters of the previous
// iteration's anchors read it (a bigger call saves a sixth to a third of the time a row on the CPU: a chunk
// that a quarter of the anchors never read costs about as much as it saves).
func (l *lookahead) ahead(j int) bool {
	if l.alone {
		return false
	}
	return j == 0 || (len(l.prev) > j && 4*l.prev[j] >= 3*l.prev[0] && l.prev[j] > 0)
}

// chunkOf returns the decoded rows (rows×T) of chunk j of anchor a, decoding it if needed, together with the
// same chunk of anchors a+1 … reach−1 when ahead says so. It returns the time spent decoding.
func (l *lookahead) chunkOf(ctx context.Context, flow Flow, a, j, reach int) ([]int, time.Duration, error) {
	l.read[j]++
	lo, hi := j*l.chunk, min((j+1)*l.chunk, l.c)
	if l.have[a*l.k+j] {
		return l.dec[(a*l.c+lo)*l.t : (a*l.c+hi)*l.t], 0, nil
	}
	last := a + 1
	if l.ahead(j) {
		last = max(reach, last)
	}
	// The chunk's rows of anchors a … last−1, gathered into one call where they are not contiguous.
	var anchors []int
	for b := a; b < last; b++ {
		if !l.have[b*l.k+j] {
			anchors = append(anchors, b)
		}
	}
	m, t, d := hi-lo, l.t, l.d
	l.lat = slices.Grow(l.lat[:0], len(anchors)*m*d)[:len(anchors)*m*d]
	for i, b := range anchors {
		l.pts.rows(l.lat[i*m*d:(i+1)*m*d], b, lo, hi)
	}
	start := time.Now() // the rows' making is the candidates' time, the decoding the Decode phase's
	var dst []int
	if len(anchors) == 1 {
		dst = l.dec[(a*l.c+lo)*t : (a*l.c+hi)*t]
	} else {
		dst = make([]int, len(anchors)*m*t)
	}
	if err := flow.Decode(ctx, dst, l.lat); err != nil {
		return nil, time.Since(start), fmt.Errorf("bo: decode candidates: %w", err)
	}
	if len(anchors) > 1 {
		for i, b := range anchors {
			copy(l.dec[(b*l.c+lo)*t:(b*l.c+hi)*t], dst[i*m*t:(i+1)*m*t])
		}
	}
	for _, b := range anchors {
		l.have[b*l.k+j] = true
	}
	l.rows += len(anchors) * m
	return l.dec[(a*l.c+lo)*t : (a*l.c+hi)*t], time.Since(start), nil
}
