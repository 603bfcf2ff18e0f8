//go:build unix

package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
)

// Environment of the helper processes.
const (
	envHelperURL = "NFBO_QUEUE_HELPER_URL" // the server; set only in helpers
	envHelperDir = "NFBO_QUEUE_HELPER_DIR" // the optimiser helper's run directory
	envHelperLeg = "NFBO_QUEUE_HELPER_LEG" // the optimiser helper's leg, naming its stats file
)

// helper starts this test binary running only the test named run, with
// env added, its output kept for the log of a failing test.
func helper(t *testing.T, run string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s helper output:\n%s", run, out)
		}
	})
	return cmd, out
}

// TestWorkerHelper is a worker process of TestWorkerKill9: nfbo worker as
// the CLI runs it, the pool of one program (this binary as the oracle) on
// the server $NFBO_QUEUE_HELPER_URL, with a 2 s ack wait, until killed.
func TestWorkerHelper(t *testing.T) {
	url := os.Getenv(envHelperURL)
	if url == "" || os.Getenv(envHelperDir) != "" {
		t.Skip("helper process of TestWorkerKill9")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NFBO_QUEUE_ORACLE", "1") // for the program only
	pool, err := objective.NewCommand([]string{exe}, objective.PoolOptions{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	nc, err := Connect(url, ConnectOptions{Warnf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	err = Serve(context.Background(), nc, pool.Objective("t"), WorkerOptions{Task: "t", AckWait: 2 * time.Second,
		Report: func(ev Event) { t.Logf("%s %s: %v", ev.Outcome, ev.SMILES, ev.Score) }})
	t.Fatal(err)
}

// TestWorkerKill9: two worker processes score a batch with a slow program
// (1 s a molecule); one is killed with SIGKILL while its program scores a
// molecule. That molecule is delivered again after the ack wait, scored by
// the other worker, and paid for once; every other molecule is scored once.
func TestWorkerKill9(t *testing.T) {
	if os.Getenv(envHelperURL) != "" {
		t.Skip("inside a helper")
	}
	ns := startServer(t)
	recv := filepath.Join(t.TempDir(), "recv")
	env := []string{envHelperURL + "=" + ns.url(), "NFBO_QUEUE_RECV=" + recv, "NFBO_QUEUE_DELAY=1s"}
	victim, _ := helper(t, "TestWorkerHelper", append(env, "NFBO_QUEUE_TAG=A")...)
	helper(t, "TestWorkerHelper", append(env, "NFBO_QUEUE_TAG=B")...)

	dir := t.TempDir()
	b, _ := openBudget(t, ns.connect(t), dir, "workerkill")
	mols := molecules(6)
	done := make(chan error, 1)
	go func() {
		_, err := b.Evaluate(context.Background(), mols)
		done <- err
	}()
	var killed string
	waitFor(t, 60*time.Second, "worker A's program to receive a molecule", func() bool {
		tags, got := receipts(t, recv)
		for i, tag := range tags {
			if tag == "A" {
				killed = got[i]
				return true
			}
		}
		return false
	})
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the batch did not finish within 90s of the kill")
	}

	tags, got := receipts(t, recv)
	n := map[string]int{}
	for i, s := range got {
		n[s]++
		if tags[i] == "A" && s != killed {
			t.Errorf("worker A received %s after the kill", s)
		}
	}
	for _, m := range mols {
		want := 1
		if m == killed {
			want = 2 // worker A, killed, then worker B
		}
		if n[m] != want {
			t.Errorf("%s received %d times, want %d", m, n[m], want)
		}
	}
	inLog, recs := logged(t, filepath.Join(dir, "evaluations.jsonl"))
	if len(recs) != len(mols) {
		t.Errorf("%d records, want %d", len(recs), len(mols))
	}
	for _, m := range mols {
		if inLog[m] != 1 {
			t.Errorf("%s is in the log %d times", m, inLog[m])
		}
	}
	t.Logf("killed worker A on %s; the batch finished %v later", killed, time.Since(killedAt).Round(time.Millisecond))
}

// TestOptimiserHelper is one leg of TestOptimiserKill9: a Budget on the log
// in $NFBO_QUEUE_HELPER_DIR over the queue objective evaluates
// molecules(10), then writes the objective's Stats to stats-LEG.json there.
func TestOptimiserHelper(t *testing.T) {
	url, dir := os.Getenv(envHelperURL), os.Getenv(envHelperDir)
	if url == "" || dir == "" {
		t.Skip("helper process of TestOptimiserKill9")
	}
	nc, err := Connect(url, ConnectOptions{Warnf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, q := openBudget(t, nc, dir, "optkill")
	if _, err := b.Evaluate(context.Background(), molecules(10)); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(q.Stats())
	if err := os.WriteFile(filepath.Join(dir, "stats-"+os.Getenv(envHelperLeg)+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOptimiserKill9: the optimiser (a process) is killed with SIGKILL
// while the workers (in this process) are scoring its batch; they go on.
// The resumed optimiser publishes nothing: it collects the results that
// arrived while it was down and waits for the molecules still being
// scored. Every molecule is scored once and in the log once.
func TestOptimiserKill9(t *testing.T) {
	if os.Getenv(envHelperURL) != "" {
		t.Skip("inside a helper")
	}
	ns := startServer(t)
	fake := newFake(300 * time.Millisecond)
	startWorkers(t, ns, 2, fake, WorkerOptions{Task: "t"})
	dir := t.TempDir()
	logPath := filepath.Join(dir, "evaluations.jsonl")
	env := []string{envHelperURL + "=" + ns.url(), envHelperDir + "=" + dir}

	first, _ := helper(t, "TestOptimiserHelper", append(env, envHelperLeg+"=0")...)
	waitFor(t, 60*time.Second, "2 results in the log", func() bool { return logLines(logPath) >= 2 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	atKill := logLines(logPath)
	// Let results arrive with nobody to collect them.
	waitFor(t, 30*time.Second, "2 molecules scored after the kill", func() bool { _, n := fake.counts(); return n >= atKill+3 })

	second, out := helper(t, "TestOptimiserHelper", append(env, envHelperLeg+"=1")...)
	if err := second.Wait(); err != nil {
		t.Fatalf("resumed optimiser: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "stats-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Stats
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.Published != 0 || s.Collected < 1 || s.Collected+s.Received != 10-atKill {
		t.Errorf("resumed optimiser: %+v; want nothing published, at least 1 collected, %d collected or received", s, 10-atKill)
	}
	calls, _ := fake.counts()
	inLog, recs := logged(t, logPath)
	if len(recs) != 10 {
		t.Errorf("%d records, want 10", len(recs))
	}
	for _, m := range molecules(10) {
		if calls[m] != 1 || inLog[m] != 1 {
			t.Errorf("%s: scored %d times, %d times in the log; want 1 and 1", m, calls[m], inLog[m])
		}
	}
	if !strings.Contains(out.String(), "PASS") {
		t.Errorf("resumed optimiser:\n%s", out)
	}
	t.Logf("killed with %d of 10 in the log; resumed: %+v", atKill, s)
}
