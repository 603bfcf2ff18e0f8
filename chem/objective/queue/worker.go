package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nfbo/nfbo/chem/objective"
)

// DefaultAckWait is WorkerOptions.AckWait's default.
const DefaultAckWait = 30 * time.Second

// DefaultMaxDeliver is WorkerOptions.MaxDeliver's default: deliveries count workers that died on a molecule,
// which says little about the molecule (a kill, a power cut, a machine reclaimed), so it is generous.
const DefaultMaxDeliver = 10

// DefaultMaxFailures is WorkerOptions.MaxFailures's default.
const DefaultMaxFailures = 3

// failuresHeader carries, on a molecule queued again after the objective failed on it, how many times it has.
const failuresHeader = "Nfbo-Failures"

// WorkerOptions configure Serve.
type WorkerOptions struct {
	// Task is the task whose molecules the worker takes (the optimiser's
	// -task), passed to the objective with each one. Required.
	Task string
	// Concurrency is the number of molecules scored at once. If 0, 1.
	Concurrency int
	// AckWait is how long the server waits for news of a molecule before
	// it gives it to another worker. A worker at work says it is alive
	// every third of it, however long the objective takes; a worker that
	// dies (kill -9, a power cut) costs AckWait. If 0, DefaultAckWait.
	//
	// The workers of a task share one consumer on the server, and AckWait
	// and MaxDeliver are its settings: the last worker started sets them
	// for all.
	AckWait time.Duration
	// MaxFailures is how many answers "failed" (objective.Result.Failed:
	// the program crashed, hung past its timeout or refused the molecule)
	// a molecule may get, on whichever workers, before it is given up and
	// answered as failed ("the objective failed on this molecule N
	// times"), which the optimiser takes as no answer: not paid, not
	// logged. If 0, DefaultMaxFailures.
	MaxFailures int
	// MaxDeliver is how many times the server may hand a molecule out
	// before it is given up ("no worker answered it"): deliveries that
	// ended in a failed answer count, and so do workers that died or hung
	// on it, which the server cannot tell apart and which seldom say
	// anything about the molecule. If 0, DefaultMaxDeliver.
	MaxDeliver int
	// Name names the worker in its results; if empty, the host name and
	// process id.
	Name string
	// Report, if not nil, is told about every molecule handled. It is
	// called from Concurrency goroutines at once.
	Report func(Event)
	// Warnf is told about lost connections and molecules that cannot be
	// read. If nil, nothing is told.
	Warnf func(format string, args ...any)
}

func (o *WorkerOptions) concurrency() int { return max(o.Concurrency, 1) }

func (o *WorkerOptions) ackWait() time.Duration {
	if o.AckWait <= 0 {
		return DefaultAckWait
	}
	return o.AckWait
}

func (o *WorkerOptions) maxFailures() int {
	if o.MaxFailures <= 0 {
		return DefaultMaxFailures
	}
	return o.MaxFailures
}

func (o *WorkerOptions) maxDeliver() int {
	if o.MaxDeliver <= 0 {
		return DefaultMaxDeliver
	}
	return o.MaxDeliver
}

// Outcome says what a worker did with a molecule.
type Outcome int

const (
	// Scored: the objective answered; the result is published.
	Scored Outcome = iota
	// Retried: the objective gave no answer (objective.Result.Failed) and
	// the molecule goes back to the queue for another attempt.
	Retried
	// GaveUp: the molecule reached MaxFailures failed answers or MaxDeliver
	// deliveries; a failed result is published.
	GaveUp
	// Known: a result was published for the molecule before (a worker died
	// before it could acknowledge it); nothing is scored again.
	Known
)

// String returns the outcome in words.
func (o Outcome) String() string {
	switch o {
	case Scored:
		return "scored"
	case Retried:
		return "retried"
	case GaveUp:
		return "gave up"
	case Known:
		return "known"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Event is a molecule handled by a worker.
type Event struct {
	Run, Task, SMILES string
	// Delivery is the server's count of deliveries of this message, from 1:
	// more than one after a worker died on it.
	Delivery int
	// Failures is how many times the objective failed on the molecule
	// before this delivery (it is queued anew after each).
	Failures int
	Outcome  Outcome
	// Score and Reason are the objective's answer (Reason: why the score is
	// 0, or why there was no answer).
	Score  float64
	Reason string
	// Elapsed is the time the objective took.
	Elapsed time.Duration
}

// Serve is a worker: it takes the molecules of opts.Task from the todo
// stream (through the durable pull consumer nfbo-worker-TASK, shared by
// every worker of the task), scores each with obj, publishes the result
// and only then acknowledges the molecule, until ctx is done. It creates
// the streams when they are missing.
//
// When ctx is done Serve takes no more molecules, waits for those being
// scored (their answers are not thrown away), publishes their results and
// returns ctx's error. A failure of obj as a whole (a broken program, an
// *objective.ProgramError) stops the worker: the molecule goes back to the
// queue at once for the other workers, and Serve returns the error once
// the molecules in flight are done. While the server is unreachable the
// worker waits for it.
func Serve(ctx context.Context, nc *nats.Conn, obj objective.Objective, opts WorkerOptions) error {
	if opts.Task == "" {
		return errors.New("queue: worker: no task")
	}
	w := &worker{obj: obj, opts: opts, warnf: opts.Warnf, name: opts.Name}
	if w.warnf == nil {
		w.warnf = func(string, ...any) {}
	}
	if w.name == "" {
		host, _ := os.Hostname()
		w.name = host + " pid " + strconv.Itoa(os.Getpid())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	w.js = js
	var todo jetstream.Stream
	if todo, w.results, err = openStreams(ctx, js, 0, 0); err != nil {
		return err
	}
	w.cons, err = todo.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       workerConsumer(opts.Task),
		Description:   "nfbo: the workers of task " + opts.Task,
		FilterSubject: "nfbo.todo." + taskToken(opts.Task) + ".>",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       opts.ackWait(),
		// One delivery more than the attempts: the last one only publishes
		// the failed result, so that a molecule on which every worker dies
		// is answered all the same.
		MaxDeliver: opts.maxDeliver() + 1,
	})
	if err != nil {
		return fmt.Errorf("queue: opening the workers' consumer of task %s: %w", opts.Task, err)
	}

	fetchCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// Molecules in flight are finished after a stop: the objective may be
	// expensive, and its answer is worth publishing.
	scoreCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for range opts.concurrency() {
		wg.Go(func() {
			for {
				m := w.next(fetchCtx)
				if m == nil {
					return
				}
				if err := w.handle(scoreCtx, m); err != nil {
					stop(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if cause := context.Cause(fetchCtx); cause != nil && ctx.Err() == nil {
		return cause
	}
	return ctx.Err()
}

// worker is Serve's state.
type worker struct {
	js      jetstream.JetStream
	cons    jetstream.Consumer
	results jetstream.Stream
	obj     objective.Objective
	opts    WorkerOptions
	warnf   func(string, ...any)
	name    string
	outage  atomic.Bool // a fetch failed and none has succeeded since
}

// next returns the next molecule, or nil once ctx is done.
func (w *worker) next(ctx context.Context) jetstream.Msg {
	for ctx.Err() == nil {
		// Short pulls: a pull request left on the server by a worker that
		// died may be handed a molecule that then waits AckWait for nobody.
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msgs, err := w.cons.Fetch(1, jetstream.FetchContext(fctx))
		var got jetstream.Msg
		if err == nil {
			for m := range msgs.Messages() {
				got = m
			}
			err = msgs.Error()
		}
		cancel()
		if got != nil {
			w.noteFetch(nil)
			return got
		}
		if err == nil || quietFetchError(err) || ctx.Err() != nil {
			w.noteFetch(nil)
			continue
		}
		w.noteFetch(err)
		select {
		case <-ctx.Done():
		case <-time.After(retryBackoff):
		}
	}
	return nil
}

// noteFetch tells Warnf when fetching starts failing and when it works
// again, once for all the worker's goroutines.
func (w *worker) noteFetch(err error) {
	if err == nil {
		if w.outage.CompareAndSwap(true, false) {
			w.warnf("queue: worker: taking molecules of task %s again", w.opts.Task)
		}
		return
	}
	if w.outage.CompareAndSwap(false, true) {
		w.warnf("queue: worker: taking molecules of task %s: %v; waiting for the NATS server", w.opts.Task, err)
	}
}

// handle scores one molecule, publishes its result and acknowledges it. It
// returns an error only when the objective failed as a whole.
func (w *worker) handle(ctx context.Context, m jetstream.Msg) error {
	meta, err := m.Metadata()
	if err != nil {
		w.warnf("queue: worker: a message on %s without JetStream metadata: %v", m.Subject(), err)
		return nil
	}
	t, err := decode[todoMsg](m.Data())
	if err != nil || !ValidRunID(t.Run) || t.Task != w.opts.Task {
		w.warnf("queue: worker: dropping a message on %s that is not a molecule of task %s (%s)", m.Subject(), w.opts.Task, m.Data())
		_ = m.TermWithReason("not a molecule of task " + w.opts.Task)
		return nil
	}
	ev := Event{Run: t.Run, Task: t.Task, SMILES: t.SMILES, Delivery: int(meta.NumDelivered), Failures: failuresOf(m)}
	key := moleculeKey(t.Canonical)
	res := resultMsg{Run: t.Run, Task: t.Task, SMILES: t.SMILES, Canonical: t.Canonical, Worker: w.name, Delivery: ev.Delivery}
	// The result's id is that of the todo message, so that the result of a
	// redelivered molecule is published once, while a molecule published
	// anew (a resumed run asking again for one that failed) gets its own.
	resultID := "result " + strconv.FormatUint(meta.Sequence.Stream, 10)

	if ev.Delivery > 1 && w.answered(ctx, t.Run, key, t.Canonical) {
		ev.Outcome = Known
		w.ack(ctx, m, t)
		w.report(ev)
		return nil
	}
	if maxDeliver := w.opts.maxDeliver(); ev.Delivery > maxDeliver {
		res.Failed = true
		res.Reason = fmt.Sprintf("no worker answered this molecule in %d deliveries (they died or hung on it)", maxDeliver)
		ev.Outcome, ev.Reason = GaveUp, res.Reason
		return w.finish(ctx, m, t, res, resultID, ev)
	}

	alive := w.keepAlive(m)
	start := time.Now()
	out, err := w.obj.Score(ctx, []string{t.SMILES})
	ev.Elapsed = time.Since(start)
	alive()
	if err == nil && len(out) != 1 {
		err = fmt.Errorf("the objective returned %d results for 1 molecule", len(out))
	}
	if err != nil {
		// Another worker may do better; this one stops.
		_ = m.Nak()
		return fmt.Errorf("queue: worker: scoring %s for run %s: %w", t.SMILES, t.Run, err)
	}
	r := out[0]
	res.Score, res.Reason, res.Seconds = r.Score, r.Reason, ev.Elapsed.Seconds()
	ev.Score, ev.Reason = r.Score, r.Reason
	if r.Failed {
		failures := ev.Failures + 1
		if failures < w.opts.maxFailures() {
			// Back to the queue, for another worker (another machine, a
			// fresh process), as a new message that carries the count: the
			// server's count of deliveries also counts dead workers.
			if err := w.requeue(ctx, m, t, meta.Sequence.Stream, failures); err != nil {
				return err
			}
			ev.Outcome = Retried
			w.report(ev)
			return nil
		}
		res.Failed, res.Score = true, 0
		res.Reason = fmt.Sprintf("the objective failed on this molecule %d times (the last: %s)", failures, r.Reason)
		ev.Outcome, ev.Reason = GaveUp, res.Reason
	}
	return w.finish(ctx, m, t, res, resultID, ev)
}

// finish publishes res and then acknowledges m.
func (w *worker) finish(ctx context.Context, m jetstream.Msg, t todoMsg, res resultMsg, id string, ev Event) error {
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("queue: worker: %w", err)
	}
	subj := resultSubject(t.Run, moleculeKey(t.Canonical))
	err = retry(ctx, "publishing the result of "+t.SMILES, w.warnf, func(ctx context.Context) error {
		_, err := w.js.Publish(ctx, subj, data, jetstream.WithMsgID(id), jetstream.WithExpectStream(ResultStream))
		return err
	})
	if err != nil {
		return err
	}
	w.ack(ctx, m, t)
	w.report(ev)
	return nil
}

// requeue publishes the molecule of m (stream sequence seq) again with its count of failures, then acknowledges
// m. The new message's id is derived from seq, so that a worker that takes m again (this one died between the
// two steps) publishes the same message, which the server drops as a duplicate.
func (w *worker) requeue(ctx context.Context, m jetstream.Msg, t todoMsg, seq uint64, failures int) error {
	again := nats.NewMsg(m.Subject())
	again.Data = m.Data()
	again.Header.Set(failuresHeader, strconv.Itoa(failures))
	id := "failed again " + strconv.FormatUint(seq, 10)
	err := retry(ctx, "queueing "+t.SMILES+" again", w.warnf, func(ctx context.Context) error {
		_, err := w.js.PublishMsg(ctx, again, jetstream.WithMsgID(id), jetstream.WithExpectStream(TodoStream))
		return err
	})
	if err != nil {
		return fmt.Errorf("queue: worker: queueing %s of run %s again: %w", t.SMILES, t.Run, err)
	}
	w.ack(ctx, m, t)
	return nil
}

// failuresOf returns the count of failures m carries (0 for a molecule as the optimiser queued it).
func failuresOf(m jetstream.Msg) int {
	h := m.Headers()
	if h == nil {
		return 0
	}
	n, err := strconv.Atoi(h.Get(failuresHeader))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ack acknowledges m and waits for the server to confirm, trying again for
// up to AckWait while the server is away: a molecule whose result is
// published but not acknowledged is delivered again, and then found
// answered (Known).
func (w *worker) ack(ctx context.Context, m jetstream.Msg, t todoMsg) {
	actx, cancel := context.WithTimeout(ctx, w.opts.ackWait())
	defer cancel()
	err := retry(actx, "acknowledging "+t.SMILES, func(string, ...any) {}, func(ctx context.Context) error {
		return m.DoubleAck(ctx)
	})
	if err != nil {
		w.warnf("queue: worker: acknowledging %s of run %s: %v; it will be delivered again and found answered", t.SMILES, t.Run, err)
	}
}

// answered reports whether a result of the molecule waits in the results
// stream: published by a worker that died before acknowledging it.
func (w *worker) answered(ctx context.Context, run, key, canonical string) bool {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := w.results.GetLastMsgForSubject(lctx, resultSubject(run, key))
	if err != nil {
		return false
	}
	r, err := decode[resultMsg](raw.Data)
	return err == nil && r.Canonical == canonical && r.Task == w.opts.Task && !r.Failed
}

// keepAlive tells the server, every third of AckWait, that m is being
// scored, until the returned function is called.
func (w *worker) keepAlive(m jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	every := max(w.opts.ackWait()/3, 10*time.Millisecond)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

func (w *worker) report(ev Event) {
	if w.opts.Report != nil {
		w.opts.Report(ev)
	}
}
