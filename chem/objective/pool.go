package objective

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// PoolOptions configures a pool of worker processes (NewRDKit, NewCommand).
// The zero value gives one worker with the defaults below.
type PoolOptions struct {
	// Workers is the number of worker processes. If 0, the default is 1.
	Workers int
	// Timeout is the longest one request (a chunk of a batch, on one
	// worker) may take before the worker is deemed hung, killed, restarted
	// and the chunk retried. If 0, the default is 5 minutes; negative means
	// no limit.
	Timeout time.Duration
	// Retries is how many times a chunk is retried on a fresh worker after
	// a crash, a hang or a garbled answer before it is split in halves to
	// isolate the molecule responsible. If 0, the default is 2; negative
	// means none.
	Retries int
	// ChunkSize is the most molecules sent in one request. A batch is split
	// into chunks that the workers take in turn, so the load balances and a
	// crash costs one chunk. If 0, the default is 64.
	ChunkSize int
	// Stderr receives the workers' log output. If nil, os.Stderr.
	Stderr io.Writer
	// Warnf, if not nil, is told about restarts and retries.
	Warnf func(format string, args ...any)

	// command is the argv of one worker process.
	command []string
	// handshake sends "hello" to each new worker and fails fatally on
	// rdkit_missing; the RDKit pool sets it, external programs need not
	// implement "hello".
	handshake bool
}

func (o *PoolOptions) workers() int {
	if o.Workers <= 0 {
		return 1
	}
	return o.Workers
}

func (o *PoolOptions) timeout() time.Duration {
	switch {
	case o.Timeout == 0:
		return 5 * time.Minute
	case o.Timeout < 0:
		return 0
	}
	return o.Timeout
}

func (o *PoolOptions) retries() int {
	switch {
	case o.Retries == 0:
		return 2
	case o.Retries < 0:
		return 0
	}
	return o.Retries
}

func (o *PoolOptions) chunkSize() int {
	if o.ChunkSize <= 0 {
		return 64
	}
	return o.ChunkSize
}

// Pool is a set of long-lived worker processes speaking the JSON-lines
// protocol. A batch is split into chunks that the workers score in
// parallel; a worker that crashes, hangs past the timeout or answers out of
// step is killed and restarted, and its chunk is retried. Pool is safe for
// concurrent use. Close it to stop the workers.
type Pool struct {
	opts  PoolOptions
	slots chan *slot

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close, so no acquire waits forever
	stats  Stats
	all    []*slot
}

// Stats counts a pool's traffic, for benchmarks of the client's overhead.
type Stats struct {
	// Requests is the number of answered requests.
	Requests int
	// Molecules is the number of molecules in answered score requests.
	Molecules int
	// Restarts counts workers killed after a crash, hang or garbled answer.
	Restarts int
	// WorkerTime is the time the workers reported spending on answered
	// requests; ClientTime is the wall time the pool spent on the same
	// requests, from sending to decoding the answer.
	WorkerTime, ClientTime time.Duration
}

// slot holds one worker process, started lazily and restarted after a
// failure.
type slot struct {
	p *proc
}

// newPool makes a pool; workers start on first use.
func newPool(opts PoolOptions) *Pool {
	switch w := opts.Stderr.(type) {
	case nil:
		opts.Stderr = os.Stderr
	case *os.File:
		// Each worker writes to the file directly.
	default:
		// exec copies each worker's stderr from its own goroutine.
		opts.Stderr = &lockedWriter{w: w}
	}
	n := opts.workers()
	pl := &Pool{opts: opts, slots: make(chan *slot, n), done: make(chan struct{})}
	for i := 0; i < n; i++ {
		s := &slot{}
		pl.all = append(pl.all, s)
		pl.slots <- s
	}
	return pl
}

var (
	_ Canonicalizer = (*Pool)(nil)
	_ Objective     = (*poolObjective)(nil)
)

// ErrClosed is returned by a Pool used after Close.
var ErrClosed = errors.New("objective: pool is closed")

func (pl *Pool) warnf(format string, args ...any) {
	if pl.opts.Warnf != nil {
		pl.opts.Warnf(format, args...)
	}
}

// Start starts every worker now rather than on first use, so that a
// missing interpreter or RDKit is reported before any work is queued.
func (pl *Pool) Start(ctx context.Context) error {
	var held []*slot
	defer func() {
		for _, s := range held {
			pl.slots <- s
		}
	}()
	for range pl.all {
		s, err := pl.acquire(ctx)
		if err != nil {
			return err
		}
		held = append(held, s)
		if err := pl.ensure(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (pl *Pool) acquire(ctx context.Context) (*slot, error) {
	pl.mu.Lock()
	closed := pl.closed
	pl.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	select {
	case s := <-pl.slots:
		return s, nil
	case <-pl.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensure starts the slot's process if it is not running.
func (pl *Pool) ensure(ctx context.Context, s *slot) error {
	if s.p != nil && !s.p.dead {
		return nil
	}
	p, err := startProc(pl.opts.command, pl.opts.Stderr)
	if err != nil {
		return err
	}
	if pl.opts.handshake {
		resp, err := p.call(ctx, &request{Op: "hello"}, pl.opts.timeout())
		if err != nil {
			p.kill()
			return fmt.Errorf("objective: worker did not start: %w", err)
		}
		if !resp.OK {
			p.kill()
			if resp.RDKitMissing {
				return &errFatal{fmt.Errorf("%w (%s)", ErrRDKitMissing, resp.Error)}
			}
			return &errFatal{fmt.Errorf("objective: worker refused hello: %s", resp.Error)}
		}
	}
	s.p = p
	return nil
}

// do sends one request on slot s, restarting the worker first if needed,
// and records the traffic.
func (pl *Pool) do(ctx context.Context, s *slot, req *request, n int) (*response, error) {
	if err := pl.ensure(ctx, s); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := s.p.call(ctx, req, pl.opts.timeout())
	elapsed := time.Since(start)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			pl.stats.Restarts++
		}
		return nil, err
	}
	pl.stats.Requests++
	pl.stats.Molecules += n
	pl.stats.WorkerTime += time.Duration(resp.Seconds * float64(time.Second))
	pl.stats.ClientTime += elapsed
	if !resp.OK {
		if resp.RDKitMissing {
			return nil, &errFatal{fmt.Errorf("%w (%s)", ErrRDKitMissing, resp.Error)}
		}
		return nil, &errFatal{fmt.Errorf("objective: worker: %s", resp.Error)}
	}
	return resp, nil
}

// Stats returns the pool's counters so far.
func (pl *Pool) Stats() Stats {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.stats
}

// Close stops every worker: it closes their stdin, waits briefly for them
// to exit and kills the rest. Requests in flight finish first.
func (pl *Pool) Close() error {
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return nil
	}
	pl.closed = true
	pl.mu.Unlock()
	close(pl.done)
	for range pl.all {
		s := <-pl.slots
		if s.p != nil {
			s.p.close(2 * time.Second)
		}
	}
	return nil
}

// chunkFunc runs one chunk [lo, hi) of a batch on a slot and stores its
// results; it returns a non-nil error when the chunk failed.
type chunkFunc func(ctx context.Context, s *slot, lo, hi int) error

// run splits n items into chunks, runs them on the workers in parallel
// with retries, and bisects a chunk that keeps failing until the single
// item responsible is found; poison(i, err) then records item i's failure.
// run returns the first fatal or context error; the chunks finished before
// it keep their results (done reports which).
func (pl *Pool) run(ctx context.Context, n int, fn chunkFunc, poison func(i int, err error)) (done []bool, err error) {
	done = make([]bool, n)
	if n == 0 {
		return done, nil
	}
	size := pl.opts.chunkSize()
	if per := (n + pl.opts.workers() - 1) / pl.opts.workers(); per < size {
		size = per
	}
	type span struct{ lo, hi int }
	jobs := make(chan span)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}

	// attempt runs [lo, hi) with retries, then bisects.
	var attempt func(s *slot, lo, hi int) error
	attempt = func(s *slot, lo, hi int) error {
		var last error
		for try := 0; try <= pl.opts.retries(); try++ {
			err := fn(ctx, s, lo, hi)
			if err == nil {
				mu.Lock()
				for i := lo; i < hi; i++ {
					done[i] = true
				}
				mu.Unlock()
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isFatal(err) {
				return err
			}
			last = err
			if try < pl.opts.retries() {
				pl.warnf("objective: molecules %d to %d: %v; retry %d of %d on a fresh worker",
					lo, hi-1, err, try+1, pl.opts.retries())
			} else {
				pl.warnf("objective: molecules %d to %d: %v; giving up after %d attempts", lo, hi-1, err, try+1)
			}
		}
		if hi-lo == 1 {
			poison(lo, last)
			mu.Lock()
			done[lo] = true
			mu.Unlock()
			return nil
		}
		mid := lo + (hi-lo)/2
		if err := attempt(s, lo, mid); err != nil {
			return err
		}
		return attempt(s, mid, hi)
	}

	for w := 0; w < pl.opts.workers(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sp := range jobs {
				s, err := pl.acquire(ctx)
				if err != nil {
					fail(err)
					continue
				}
				err = attempt(s, sp.lo, sp.hi)
				pl.slots <- s
				if err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		select {
		case jobs <- span{lo, hi}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return done, firstErr
}

// ScoreTask scores smiles for the named task on the pool's workers.
// It follows the Objective contract: on error, the Results of the chunks
// that finished are returned with Done set.
func (pl *Pool) ScoreTask(ctx context.Context, task string, smiles []string) ([]Result, error) {
	out := make([]Result, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) error {
		req := &request{Op: "score", Task: task, SMILES: smiles[lo:hi]}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return err
		}
		res, err := decodeScores(resp.Scores, resp.Errors, hi-lo)
		if err != nil {
			s.p.kill()
			return fmt.Errorf("worker answer: %w", err)
		}
		copy(out[lo:hi], res)
		return nil
	}
	poison := func(i int, err error) {
		out[i] = Result{Reason: fmt.Sprintf("worker failed on this molecule %d times: %v", pl.opts.retries()+1, err), Done: true}
	}
	done, err := pl.run(ctx, len(smiles), fn, poison)
	if err != nil {
		return partial(out, done), fmt.Errorf("objective: scoring %d molecules for task %q: %w", len(smiles), task, err)
	}
	return out, nil
}

// ScoreTasks scores smiles for several tasks at once; the worker parses each
// molecule once and shares fingerprints between the tasks. The result holds
// one []Result per task, in the order of tasks. Unlike ScoreTask it returns
// no partial results on error.
func (pl *Pool) ScoreTasks(ctx context.Context, tasks []string, smiles []string) ([][]Result, error) {
	out := make([][]Result, len(tasks))
	for j := range out {
		out[j] = make([]Result, len(smiles))
	}
	fn := func(ctx context.Context, s *slot, lo, hi int) error {
		req := &request{Op: "score", Tasks: tasks, SMILES: smiles[lo:hi]}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return err
		}
		res, err := decodeMultiScores(resp.Scores, resp.Errors, len(tasks), hi-lo)
		if err != nil {
			s.p.kill()
			return fmt.Errorf("worker answer: %w", err)
		}
		for j := range tasks {
			copy(out[j][lo:hi], res[j])
		}
		return nil
	}
	poison := func(i int, err error) {
		for j := range tasks {
			out[j][i] = Result{Reason: fmt.Sprintf("worker failed on this molecule: %v", err), Done: true}
		}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison); err != nil {
		return nil, fmt.Errorf("objective: scoring %d molecules for %d tasks: %w", len(smiles), len(tasks), err)
	}
	return out, nil
}

// Canonicalize implements Canonicalizer with the workers' "canonicalize"
// operation (RDKit's MolToSmiles of MolFromSmiles, PMO's rule).
func (pl *Pool) Canonicalize(ctx context.Context, smiles []string, isomeric bool) ([]Canonical, error) {
	out := make([]Canonical, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) error {
		iso := isomeric
		req := &request{Op: "canonicalize", SMILES: smiles[lo:hi], Isomeric: &iso}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return err
		}
		var errs []string
		if len(resp.Errors) > 0 {
			_ = json.Unmarshal(resp.Errors, &errs)
		}
		if len(resp.Canonical) != hi-lo || (errs != nil && len(errs) != hi-lo) {
			s.p.kill()
			return fmt.Errorf("worker answered %d canonical SMILES for %d molecules", len(resp.Canonical), hi-lo)
		}
		for i := lo; i < hi; i++ {
			c := Canonical{SMILES: resp.Canonical[i-lo]}
			if errs != nil {
				c.Reason = errs[i-lo]
			}
			if c.SMILES == "" && c.Reason == "" {
				c.Reason = "invalid SMILES"
			}
			out[i] = c
		}
		return nil
	}
	poison := func(i int, err error) {
		out[i] = Canonical{Reason: fmt.Sprintf("worker failed on this molecule: %v", err)}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison); err != nil {
		return nil, fmt.Errorf("objective: canonicalising %d molecules: %w", len(smiles), err)
	}
	return out, nil
}

// partial returns out if any entry is done, else nil (Objective contract).
func partial(out []Result, done []bool) []Result {
	anyDone := false
	for i, d := range done {
		if !d {
			out[i] = Result{}
		} else {
			anyDone = true
		}
	}
	if !anyDone {
		return nil
	}
	return out
}

// Objective returns the Objective that scores task on this pool.
func (pl *Pool) Objective(task string) Objective {
	return &poolObjective{pool: pl, task: task}
}

type poolObjective struct {
	pool *Pool
	task string
}

func (o *poolObjective) Score(ctx context.Context, smiles []string) ([]Result, error) {
	return o.pool.ScoreTask(ctx, o.task, smiles)
}

// lockedWriter serialises the workers' concurrent writes to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
