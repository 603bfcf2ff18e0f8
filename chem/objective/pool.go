package objective

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
	// crash costs one chunk: a worker that dies, or nfbo killed, loses the
	// answers to the requests in flight, at most ChunkSize molecules per
	// worker. If 0, the default is DefaultChunkSize.
	ChunkSize int
	// MaxFailures is how many requests in a row may fail (a crash, a hang
	// past Timeout, a garbled answer, or no usable score for the one
	// molecule of a request), with no molecule answered in between, before
	// the program is deemed broken and the call fails with a
	// *ProgramError. The count runs across calls and workers. If 0, the
	// default is 3·(Retries+1), 9 with the default Retries: enough to
	// isolate a molecule that crashes the program while it answers others
	// (see Pool), too few to burn a budget on a program that answers
	// nothing. Negative means no limit.
	MaxFailures int
	// Stderr receives the workers' log output. If nil, os.Stderr.
	Stderr io.Writer
	// Warnf, if not nil, is told about restarts and retries.
	Warnf func(format string, args ...any)

	// command is the argv of one worker process.
	command []string
	// name names the program in messages, e.g. `objective program
	// "python3 oracle.py"`.
	name string
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

func (o *PoolOptions) maxFailures() int {
	switch {
	case o.MaxFailures == 0:
		return 3 * (o.retries() + 1)
	case o.MaxFailures < 0:
		return 0
	}
	return o.MaxFailures
}

// DefaultChunkSize is PoolOptions.ChunkSize's default: requests of 64
// molecules keep the protocol's overhead small beside cheap objectives (the
// RDKit tasks score thousands of molecules a second).
const DefaultChunkSize = 64

func (o *PoolOptions) chunkSize() int {
	if o.ChunkSize <= 0 {
		return DefaultChunkSize
	}
	return o.ChunkSize
}

// Pool is a set of long-lived worker processes speaking the JSON-lines
// protocol. A batch is split into chunks (requests) that the workers score
// in parallel. Pool is safe for concurrent use. Close it to stop the
// workers.
//
// A worker that crashes, hangs past the timeout or answers out of step is
// killed and restarted, and its request is retried, up to Retries times. A
// request that still fails is split in halves, each sent once, before
// either is split further, so that the half that works is answered first;
// a half that fails is split again, down to single molecules, which get
// Retries more attempts. A molecule that still fails is an isolated
// failure: its Result has Failed set, it scores 0 with the reason, and a
// Budget neither pays for it nor logs it.
//
// The program itself is deemed broken, and the call returns a
// *ProgramError at once, when MaxFailures requests in a row fail with no
// molecule answered in between, or when a well-formed answer has no usable
// score for any of the two or more molecules of its request (NaN for
// everything, say). A program that crashes on everything thus costs at
// most MaxFailures restarts, not a budget of zeros. Requests in flight on
// other workers are allowed to finish first, so that what they answer is
// not lost.
//
// On Unix each worker runs in a process group of its own, which is killed,
// with whatever the worker started, when the worker is killed or stopped,
// and also when the process that runs the pool dies, SIGKILL included: no
// worker goes on with a request whose answer nobody will read. The
// answers lost in a crash are those of the requests in flight, at most
// ChunkSize molecules per worker.
type Pool struct {
	opts  PoolOptions
	slots chan *slot

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close, so no acquire waits forever
	stats  Stats
	all    []*slot
	// streak counts the requests in a row, across calls and workers, that
	// failed with no molecule answered in between; last is the latest.
	streak int
	last   failure
}

// failure describes a failed request for a ProgramError.
type failure struct {
	err, exit, stderr string
}

// ProgramError reports an objective program that is broken rather than
// troubled by one molecule: it failed PoolOptions.MaxFailures requests in
// a row with no molecule answered in between, or gave no usable score for
// any molecule of a request. Nothing is paid for the molecules it did not
// answer (a Budget leaves them NotScored and out of its log), so once the
// program is fixed, a resumed run asks for them again.
type ProgramError struct {
	// Program names the program, e.g. `objective program "python3 oracle.py"`.
	Program string
	// Problem says what it did, e.g. "failed 9 requests in a row, ...".
	Problem string
	// Last is the last failure, e.g. "worker (pid 12) exited before
	// answering"; empty when there was none.
	Last string
	// Exit is how the last failed worker ended by itself, e.g. "exit
	// status 3"; empty when it was killed (hung, garbled) or still runs.
	Exit string
	// Stderr is the last line that worker wrote to standard error, if any.
	Stderr string
}

// Error implements error, naming the program and its last words.
func (e *ProgramError) Error() string {
	var details []string
	if e.Last != "" {
		details = append(details, "last failure: "+e.Last)
	}
	if e.Exit != "" {
		details = append(details, e.Exit)
	}
	if e.Stderr != "" {
		details = append(details, fmt.Sprintf("last line on stderr: %q", e.Stderr))
	}
	msg := "objective: the " + e.Program + " " + e.Problem
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	return msg + "; nothing was paid for the molecules it did not answer"
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
		opts.Stderr = &LockedWriter{W: w}
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
	_ Canonicalizer   = (*Pool)(nil)
	_ StreamObjective = (*poolObjective)(nil)
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
	// The slot holds the new process even if the handshake fails, so that
	// the failure can quote its exit status and standard error.
	s.p = p
	if pl.opts.handshake {
		resp, err := p.call(ctx, &request{Op: "hello"}, pl.opts.timeout(), nil)
		if err != nil {
			p.kill()
			return fmt.Errorf("objective: worker did not start: %w", err)
		}
		if !resp.OK {
			p.kill()
			return pl.refused(resp)
		}
	}
	return nil
}

// refused returns the fatal error of a response with "ok": false: a worker
// that rejects a request will reject it again, so it is not retried.
func (pl *Pool) refused(resp *response) error {
	if resp.RDKitMissing {
		detail, _, _ := strings.Cut(resp.Error, "; install")
		return &errFatal{rdkitMissing(pl.opts.command[0], detail)}
	}
	return &errFatal{fmt.Errorf("objective: the %s refused the request: %s", pl.opts.name, resp.Error)}
}

// do sends one request on slot s, restarting the worker first if needed,
// and records the traffic.
func (pl *Pool) do(ctx context.Context, s *slot, req *request, n int) (*response, error) {
	if err := pl.ensure(ctx, s); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := s.p.call(ctx, req, pl.opts.timeout(), func() {
		wait := "until it answers"
		if t := pl.opts.timeout(); t > 0 {
			wait = fmt.Sprintf("up to %v", t)
		}
		pl.warnf("objective: interrupted: waiting %s for the answer to the request in flight (%d molecules), so that "+
			"the work it does is paid for once and not asked for again; interrupt again to abandon it", wait, n)
	})
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
		return nil, pl.refused(resp)
	}
	return resp, nil
}

// noteFailure counts a failed request on slot s and returns a fatal
// *ProgramError when the streak reaches MaxFailures.
func (pl *Pool) noteFailure(s *slot, err error) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.streak++
	pl.last = failure{err: err.Error()}
	if s.p != nil {
		pl.last.exit, pl.last.stderr = s.p.exitStatus(), s.p.stderr.lastLine()
	}
	if limit := pl.opts.maxFailures(); limit > 0 && pl.streak >= limit {
		return pl.programError(fmt.Sprintf("failed %d requests in a row, answering no molecule in between", pl.streak), pl.last)
	}
	return nil
}

// noteAnswer records a well-formed answer in which answered molecules got
// a usable score: any resets the streak; none (the one molecule of the
// request got NaN, say) extends it.
func (pl *Pool) noteAnswer(s *slot, answered int, why string) error {
	if answered > 0 {
		pl.mu.Lock()
		pl.streak = 0
		pl.mu.Unlock()
		return nil
	}
	return pl.noteFailure(s, errors.New(why))
}

// programError returns a fatal *ProgramError about the pool's program.
func (pl *Pool) programError(problem string, last failure) error {
	return &errFatal{&ProgramError{Program: pl.opts.name, Problem: problem, Last: last.err, Exit: last.exit, Stderr: last.stderr}}
}

// unanswered returns the fatal error of a well-formed answer that gives no
// usable score for any of the n ≥ 2 molecules of its request (why is the
// first molecule's reason), or nil when some score is usable or n < 2. A
// program in step with its requests that answers nothing usable will do so
// again: retrying or splitting only burns calls.
func (pl *Pool) unanswered(s *slot, answered, n int, why string) error {
	if answered > 0 || n < 2 {
		return nil
	}
	last := failure{err: why}
	if s.p != nil {
		last.stderr = s.p.stderr.lastLine()
	}
	return pl.programError(fmt.Sprintf("gave no usable score for any of the %d molecules of a request", n), last)
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
// results. It returns how many of the chunk's items got a usable answer,
// or a non-nil error when the request failed.
type chunkFunc func(ctx context.Context, s *slot, lo, hi int) (answered int, err error)

// errStopped ends the work of a goroutine after another one failed.
var errStopped = errors.New("objective: stopped after another request failed")

// run splits n items into chunks and runs them on the workers in parallel,
// with retries and bisection (see Pool); poison(i, err) records the
// failure of item i when it is isolated. Each time a chunk, a part of one
// or an isolated item is settled, deliver(lo, hi) (if not nil) is called
// with its range: the calls are serialised, and the worker that answered
// sends its next request only after deliver has returned, so that a caller
// can put each answer on disk before more is asked. An error from deliver
// stops the run.
//
// run returns the first fatal, deliver or context error. After a fatal or
// deliver error no new request is sent, but requests in flight finish (and
// are delivered); ctx's cancellation kills them. The chunks settled before
// the error keep their results (done reports which).
func (pl *Pool) run(ctx context.Context, n int, fn chunkFunc, poison func(i int, err error), deliver func(lo, hi int) error) (done []bool, err error) {
	done = make([]bool, n)
	if n == 0 {
		return done, nil
	}
	size := pl.opts.chunkSize()
	if per := (n + pl.opts.workers() - 1) / pl.opts.workers(); per < size {
		size = per
	}
	r := &poolRun{pl: pl, ctx: ctx, fn: fn, poison: poison, deliver: deliver, done: done, retries: pl.opts.retries(),
		stopped: make(chan struct{})}
	jobs := make(chan span)
	var wg sync.WaitGroup
	for w := 0; w < pl.opts.workers(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sp := range jobs {
				s, err := pl.acquire(ctx)
				if err != nil {
					r.fail(err)
					continue
				}
				err = r.chunk(s, sp.lo, sp.hi)
				pl.slots <- s
				if err != nil && err != errStopped {
					r.fail(err)
				}
			}
		}()
	}
feed:
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		select {
		case jobs <- span{lo, hi}:
		case <-r.stopped:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if r.firstErr == nil && ctx.Err() != nil && slices.Contains(done, false) {
		// Interrupted before every molecule was answered. A batch whose last answers came in after the
		// interrupt (the requests in flight are waited for) is complete, and not an error.
		r.firstErr = ctx.Err()
	}
	return done, r.firstErr
}

// span is a range [lo, hi) of a batch's molecules: one request.
type span struct{ lo, hi int }

// poolRun is one Pool.run: its requests, their retries and bisection, and what came of them.
type poolRun struct {
	pl      *Pool
	ctx     context.Context
	fn      chunkFunc
	poison  func(i int, err error)
	deliver func(lo, hi int) error
	retries int

	mu       sync.Mutex // guards firstErr, done and the calls of deliver
	done     []bool
	firstErr error
	stopped  chan struct{} // closed by the first failure: no request is sent after it
	stopOnce sync.Once
}

// fail records the run's first error and stops it.
func (r *poolRun) fail(err error) {
	r.mu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
	r.stopOnce.Do(func() { close(r.stopped) })
}

// finish marks [lo, hi) answered and delivers it.
func (r *poolRun) finish(lo, hi int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := lo; i < hi; i++ {
		r.done[i] = true
	}
	if r.deliver == nil {
		return nil
	}
	return r.deliver(lo, hi)
}

// try sends [lo, hi) once. It returns the request's failure, nil when the answer was delivered, or a fatal
// error that ends the run.
func (r *poolRun) try(s *slot, lo, hi int) (failed, fatal error) {
	select {
	case <-r.stopped:
		return nil, errStopped
	default:
	}
	answered, err := r.fn(r.ctx, s, lo, hi)
	switch {
	case err == nil:
		if err := r.pl.noteAnswer(s, answered, "no usable score for its only molecule"); err != nil {
			return nil, err
		}
		return nil, r.finish(lo, hi)
	case r.ctx.Err() != nil:
		return nil, r.ctx.Err()
	case isFatal(err):
		return nil, err
	}
	return err, r.pl.noteFailure(s, err)
}

// isolate gives item i, which failed once as a half, its remaining attempts, and poisons it if they all fail.
func (r *poolRun) isolate(s *slot, i int, last error) error {
	for a := 1; a <= r.retries; a++ {
		r.pl.warnf("objective: molecule %d: %v; retry %d of %d on a fresh worker", i, last, a, r.retries)
		failed, fatal := r.try(s, i, i+1)
		if fatal != nil {
			return fatal
		}
		if failed == nil {
			return nil
		}
		last = failed
	}
	r.pl.warnf("objective: molecule %d: %v; no answer after %d attempts: it scores 0 and is not paid for", i, last, r.retries+1)
	r.poison(i, last)
	return r.finish(i, i+1)
}

// split tries both halves of [lo, hi), which failed, once each before searching either further, so that a
// half that works is answered (and ends the streak of failures) before the search goes on in the other.
func (r *poolRun) split(s *slot, lo, hi int) error {
	mid := lo + (hi-lo)/2
	halves := []span{{lo, mid}, {mid, hi}}
	var failed [2]error
	for k, h := range halves {
		f, fatal := r.try(s, h.lo, h.hi)
		if fatal != nil {
			return fatal
		}
		failed[k] = f
	}
	for k, h := range halves {
		switch {
		case failed[k] == nil:
		case h.hi-h.lo == 1:
			if err := r.isolate(s, h.lo, failed[k]); err != nil {
				return err
			}
		default:
			r.pl.warnf("objective: molecules %d to %d: %v; splitting them to find the molecule responsible", h.lo, h.hi-1, failed[k])
			if err := r.split(s, h.lo, h.hi); err != nil {
				return err
			}
		}
	}
	return nil
}

// chunk runs [lo, hi) with retries, then bisects.
func (r *poolRun) chunk(s *slot, lo, hi int) error {
	var last error
	for a := 0; a <= r.retries; a++ {
		failed, fatal := r.try(s, lo, hi)
		if fatal != nil {
			return fatal
		}
		if failed == nil {
			return nil
		}
		last = failed
		if a < r.retries {
			r.pl.warnf("objective: molecules %d to %d: %v; retry %d of %d on a fresh worker", lo, hi-1, failed, a+1, r.retries)
		}
	}
	if hi-lo == 1 {
		r.pl.warnf("objective: molecule %d: %v; no answer after %d attempts: it scores 0 and is not paid for", lo, last, r.retries+1)
		r.poison(lo, last)
		return r.finish(lo, hi)
	}
	r.pl.warnf("objective: molecules %d to %d: %v; giving up after %d attempts and splitting them to find the molecule responsible",
		lo, hi-1, last, r.retries+1)
	return r.split(s, lo, hi)
}

// ScoreTask scores smiles for the named task on the pool's workers.
// It follows the Objective contract: on error, the Results of the chunks
// that finished are returned with Done set.
func (pl *Pool) ScoreTask(ctx context.Context, task string, smiles []string) ([]Result, error) {
	return pl.scoreTask(ctx, task, smiles, nil)
}

// scoreTask is ScoreTask with deliver (if not nil) called on each chunk's
// results as they are settled (see run).
func (pl *Pool) scoreTask(ctx context.Context, task string, smiles []string, deliver func(lo, hi int, res []Result) error) ([]Result, error) {
	out := make([]Result, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		req := &request{Op: "score", Task: task, SMILES: smiles[lo:hi]}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return 0, err
		}
		res, err := decodeScores(resp.Scores, resp.Errors, hi-lo)
		if err != nil {
			s.p.kill()
			return 0, fmt.Errorf("worker answer: %w", err)
		}
		answered, why := usable(res)
		if err := pl.unanswered(s, answered, hi-lo, why); err != nil {
			return 0, err
		}
		copy(out[lo:hi], res)
		return answered, nil
	}
	poison := func(i int, err error) {
		out[i] = Result{Reason: fmt.Sprintf("no answer: the worker failed on this molecule %d times: %v", pl.opts.retries()+1, err),
			Done: true, Failed: true}
	}
	var dl func(lo, hi int) error
	if deliver != nil {
		dl = func(lo, hi int) error { return deliver(lo, hi, out[lo:hi]) }
	}
	done, err := pl.run(ctx, len(smiles), fn, poison, dl)
	if err != nil {
		return partial(out, done), fmt.Errorf("objective: scoring %d molecules for task %q: %w", len(smiles), task, err)
	}
	return out, nil
}

// usable counts the results that are answers (not Failed) and returns the
// first Failed one's reason.
func usable(res []Result) (n int, why string) {
	for _, r := range res {
		switch {
		case !r.Failed:
			n++
		case why == "":
			why = r.Reason
		}
	}
	return n, why
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
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		req := &request{Op: "score", Tasks: tasks, SMILES: smiles[lo:hi]}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return 0, err
		}
		res, err := decodeMultiScores(resp.Scores, resp.Errors, len(tasks), hi-lo)
		if err != nil {
			s.p.kill()
			return 0, fmt.Errorf("worker answer: %w", err)
		}
		// A molecule is answered when some task has a usable score for it.
		answered, why := 0, ""
		for i := range hi - lo {
			ok := false
			for j := range tasks {
				if !res[j][i].Failed {
					ok = true
				} else if why == "" {
					why = res[j][i].Reason
				}
			}
			if ok {
				answered++
			}
		}
		if err := pl.unanswered(s, answered, hi-lo, why); err != nil {
			return 0, err
		}
		for j := range tasks {
			copy(out[j][lo:hi], res[j])
		}
		return answered, nil
	}
	poison := func(i int, err error) {
		for j := range tasks {
			out[j][i] = Result{Reason: fmt.Sprintf("no answer: the worker failed on this molecule %d times: %v", pl.opts.retries()+1, err),
				Done: true, Failed: true}
		}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: scoring %d molecules for %d tasks: %w", len(smiles), len(tasks), err)
	}
	return out, nil
}

// Canonicalize implements Canonicalizer with the workers' "canonicalize"
// operation (RDKit's MolToSmiles of MolFromSmiles, PMO's rule).
func (pl *Pool) Canonicalize(ctx context.Context, smiles []string, isomeric bool) ([]Canonical, error) {
	out := make([]Canonical, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		iso := isomeric
		req := &request{Op: "canonicalize", SMILES: smiles[lo:hi], Isomeric: &iso}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return 0, err
		}
		var errs []string
		if len(resp.Errors) > 0 {
			_ = json.Unmarshal(resp.Errors, &errs)
		}
		if len(resp.Canonical) != hi-lo || (errs != nil && len(errs) != hi-lo) {
			s.p.kill()
			return 0, fmt.Errorf("worker answered %d canonical SMILES for %d molecules", len(resp.Canonical), hi-lo)
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
		return hi - lo, nil
	}
	poison := func(i int, err error) {
		out[i] = Canonical{Reason: fmt.Sprintf("worker failed on this molecule: %v", err)}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: canonicalising %d molecules: %w", len(smiles), err)
	}
	return out, nil
}

// Drawing is a molecule drawn by Draw.
type Drawing struct {
	// SVG is the 2D structure as an SVG element (no XML header, ready to inline in HTML); empty when the
	// molecule is invalid or could not be drawn.
	SVG string
	// Canonical is the molecule's RDKit canonical SMILES; empty when invalid.
	Canonical string
	// Reason says why SVG is empty.
	Reason string
}

// Draw returns RDKit's 2D drawings of smiles, width × height pixels each, for reports. It needs the RDKit
// worker (NewRDKit).
func (pl *Pool) Draw(ctx context.Context, smiles []string, width, height int) ([]Drawing, error) {
	out := make([]Drawing, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		req := &request{Op: "draw", SMILES: smiles[lo:hi], Width: width, Height: height}
		resp, err := pl.do(ctx, s, req, hi-lo)
		if err != nil {
			return 0, err
		}
		if !resp.OK {
			return 0, &errFatal{fmt.Errorf("objective: the %s refused to draw: %s", pl.opts.name, resp.Error)}
		}
		var errs []string
		if len(resp.Errors) > 0 {
			_ = json.Unmarshal(resp.Errors, &errs)
		}
		if len(resp.SVGs) != hi-lo || len(resp.Canonical) != hi-lo || len(errs) != hi-lo {
			s.p.kill()
			return 0, fmt.Errorf("worker answered %d drawings for %d molecules", len(resp.SVGs), hi-lo)
		}
		for i := lo; i < hi; i++ {
			out[i] = Drawing{SVG: resp.SVGs[i-lo], Canonical: resp.Canonical[i-lo], Reason: errs[i-lo]}
		}
		return hi - lo, nil
	}
	poison := func(i int, err error) {
		out[i] = Drawing{Reason: fmt.Sprintf("worker failed on this molecule: %v", err)}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: drawing %d molecules: %w", len(smiles), err)
	}
	return out, nil
}

// A Depiction is a molecule as a molfile block with 2D coordinates (Pool.MolBlocks).
type Depiction struct {
	MolBlock  string // "" when the molecule cannot be read; then Reason says why
	Canonical string // RDKit's canonical SMILES
	Reason    string
}

// MolBlocks returns the molecules as molfile blocks with 2D coordinates, for SDF files. It needs the RDKit worker
// (NewRDKit).
func (pl *Pool) MolBlocks(ctx context.Context, smiles []string) ([]Depiction, error) {
	out := make([]Depiction, len(smiles))
	fn := func(ctx context.Context, s *slot, lo, hi int) (int, error) {
		resp, err := pl.do(ctx, s, &request{Op: "molblocks", SMILES: smiles[lo:hi]}, hi-lo)
		if err != nil {
			return 0, err
		}
		if !resp.OK {
			return 0, &errFatal{fmt.Errorf("objective: the %s cannot write molfile blocks: %s", pl.opts.name, resp.Error)}
		}
		var errs []string
		if len(resp.Errors) > 0 {
			_ = json.Unmarshal(resp.Errors, &errs)
		}
		if len(resp.MolBlocks) != hi-lo || len(resp.Canonical) != hi-lo || len(errs) != hi-lo {
			s.p.kill()
			return 0, fmt.Errorf("worker answered %d molfile blocks for %d molecules", len(resp.MolBlocks), hi-lo)
		}
		for i := lo; i < hi; i++ {
			out[i] = Depiction{MolBlock: resp.MolBlocks[i-lo], Canonical: resp.Canonical[i-lo], Reason: errs[i-lo]}
			if out[i].MolBlock == "" && out[i].Reason == "" {
				out[i].Reason = "no molfile block"
			}
		}
		return hi - lo, nil
	}
	poison := func(i int, err error) {
		out[i] = Depiction{Reason: fmt.Sprintf("worker failed on this molecule: %v", err)}
	}
	if _, err := pl.run(ctx, len(smiles), fn, poison, nil); err != nil {
		return nil, fmt.Errorf("objective: molfile blocks of %d molecules: %w", len(smiles), err)
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

// Score implements Objective.
func (o *poolObjective) Score(ctx context.Context, smiles []string) ([]Result, error) {
	return o.pool.ScoreTask(ctx, o.task, smiles)
}

// ScoreStream implements StreamObjective: deliver gets each request's
// results as soon as they are answered, and the worker that answered sends
// its next request only after deliver has returned.
func (o *poolObjective) ScoreStream(ctx context.Context, smiles []string, deliver func(lo, hi int, res []Result) error) error {
	_, err := o.pool.scoreTask(ctx, o.task, smiles, deliver)
	return err
}

// LockedWriter serialises concurrent writes to W: a pool's workers' standard errors, and a command's own
// messages beside them.
type LockedWriter struct {
	W  io.Writer
	mu sync.Mutex
}

// Write writes p to W, one call at a time.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Lock and Unlock let a reader of W (a buffer in a test) wait for the writes in progress.
func (l *LockedWriter) Lock()   { l.mu.Lock() }
func (l *LockedWriter) Unlock() { l.mu.Unlock() }
