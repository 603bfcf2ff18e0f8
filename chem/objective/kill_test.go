//go:build unix

package objective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
	"github.com/nfbo/nfbo/rundir"
)

// killDirEnv names the run directory of TestBudgetKill9's helper process.
const killDirEnv = "NFBO_OBJECTIVE_KILL_DIR"

// killBatches is the work of one run of the kill harness: 6 batches of 150
// molecules, each split into requests of at most 64.
func killBatches() [][]string {
	all := molecules(900)
	var out [][]string
	for lo := 0; lo < len(all); lo += 150 {
		out = append(out, all[lo:lo+150])
	}
	return out
}

// TestBudgetKill9Helper is one leg of TestBudgetKill9: it evaluates
// killBatches through a Budget on the log in $NFBO_OBJECTIVE_KILL_DIR,
// with the test oracle as the objective program.
func TestBudgetKill9Helper(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("helper process of TestBudgetKill9")
	}
	workers, err := strconv.Atoi(os.Getenv("NFBO_KILL_WORKERS"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NFBO_TEST_ORACLE", "1") // for the workers only
	pool, err := NewCommand([]string{exe}, PoolOptions{Workers: workers, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b, err := OpenBudget(filepath.Join(dir, "evals.jsonl"), pool.Objective("k"), upperCanon{}, BudgetOptions{Task: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, batch := range killBatches() {
		if _, err := b.Evaluate(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBudgetKill9 kills a process that evaluates batches of 150 molecules
// (3 requests each) through a Budget and a pool of 1 or 2 workers, with
// SIGKILL at random moments, and starts it again until it finishes. The
// objective program records every molecule it receives, with the leg and
// the request, so the test counts what the objective was asked, not only
// what the log holds. It asserts:
//
//   - a molecule that was in the log when a leg started is never sent in
//     that leg (an answer on disk is never paid for again);
//   - within a leg no molecule is sent twice;
//   - the molecules a killed leg sent but did not log (answered or not)
//     belong to at most one request per worker: the request in flight at
//     the kill. Every answer before it is on disk, because a worker sends
//     its next request only after the previous answer is synced;
//   - the last, uninterrupted leg loses nothing, and the log ends with every
//     molecule exactly once.
//
// So the molecules sent more than once are exactly those of the requests
// in flight at the kills: at most kills × workers × 64.
func TestBudgetKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts many processes")
	}
	if os.Getenv(killDirEnv) != "" {
		t.Skip("inside the helper")
	}
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			testBudgetKill9(t, workers)
		})
	}
}

func testBudgetKill9(t *testing.T, workers int) {
	dir := t.TempDir()
	recv := filepath.Join(dir, "recv")
	logPath := filepath.Join(dir, "evals.jsonl")
	rng := rand.New(rand.NewPCG(uint64(workers), 11))
	const maxKills = 12
	var logs []map[string]bool // the log's molecules after each leg
	kills := 0
	for leg := 0; ; leg++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBudgetKill9Helper$", "-test.count=1")
		cmd.Env = append(os.Environ(), killDirEnv+"="+dir, "NFBO_KILL_WORKERS="+strconv.Itoa(workers),
			"NFBO_TEST_RECV="+recv, "NFBO_TEST_TAG="+strconv.Itoa(leg), "NFBO_TEST_DELAY=100ms")
		out := &bytes.Buffer{} // one writer for both: exec calls it from one goroutine at a time
		cmd.Stdout, cmd.Stderr = out, out
		var timer <-chan time.Time
		if leg < maxKills {
			timer = time.After(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		}
		killed, err := proctest.RunOrKill(cmd, timer)
		if err != nil {
			t.Fatalf("leg %d: %v\n%s", leg, err, out.String())
		}
		finished := !killed
		if killed {
			kills++
		}
		recs, _, _, err := rundir.ReadLog(logPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after leg %d: %v", leg, err)
		}
		in := map[string]bool{}
		for _, r := range recs {
			if in[r.SMILES] {
				t.Fatalf("after leg %d: %s paid twice", leg, r.SMILES)
			}
			in[r.SMILES] = true
		}
		logs = append(logs, in)
		if finished {
			break
		}
	}
	if kills < 3 {
		t.Fatalf("only %d legs were killed: the test proved little", kills)
	}

	got := received(t, recv)
	byLeg := make([][]recvLine, len(logs))
	for _, r := range got {
		leg, err := strconv.Atoi(r.tag)
		if err != nil || leg >= len(logs) {
			t.Fatalf("received line tagged %q", r.tag)
		}
		byLeg[leg] = append(byLeg[leg], r)
	}
	lostTotal, midBatch := 0, 0
	for leg, lines := range byLeg {
		before := map[string]bool{}
		if leg > 0 {
			before = logs[leg-1]
		}
		sent := map[string]bool{}
		type reqKey struct{ pid, req int }
		lostReqs := map[reqKey]int{}
		for _, r := range lines {
			if before[r.smiles] {
				t.Errorf("leg %d: %s was in the log already, and was sent again", leg, r.smiles)
			}
			if sent[r.smiles] {
				t.Errorf("leg %d: %s sent twice", leg, r.smiles)
			}
			sent[r.smiles] = true
			if !logs[leg][r.smiles] {
				lostReqs[reqKey{r.pid, r.req}]++
			}
		}
		lost := 0
		for _, n := range lostReqs {
			lost += n
		}
		lostTotal += lost
		if len(lostReqs) > workers {
			t.Errorf("leg %d: %d molecules of %d requests were sent but not logged; want at most one request per worker (%d)",
				leg, lost, len(lostReqs), workers)
		}
		if leg == len(byLeg)-1 && lost > 0 {
			t.Errorf("the uninterrupted last leg lost %d molecules", lost)
		}
		if lost > 0 && len(logs[leg]) > len(before) && len(logs[leg])%150 != 0 {
			midBatch++ // killed with part of a batch on disk and a request in flight
		}
	}
	final := logs[len(logs)-1]
	if len(final) != 900 {
		t.Errorf("the log holds %d molecules, want 900", len(final))
	}
	for _, m := range molecules(900) {
		if !final[m] {
			t.Errorf("%s is not in the log", m)
		}
	}
	repeats := len(got) - len(final)
	t.Logf("%d legs, %d kills (%d with part of a batch on disk): the objective received %d molecules for %d distinct, "+
		"%d repeats; %d molecules were sent but not logged by the legs killed", len(logs), kills, midBatch, len(got), len(final),
		repeats, lostTotal)
	if repeats != lostTotal {
		t.Errorf("%d repeats, but %d molecules were lost in flight", repeats, lostTotal)
	}
	if repeats > kills*workers*64 {
		t.Errorf("%d repeats after %d kills with %d workers: more than the requests in flight", repeats, kills, workers)
	}
}
