package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nfbo/nfbo/chem/objective"
)

// Options configure NewObjective.
type Options struct {
	// RunID names the run's subjects and its results consumer
	// (ValidRunID). A resumed run must have the id it had, or it cannot
	// find the results that arrived while it was down; two runs must not
	// share one.
	RunID string
	// Task is the task the workers score; only workers started with this
	// task take the run's molecules. Required.
	Task string
	// Canon identifies molecules: the message id and subject of a molecule
	// are those of its canonical SMILES, so that a resumed run that
	// proposes it in another spelling finds it. If nil, molecules are
	// identified by the SMILES as given.
	Canon objective.Canonicalizer
	// DuplicateWindow is the streams' duplicate window, used when this
	// side creates them. If 0, DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// ResultMaxAge is how long a result waits for its run in
	// ResultStream, and how long the run's consumer lives unused, when
	// this side creates them. If 0, DefaultResultMaxAge.
	ResultMaxAge time.Duration
	// WaitNotice is how long the objective waits for results without any
	// arriving before it tells Warnf what it waits for (how many molecules
	// are queued, being scored, and how many workers wait for work), and
	// again after each such period. If 0, one minute; negative, never.
	WaitNotice time.Duration
	// Warnf is told about lost connections and long waits. If nil,
	// nothing is told.
	Warnf func(format string, args ...any)
}

// Stats count an Objective's traffic.
type Stats struct {
	// Published counts the molecules published to the todo stream.
	Published int
	// Collected counts the results found by looking a molecule up in the
	// results stream rather than received through the run's consumer:
	// answered while the optimiser was down (found before publishing), or
	// handed to a pull request of a session that died (found by the
	// periodic sweep).
	Collected int
	// Awaited counts the molecules found still queued or being scored,
	// by an earlier session of the run: waited for, not published again.
	Awaited int
	// Received counts the results received through the run's consumer.
	Received int
}

// Objective is the optimiser's side of the queue: an objective.Objective
// (and StreamObjective) that publishes each molecule of a batch to the
// todo stream and delivers each result as it arrives. Under an
// objective.Budget, every result is therefore on disk before the next is
// taken, and a molecule already in the evaluation log never reaches the
// queue. Score and ScoreStream calls are serialised.
type Objective struct {
	js      jetstream.JetStream
	todo    jetstream.Stream
	results jetstream.Stream
	cons    jetstream.Consumer
	opts    Options
	warnf   func(string, ...any)

	mu      sync.Mutex      // held by a ScoreStream call
	settled map[string]bool // keys whose result was delivered in this Objective's life

	statsMu sync.Mutex // apart from mu, so that Stats answers during a call
	stats   Stats
}

var _ objective.StreamObjective = (*Objective)(nil)

// NewObjective opens the run's side of the queue on nc: it creates the
// streams when they are missing and the run's durable results consumer
// (nfbo-run-RUNID) when it is.
func NewObjective(ctx context.Context, nc *nats.Conn, opts Options) (*Objective, error) {
	if !ValidRunID(opts.RunID) {
		return nil, fmt.Errorf("queue: run id %q: want 1 to 64 letters, digits, '-' or '_'", opts.RunID)
	}
	if opts.Task == "" {
		return nil, errors.New("queue: no task")
	}
	o := &Objective{opts: opts, warnf: opts.Warnf, settled: map[string]bool{}}
	if o.warnf == nil {
		o.warnf = func(string, ...any) {}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	o.js = js
	if o.todo, o.results, err = openStreams(ctx, js, opts.DuplicateWindow, opts.ResultMaxAge); err != nil {
		return nil, err
	}
	age := opts.ResultMaxAge
	if age <= 0 {
		age = DefaultResultMaxAge
	}
	o.cons, err = o.results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       runConsumer(opts.RunID),
		Description:   "nfbo: the results of run " + opts.RunID + " (task " + opts.Task + ")",
		FilterSubject: resultSubject(opts.RunID, "*"),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		// A result is acknowledged once it is on disk: a few seconds at most.
		AckWait:           time.Minute,
		InactiveThreshold: age,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: opening the results consumer of run %s: %w", opts.RunID, err)
	}
	return o, nil
}

// Stats returns the counters so far, also while a call is in progress.
func (o *Objective) Stats() Stats {
	o.statsMu.Lock()
	defer o.statsMu.Unlock()
	return o.stats
}

// count adds to one of the counters.
func (o *Objective) count(field *int) {
	o.statsMu.Lock()
	*field++
	o.statsMu.Unlock()
}

// Score implements objective.Objective: it returns when every molecule has
// its result, or with ctx's error and the results received so far.
func (o *Objective) Score(ctx context.Context, smiles []string) ([]objective.Result, error) {
	out := make([]objective.Result, len(smiles))
	got := false
	err := o.ScoreStream(ctx, smiles, func(lo, hi int, res []objective.Result) error {
		copy(out[lo:hi], res)
		got = true
		return nil
	})
	switch {
	case err == nil:
		return out, nil
	case got:
		return out, err
	}
	return nil, err
}

// ScoreStream implements objective.StreamObjective. For each molecule it
// first asks the server what became of it in an earlier session of the
// run: a result waiting in the results stream is delivered at once, a
// molecule still queued or being scored is waited for, and only the others
// are published. It then delivers each result as it arrives, one molecule
// per call of deliver, and deletes it from the stream once deliver has
// returned (for a Budget: once it is on disk). A result whose molecule is
// not in smiles is left in the stream for the session that asks for it.
//
// When ctx is done, ScoreStream returns its error at once: the molecules
// published stay queued, the workers go on, and a resumed run collects
// their results. While the server is unreachable it waits for it.
func (o *Objective) ScoreStream(ctx context.Context, smiles []string, deliver func(lo, hi int, res []objective.Result) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(smiles) == 0 {
		return nil
	}
	canon, err := o.canonical(ctx, smiles)
	if err != nil {
		return err
	}
	b := &batch{o: o, deliver: deliver, pending: map[string][]int{}, canon: map[string]string{}}
	for i, s := range smiles {
		if err := b.start(ctx, i, s, canon[i]); err != nil {
			return err
		}
	}
	return b.collect(ctx)
}

// canonical returns the canonical SMILES that identify smiles: the
// input itself without a canonicaliser, or where it has no canonical form
// (the worker's objective will say it is invalid).
func (o *Objective) canonical(ctx context.Context, smiles []string) ([]string, error) {
	out := append([]string(nil), smiles...)
	if o.opts.Canon == nil {
		return out, nil
	}
	c, err := o.opts.Canon.Canonicalize(ctx, smiles, true)
	if err != nil {
		return nil, fmt.Errorf("queue: canonicalising the molecules to publish: %w", err)
	}
	if len(c) != len(smiles) {
		return nil, fmt.Errorf("queue: canonicaliser returned %d results for %d molecules", len(c), len(smiles))
	}
	for i := range c {
		if c[i].SMILES != "" {
			out[i] = c[i].SMILES
		}
	}
	return out, nil
}

// batch is one ScoreStream call in progress.
type batch struct {
	o       *Objective
	deliver func(lo, hi int, res []objective.Result) error
	pending map[string][]int  // molecule key -> indices awaiting its result
	canon   map[string]string // molecule key -> canonical SMILES
}

// start looks up molecule i and publishes it if nothing of it is known.
func (b *batch) start(ctx context.Context, i int, smiles, canonical string) error {
	key := moleculeKey(canonical)
	if _, ok := b.pending[key]; ok {
		b.pending[key] = append(b.pending[key], i)
		return nil
	}
	b.pending[key] = []int{i}
	b.canon[key] = canonical
	st, err := b.o.lookup(ctx, key, canonical)
	if err != nil {
		return err
	}
	switch {
	case st.result != nil:
		b.o.count(&b.o.stats.Collected)
		return b.settle(ctx, key, *st.result, st.resultSeq)
	case st.queued:
		b.o.count(&b.o.stats.Awaited)
		return nil
	}
	return b.o.publish(ctx, smiles, canonical, key)
}

// settle delivers the result of key to its indices and then deletes it
// from the results stream (seq; 0 when unknown).
func (b *batch) settle(ctx context.Context, key string, r resultMsg, seq uint64) error {
	res := []objective.Result{{Score: r.Score, Reason: r.Reason, Done: true, Failed: r.Failed}}
	for _, i := range b.pending[key] {
		if err := b.deliver(i, i+1, res); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	delete(b.pending, key)
	b.o.settled[key] = true
	b.o.forget(ctx, seq)
	return nil
}

// collect receives results from the run's consumer until every molecule of
// the batch has one.
func (b *batch) collect(ctx context.Context) error {
	o := b.o
	lastNews, lastSweep := time.Now(), time.Now()
	outage := false
	for len(b.pending) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(lastSweep) > sweepEvery {
			if err := b.sweep(ctx); err != nil {
				return err
			}
			lastSweep = time.Now()
			continue
		}
		if d := o.waitNotice(); d > 0 && time.Since(lastNews) > d {
			o.noticeWait(ctx, len(b.pending), time.Since(lastNews))
			lastNews = time.Now()
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < 100*time.Millisecond {
			// Too little time for a pull request (FetchContext refuses one).
			<-ctx.Done()
			return ctx.Err()
		}
		// A pull for no more results than are awaited ends as soon as they
		// are in, and is never abandoned with results on their way to it.
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msgs, err := o.cons.Fetch(min(len(b.pending), 64), jetstream.FetchContext(fctx))
		if err == nil {
			for m := range msgs.Messages() {
				got, err := b.receive(ctx, m)
				if err != nil {
					cancel()
					return err
				}
				if got {
					lastNews = time.Now()
				}
			}
			err = msgs.Error()
		}
		cancel()
		if err == nil || quietFetchError(err) {
			if outage {
				o.warnf("queue: receiving results of run %s again", o.opts.RunID)
				outage = false
			}
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transient(err) {
			return fmt.Errorf("queue: receiving results of run %s: %w", o.opts.RunID, err)
		}
		if !outage {
			o.warnf("queue: receiving results of run %s: %v; waiting for the NATS server", o.opts.RunID, err)
			outage = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryBackoff):
		}
	}
	return nil
}

// sweepEvery is how often collect looks in the results stream for the
// molecules it still waits for. The consumer brings every result, but one
// handed to a pull request of a session killed a moment ago waits out the
// consumer's ack wait before it comes again; the sweep finds it sooner.
const sweepEvery = 5 * time.Second

// sweep looks up every molecule still awaited and settles those whose
// result is in the stream.
func (b *batch) sweep(ctx context.Context) error {
	for key := range b.pending {
		st, err := b.o.lookup(ctx, key, b.canon[key])
		if err != nil {
			return err
		}
		if st.result != nil {
			b.o.count(&b.o.stats.Collected)
			if err := b.settle(ctx, key, *st.result, st.resultSeq); err != nil {
				return err
			}
		}
	}
	return nil
}

// quietFetchError reports the errors of a fetch that simply found nothing.
func quietFetchError(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout)
}

// receive handles one message of the run's consumer and reports whether it
// answered a molecule of the batch. A result is acknowledged only after
// deliver has returned, so a crash before then leaves it to the resumed
// run.
func (b *batch) receive(ctx context.Context, m jetstream.Msg) (bool, error) {
	o := b.o
	r, err := decode[resultMsg](m.Data())
	if err != nil {
		o.warnf("queue: dropping a message on %s that is not a result: %v", m.Subject(), err)
		_ = m.Term()
		return false, nil
	}
	subj := m.Subject()
	key := subj[strings.LastIndexByte(subj, '.')+1:]
	var seq uint64
	if meta, err := m.Metadata(); err == nil {
		seq = meta.Sequence.Stream
	}
	if _, ok := b.pending[key]; !ok || r.Canonical != b.canon[key] || r.Task != o.opts.Task {
		// Not asked for now: delivered before (then gone with), or for a
		// later session of the run to find in the stream.
		_ = m.Ack()
		if o.settled[key] {
			o.forget(ctx, seq)
		}
		return false, nil
	}
	o.count(&o.stats.Received)
	if err := b.settle(ctx, key, r, 0); err != nil {
		return false, err
	}
	_ = m.Ack()
	o.forget(ctx, seq)
	return true, nil
}

// forget deletes a delivered result from the stream, so that a molecule
// that failed is scored again by a later session, and the stream holds
// only what is still to be collected. It is best effort: a result left
// behind is never delivered twice (its molecule is in the evaluation log,
// so no session asks for it) and goes with ResultMaxAge.
func (o *Objective) forget(ctx context.Context, seq uint64) {
	if seq == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = o.results.DeleteMsg(dctx, seq)
}

// status is what the server knows of a molecule.
type status struct {
	queued    bool       // its todo message is in the stream: queued or being scored
	result    *resultMsg // its result, if one waits
	resultSeq uint64
}

// lookup asks the server what became of a molecule. The todo stream is
// asked first: a worker publishes the result before it acknowledges the
// todo message, so a molecule missing from both was never published (or
// was delivered and forgotten).
func (o *Objective) lookup(ctx context.Context, key, canonical string) (status, error) {
	var st status
	err := retry(ctx, "looking up molecule "+canonical, o.warnf, func(ctx context.Context) error {
		st = status{}
		_, err := o.todo.GetLastMsgForSubject(ctx, todoSubject(o.opts.Task, o.opts.RunID, key))
		switch {
		case err == nil:
			st.queued = true
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return err
		}
		raw, err := o.results.GetLastMsgForSubject(ctx, resultSubject(o.opts.RunID, key))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return nil
		case err != nil:
			return err
		}
		r, err := decode[resultMsg](raw.Data)
		if err == nil && r.Canonical == canonical && r.Task == o.opts.Task {
			st.result, st.resultSeq = &r, raw.Sequence
		}
		return nil
	})
	return st, err
}

// publish queues one molecule. Its message id is the run id and its
// canonical SMILES, so that JetStream drops a copy published again within
// the duplicate window (a retry after a lost acknowledgement).
func (o *Objective) publish(ctx context.Context, smiles, canonical, key string) error {
	data, err := json.Marshal(todoMsg{Run: o.opts.RunID, Task: o.opts.Task, SMILES: smiles, Canonical: canonical})
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	subj := todoSubject(o.opts.Task, o.opts.RunID, key)
	id := o.opts.RunID + " " + canonical
	for attempt := 0; ; attempt++ {
		var ack *jetstream.PubAck
		err := retry(ctx, "publishing molecule "+canonical, o.warnf, func(ctx context.Context) error {
			var err error
			ack, err = o.js.Publish(ctx, subj, data, jetstream.WithMsgID(id), jetstream.WithExpectStream(TodoStream))
			return err
		})
		if err != nil {
			return err
		}
		if !ack.Duplicate || attempt > 0 {
			o.count(&o.stats.Published)
			return nil
		}
		// JetStream remembers this id. Either an attempt above landed though
		// its acknowledgement was lost (the molecule is queued: fine), or
		// the molecule was published, answered and delivered within the
		// window, and a new session asks for it again (it failed): then it
		// needs a message of its own.
		st, err := o.lookup(ctx, key, canonical)
		if err != nil {
			return err
		}
		if st.queued || st.result != nil {
			o.count(&o.stats.Published)
			return nil
		}
		id += " " + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
}

func (o *Objective) waitNotice() time.Duration {
	switch {
	case o.opts.WaitNotice == 0:
		return time.Minute
	case o.opts.WaitNotice < 0:
		return 0
	}
	return o.opts.WaitNotice
}

// noticeWait tells Warnf what the run waits for, from the workers'
// consumer as the server sees it.
func (o *Objective) noticeWait(ctx context.Context, n int, since time.Duration) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	head := fmt.Sprintf("queue: run %s has waited %s for the results of %d molecules", o.opts.RunID, since.Round(time.Second), n)
	c, err := o.todo.Consumer(ictx, workerConsumer(o.opts.Task))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		o.warnf("%s: no worker has ever asked for molecules of task %q; start one with: nfbo worker -queue URL -task %s",
			head, o.opts.Task, o.opts.Task)
		return
	}
	var info *jetstream.ConsumerInfo
	if err == nil {
		info, err = c.Info(ictx)
	}
	if err != nil {
		o.warnf("%s (the NATS server does not say how the workers fare: %v)", head, err)
		return
	}
	o.warnf("%s of task %q: %d queued, %d being scored, %d worker slots waiting for work",
		head, o.opts.Task, info.NumPending, info.NumAckPending, info.NumWaiting)
}
