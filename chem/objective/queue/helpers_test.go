package queue

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// TestMain lets the test binary act as an objective program
// (NFBO_QUEUE_ORACLE=1, see oracle) and as the helper processes of the
// kill -9 tests.
func TestMain(m *testing.M) {
	if os.Getenv("NFBO_QUEUE_ORACLE") == "1" {
		oracle()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// oracle speaks the objective protocol (docs/objective-protocol.md) and
// scores a SMILES as its length. It appends "TAG SMILES" to the file
// $NFBO_QUEUE_RECV ("-" without a tag) for every molecule it receives, before scoring it, sleeps
// $NFBO_QUEUE_DELAY per molecule, and exits with status 3 on POISON, every
// time.
func oracle() {
	delay, _ := time.ParseDuration(os.Getenv("NFBO_QUEUE_DELAY"))
	tag := os.Getenv("NFBO_QUEUE_TAG")
	if tag == "" {
		tag = "-"
	}
	var recv *os.File
	if path := os.Getenv("NFBO_QUEUE_RECV"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			panic(err)
		}
		recv = f
	}
	sc := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var req struct {
			ID     int64    `json:"id"`
			Op     string   `json:"op"`
			SMILES []string `json:"smiles"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.Op != "score" {
			enc.Encode(map[string]any{"id": req.ID, "ok": false, "error": "not a score request"})
			continue
		}
		scores := make([]float64, len(req.SMILES))
		for i, s := range req.SMILES {
			if recv != nil {
				fmt.Fprintf(recv, "%s %s\n", tag, s)
			}
			if s == "POISON" {
				os.Exit(3)
			}
			time.Sleep(delay)
			scores[i] = float64(len(s))
		}
		enc.Encode(map[string]any{"id": req.ID, "ok": true, "scores": scores})
	}
}

// receipts reads an oracle's $NFBO_QUEUE_RECV file: the molecules received,
// with the tag of the process that received each, in order.
func receipts(t *testing.T, path string) (tags, smiles []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if tag, s, ok := strings.Cut(line, " "); ok {
			tags, smiles = append(tags, tag), append(smiles, s)
		}
	}
	return tags, smiles
}

// natsServer is an embedded nats-server with JetStream, storing in a
// temporary directory, on a random port that a restart keeps.
type natsServer struct {
	t    testing.TB
	opts server.Options
	s    *server.Server
}

// startServer starts an embedded server, shut down when the test ends.
func startServer(t testing.TB) *natsServer {
	t.Helper()
	ns := &natsServer{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}}
	ns.start()
	// The port the server chose, so that a restart listens where the
	// clients reconnect.
	ns.opts.Port = ns.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(ns.stop)
	return ns
}

func (ns *natsServer) start() {
	ns.t.Helper()
	opts := ns.opts
	s, err := server.NewServer(&opts)
	if err != nil {
		ns.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		ns.t.Fatal("nats-server did not start within 20s")
	}
	ns.s = s
}

func (ns *natsServer) stop() {
	if ns.s != nil {
		ns.s.Shutdown()
		ns.s.WaitForShutdown()
		ns.s = nil
	}
}

// restart stops the server and starts it again on the same port and store.
func (ns *natsServer) restart(down time.Duration) {
	ns.t.Helper()
	ns.stop()
	time.Sleep(down)
	ns.start()
}

func (ns *natsServer) url() string { return ns.s.ClientURL() }

// connect connects to the server, closed when the test ends.
func (ns *natsServer) connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := Connect(ns.url(), ConnectOptions{Name: t.Name(), Warnf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// sameCanon is a Canonicalizer that keeps every SMILES as it is; "" is
// invalid.
type sameCanon struct{}

func (sameCanon) Canonicalize(_ context.Context, smiles []string, _ bool) ([]objective.Canonical, error) {
	out := make([]objective.Canonical, len(smiles))
	for i, s := range smiles {
		if s == "" {
			out[i].Reason = "empty SMILES"
		} else {
			out[i].SMILES = s
		}
	}
	return out, nil
}

// fakeObjective scores a SMILES as its length after a delay, counts the
// molecules it is asked for, and gives no answer (Result.Failed) for POISON.
type fakeObjective struct {
	delay time.Duration

	mu    sync.Mutex
	calls map[string]int
}

func newFake(delay time.Duration) *fakeObjective {
	return &fakeObjective{delay: delay, calls: map[string]int{}}
}

func (f *fakeObjective) Score(ctx context.Context, smiles []string) ([]objective.Result, error) {
	out := make([]objective.Result, len(smiles))
	for i, s := range smiles {
		f.mu.Lock()
		f.calls[s]++
		f.mu.Unlock()
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s == "POISON" {
			out[i] = objective.Result{Reason: "the program crashed", Done: true, Failed: true}
			continue
		}
		out[i] = objective.Result{Score: float64(len(s)), Done: true}
	}
	return out, nil
}

// counts returns how often each molecule was asked for, and the total.
func (f *fakeObjective) counts() (map[string]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	c := map[string]int{}
	for s, k := range f.calls {
		c[s] = k
		n += k
	}
	return c, n
}

// startWorkers runs n workers in this process, each on a connection of
// its own, until the test ends.
func startWorkers(t testing.TB, ns *natsServer, n int, obj objective.Objective, opts WorkerOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		nc := ns.connect(t)
		o := opts
		o.Name = fmt.Sprintf("worker %d", i)
		o.Warnf = t.Logf
		if o.Report == nil && testing.Verbose() {
			o.Report = func(ev Event) {
				t.Logf("worker %d: %s %s (run %s, attempt %d): %v %s", i, ev.Outcome, ev.SMILES, ev.Run, ev.Delivery, ev.Score, ev.Reason)
			}
		}
		wg.Go(func() {
			if err := Serve(ctx, nc, obj, o); err != nil && ctx.Err() == nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// molecules returns n distinct fake SMILES.
func molecules(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "C" + strings.Repeat("C", i%7) + "O" + strconv.Itoa(i)
	}
	return out
}

// logged reads an evaluation log and returns how often each molecule is in
// it; it fails the test on a damaged log.
func logged(t *testing.T, path string) (map[string]int, []rundir.Record) {
	t.Helper()
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range recs {
		n[r.Canonical]++
	}
	return n, recs
}

// logLines counts the complete lines of a file that may not exist yet.
func logLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openBudget opens a Budget over a queue objective of run id on nc, its log
// in dir.
func openBudget(t *testing.T, nc *nats.Conn, dir, run string) (*objective.Budget, *Objective) {
	t.Helper()
	q, err := NewObjective(context.Background(), nc, Options{RunID: run, Task: "t", Canon: sameCanon{}, Warnf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	b, err := objective.OpenBudget(filepath.Join(dir, "evaluations.jsonl"), q, sameCanon{},
		objective.BudgetOptions{Task: "t", Warnf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, q
}
