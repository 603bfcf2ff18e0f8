package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nfbo/nfbo/chem/objective"
)

// TestRoundTrip: a Budget over the queue objective with three workers in
// this process pays for every molecule once, logs it once, receives each
// result as it arrives, and leaves both streams empty. The same batch again
// is answered from the log: nothing is published.
func TestRoundTrip(t *testing.T) {
	ns := startServer(t)
	fake := newFake(20 * time.Millisecond)
	startWorkers(t, ns, 3, fake, WorkerOptions{Task: "t", Concurrency: 2})
	dir := t.TempDir()
	b, q := openBudget(t, ns.connect(t), dir, "roundtrip")

	mols := molecules(30)
	batch := append(append([]string(nil), mols...), mols[0], mols[5]) // duplicates cost nothing
	evs, err := b.Evaluate(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		want := objective.Paid
		if i >= len(mols) {
			want = objective.Cached
		}
		if ev.Status != want || ev.Score != float64(len(batch[i])) {
			t.Errorf("%s: %v with score %v, want %v with %d", batch[i], ev.Status, ev.Score, want, len(batch[i]))
		}
	}
	if s := q.Stats(); s.Published != len(mols) || s.Received != len(mols) || s.Collected != 0 || s.Awaited != 0 {
		t.Errorf("stats %+v, want %d published and received", s, len(mols))
	}
	inLog, recs := logged(t, filepath.Join(dir, "evaluations.jsonl"))
	if len(recs) != len(mols) {
		t.Errorf("the log holds %d records, want %d", len(recs), len(mols))
	}
	calls, _ := fake.counts()
	for _, m := range mols {
		if inLog[m] != 1 || calls[m] != 1 {
			t.Errorf("%s: %d times in the log, scored %d times; want 1 and 1", m, inLog[m], calls[m])
		}
	}

	evs, err = b.Evaluate(context.Background(), mols)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != objective.Cached {
			t.Errorf("%s again: %v, want cached", ev.SMILES, ev.Status)
		}
	}
	if s := q.Stats(); s.Published != len(mols) {
		t.Errorf("the same batch again published %d molecules", s.Published-len(mols))
	}
	waitEmpty(t, ns)
}

// waitEmpty waits until both streams are empty: every molecule was
// acknowledged by its worker and every result deleted by its run.
func waitEmpty(t *testing.T, ns *natsServer) {
	t.Helper()
	js, err := jetstream.New(ns.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{TodoStream, ResultStream} {
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, name+" to be empty", func() bool {
			info, err := s.Info(context.Background())
			return err == nil && info.State.Msgs == 0
		})
	}
}

// TestPoisonedMolecule: a program that crashes on one molecule every time
// (the real worker pool, each crash isolated as objective.Result.Failed)
// gets it MaxFailures times, spread over two workers, and then the molecule
// is answered as failed: not paid, not logged. The other molecules are paid.
func TestPoisonedMolecule(t *testing.T) {
	ns := startServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	recv := filepath.Join(t.TempDir(), "recv")
	t.Setenv("NFBO_QUEUE_ORACLE", "1") // for the programs the pools start
	t.Setenv("NFBO_QUEUE_RECV", recv)
	const maxFailures = 3
	for range 2 {
		// No retries in the pool: the queue's deliveries are the attempts.
		pool, err := objective.NewCommand([]string{exe}, objective.PoolOptions{Retries: -1, MaxFailures: -1, Stderr: testWriter{t}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
		startWorkers(t, ns, 1, pool.Objective("t"), WorkerOptions{Task: "t", MaxFailures: maxFailures, AckWait: 5 * time.Second})
	}
	dir := t.TempDir()
	b, _ := openBudget(t, ns.connect(t), dir, "poison")
	batch := []string{"CCO", "POISON", "CCCO"}
	evs, err := b.Evaluate(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Status != objective.Paid || evs[2].Status != objective.Paid {
		t.Errorf("the other molecules: %v and %v, want paid", evs[0].Status, evs[2].Status)
	}
	if ev := evs[1]; ev.Status != objective.Failed || !strings.Contains(ev.Reason, "failed on this molecule 3 times") {
		t.Errorf("POISON: %v (%q), want failed after 3 attempts", ev.Status, ev.Reason)
	}
	_, got := receipts(t, recv)
	n := 0
	for _, s := range got {
		if s == "POISON" {
			n++
		}
	}
	if n != maxFailures {
		t.Errorf("the program got POISON %d times, want %d", n, maxFailures)
	}
	inLog, _ := logged(t, filepath.Join(dir, "evaluations.jsonl"))
	if inLog["POISON"] != 0 || inLog["CCO"] != 1 || inLog["CCCO"] != 1 {
		t.Errorf("log: %v", inLog)
	}
	waitEmpty(t, ns)
}

// dyingObjective stands for a worker that dies while it scores: it tells got, then never answers.
type dyingObjective struct {
	got     chan string
	release chan struct{}
}

func (d dyingObjective) Score(ctx context.Context, smiles []string) ([]objective.Result, error) {
	d.got <- smiles[0]
	<-d.release
	return nil, errors.New("dead")
}

// flakyObjective fails on its first molecule once, then scores.
type flakyObjective struct{ failed atomic.Bool }

func (f *flakyObjective) Score(_ context.Context, smiles []string) ([]objective.Result, error) {
	if f.failed.CompareAndSwap(false, true) {
		return []objective.Result{{Reason: "the program crashed", Done: true, Failed: true}}, nil
	}
	return []objective.Result{{Score: float64(len(smiles[0])), Done: true}}, nil
}

// TestDeadWorkersAreNotFailures: two workers die on a molecule (their connections drop while their objective
// scores it; the server hands it out again after the ack wait), then the objective fails on it once and
// answers the next time. With MaxFailures 2 the molecule is paid: the deaths do not count as failures, only
// as deliveries.
func TestDeadWorkersAreNotFailures(t *testing.T) {
	ns := startServer(t)
	opts := WorkerOptions{Task: "t", AckWait: time.Second, MaxFailures: 2, Warnf: func(string, ...any) {}}
	dying := dyingObjective{got: make(chan string), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		close(dying.release)
		wg.Wait()
	})
	dir := t.TempDir()
	b, _ := openBudget(t, ns.connect(t), dir, "dead")
	type answer struct {
		evs []objective.Evaluation
		err error
	}
	done := make(chan answer, 1)
	go func() {
		evs, err := b.Evaluate(context.Background(), []string{"CCO"})
		done <- answer{evs, err}
	}()
	for death := range 2 {
		nc := ns.connect(t)
		wg.Go(func() { Serve(ctx, nc, dying, opts) })
		select {
		case <-dying.got:
		case <-time.After(30 * time.Second):
			t.Fatalf("death %d: the molecule never came", death+1)
		}
		nc.Close() // no more "in progress": the server gives the molecule to another worker after the ack wait
	}
	var mu sync.Mutex
	var evs []Event
	o := opts
	o.Report = func(ev Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}
	startWorkers(t, ns, 1, &flakyObjective{}, o)
	var a answer
	select {
	case a = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("no answer")
	}
	if a.err != nil || a.evs[0].Status != objective.Paid {
		t.Fatalf("CCO: %+v, %v; want paid", a.evs, a.err)
	}
	// The worker reports a molecule after acknowledging it, which may be after the answer arrived.
	waitFor(t, 10*time.Second, "the worker's report", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(evs) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 2 || evs[0].Outcome != Retried || evs[0].Delivery != 3 || evs[0].Failures != 0 ||
		evs[1].Outcome != Scored || evs[1].Failures != 1 {
		t.Errorf("the live worker's events %+v: want retried at the third delivery, then scored after one failure", evs)
	}
}

// testWriter sends a pool's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestServerRestart: the server stops in the middle of a batch and starts
// again on the same port and store a second later. The run waits and goes
// on; every molecule is paid and logged once. A molecule may be scored once
// more (a worker that could not say it was alive for longer than the ack
// wait), but with a 10 s ack wait none should be.
func TestServerRestart(t *testing.T) {
	ns := startServer(t)
	fake := newFake(150 * time.Millisecond)
	startWorkers(t, ns, 2, fake, WorkerOptions{Task: "t", AckWait: 10 * time.Second})
	dir := t.TempDir()
	b, q := openBudget(t, ns.connect(t), dir, "restart")
	mols := molecules(16)
	logPath := filepath.Join(dir, "evaluations.jsonl")

	done := make(chan error, 1)
	go func() {
		_, err := b.Evaluate(context.Background(), mols)
		done <- err
	}()
	waitFor(t, 30*time.Second, "3 results in the log", func() bool { return logLines(logPath) >= 3 })
	ns.restart(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the batch did not finish within 60s of the restart")
	}
	inLog, recs := logged(t, logPath)
	calls, total := fake.counts()
	if len(recs) != len(mols) {
		t.Errorf("%d records, want %d", len(recs), len(mols))
	}
	for _, m := range mols {
		if inLog[m] != 1 || calls[m] < 1 || calls[m] > 2 {
			t.Errorf("%s: %d times in the log, scored %d times; want 1 and 1 (2 at most)", m, inLog[m], calls[m])
		}
	}
	if total != len(mols) {
		t.Logf("note: %d molecules scored %d times", len(mols), total)
	}
	t.Logf("stats %+v", q.Stats())
}

// TestCollectOnResume: results published while no optimiser listens are
// collected by the next session of the run, which publishes nothing; a
// molecule still queued is waited for, not published again.
func TestCollectOnResume(t *testing.T) {
	ns := startServer(t)
	dir := t.TempDir()
	mols := molecules(6)
	// A first session publishes the batch and goes away without a worker in
	// sight (its ctx ends, as when the optimiser is killed).
	b1, q1 := openBudget(t, ns.connect(t), dir, "resume")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b1.Evaluate(ctx, mols)
		done <- err
	}()
	waitFor(t, 30*time.Second, "the first session to publish the batch", func() bool { return q1.Stats().Published == len(mols) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first session: %v, want it cancelled", err)
	}
	b1.Close()
	// Workers score everything; a second session then finds the results.
	fake := newFake(0)
	startWorkers(t, ns, 2, fake, WorkerOptions{Task: "t"})
	waitFor(t, 20*time.Second, "the workers to score the batch", func() bool { _, n := fake.counts(); return n == len(mols) })
	b2, q2 := openBudget(t, ns.connect(t), dir, "resume")
	evs, err := b2.Evaluate(context.Background(), mols)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != objective.Paid {
			t.Errorf("%s: %v, want paid", ev.SMILES, ev.Status)
		}
	}
	// Results may still be on their way to the stream when the lookup runs;
	// either way nothing is published again.
	if s := q2.Stats(); s.Published != 0 || s.Collected+s.Awaited != len(mols) {
		t.Errorf("second session: %+v, want nothing published and %d collected or awaited", s, len(mols))
	}
	calls, _ := fake.counts()
	for _, m := range mols {
		if calls[m] != 1 {
			t.Errorf("%s scored %d times", m, calls[m])
		}
	}
	waitEmpty(t, ns)
}

// TestWaitNotice: a run with no worker says so, naming the command that
// starts one, instead of waiting in silence.
func TestWaitNotice(t *testing.T) {
	ns := startServer(t)
	var mu sync.Mutex
	var said []string
	q, err := NewObjective(context.Background(), ns.connect(t), Options{RunID: "lonely", Task: "dock", WaitNotice: 200 * time.Millisecond,
		Warnf: func(format string, args ...any) {
			mu.Lock()
			said = append(said, fmt.Sprintf(format, args...))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := q.Score(ctx, []string{"CCO"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline's", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) == 0 || !strings.Contains(said[0], "nfbo worker -queue URL -task dock") {
		t.Errorf("said %q, want a notice naming nfbo worker", said)
	}
}
