package objective

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

// molecules returns n distinct test molecules, "C0" to "C<n-1>".
func molecules(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("C%d", i)
	}
	return out
}

// received returns the molecules the test oracle appended to recv, in
// order (see testOracle).
func received(t *testing.T, recv string) []recvLine {
	t.Helper()
	f, err := os.Open(recv)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recvLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r recvLine
		if _, err := fmt.Sscan(sc.Text(), &r.tag, &r.pid, &r.req, &r.smiles); err != nil {
			t.Fatalf("%s: line %q: %v", recv, sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// recvLine is one molecule received by the test oracle.
type recvLine struct {
	tag      string
	pid, req int
	smiles   string
}

// A program that fails every call (exits at once, hangs past the timeout,
// answers NaN for everything, garbles every answer) stops the batch with a
// *ProgramError after a bounded number of restarts, and nothing is paid or
// logged; once the program is fixed, a Budget on the same log (a resumed
// run) scores every molecule.
func TestBrokenProgramStops(t *testing.T) {
	for _, tc := range []struct {
		mode         string
		timeout      time.Duration
		want         []string
		wantRestarts bool
	}{
		{"exit", 0, []string{"exit status 3", `last line on stderr: "oracle: cannot load the model"`, "requests in a row"}, true},
		{"hang", 200 * time.Millisecond, []string{"did not answer within 200ms", "requests in a row"}, true},
		{"nan", 0, []string{"no usable score for any of the 50 molecules", "NaN"}, false},
		{"garble", 0, []string{"not a JSON response", "requests in a row"}, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("NFBO_TEST_MODE", tc.mode)
			pool := newTestCommand(t, PoolOptions{Workers: 2, Timeout: tc.timeout})
			path := filepath.Join(t.TempDir(), "evals.jsonl")
			b, err := OpenBudget(path, pool.Objective("x"), upperCanon{}, BudgetOptions{Task: "x"})
			if err != nil {
				t.Fatal(err)
			}
			in := molecules(100)
			start := time.Now()
			evs, err := b.Evaluate(context.Background(), in)
			elapsed := time.Since(start)
			var pe *ProgramError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ProgramError", err)
			}
			t.Logf("%v (after %v)", err, elapsed)
			for _, w := range append(tc.want, "objective program", "nothing was paid") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q", w)
				}
			}
			for i, e := range evs {
				if e.Status != NotScored {
					t.Errorf("molecule %d: status %v, want not scored", i, e.Status)
				}
			}
			recs, _, _, rerr := rundir.ReadLog(path)
			if rerr != nil || len(recs) != 0 || b.Calls() != 0 {
				t.Errorf("log holds %d records (err %v), Calls() = %d; want nothing paid", len(recs), rerr, b.Calls())
			}
			// MaxFailures (9 by default) failures in a row stop it; the other
			// worker's request in flight may add one.
			st := pool.Stats()
			if st.Restarts > 10 || (tc.wantRestarts != (st.Restarts > 0)) {
				t.Errorf("%d restarts", st.Restarts)
			}
			b.Close()

			// The program is fixed; the run is resumed on the same log.
			t.Setenv("NFBO_TEST_MODE", "")
			fixed := newTestCommand(t, PoolOptions{Workers: 2})
			b, err = OpenBudget(path, fixed.Objective("x"), upperCanon{}, BudgetOptions{Task: "x"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			evs, err = b.Evaluate(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range evs {
				if e.Status != Paid || e.Score != float64(len(in[i]))+0.001 {
					t.Errorf("after the fix, %s: %+v", in[i], e)
				}
			}
			if b.Calls() != len(in) {
				t.Errorf("Calls() = %d, want %d", b.Calls(), len(in))
			}
		})
	}
}

// A molecule that crashes the program, or gets NaN, while the others of
// its batch are answered is an isolated failure: it scores 0 with a
// reason, is neither paid for nor logged, is not sent again while the
// Budget is open, and is sent again by a Budget opened on the same log.
// NaN restarts nothing.
func TestIsolatedFailureNotPaid(t *testing.T) {
	dir := t.TempDir()
	recv := filepath.Join(dir, "recv")
	t.Setenv("NFBO_TEST_RECV", recv)
	pool := newTestCommand(t, PoolOptions{Workers: 1, ChunkSize: 8})
	path := filepath.Join(dir, "evals.jsonl")
	b, err := OpenBudget(path, pool.Objective(""), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := molecules(20)
	in[3] = "CRASH"
	evs, err := b.Evaluate(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs[:5]), "paid,paid,paid,failed,paid"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if e := evs[3]; e.Score != 0 || e.Call != 0 || !strings.Contains(e.Reason, "no answer") {
		t.Errorf("CRASH: %+v", e)
	}
	restarts := pool.Stats().Restarts
	evs, err = b.Evaluate(ctx, []string{"C0", "NAN", "C100"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs), "cached,failed,paid"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if !strings.Contains(evs[1].Reason, "NaN") {
		t.Errorf("NAN: reason %q", evs[1].Reason)
	}
	if r := pool.Stats().Restarts; r != restarts {
		t.Errorf("a NaN answer restarted the worker %d times", r-restarts)
	}
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil || len(recs) != 20 || b.Calls() != 20 {
		t.Fatalf("log holds %d records (%v), Calls() = %d; want 20", len(recs), err, b.Calls())
	}
	for _, r := range recs {
		if r.SMILES == "CRASH" || r.SMILES == "NAN" {
			t.Errorf("unanswered %s logged: %+v", r.SMILES, r)
		}
	}

	// Asked again while the Budget is open: answered from memory, not sent.
	before := len(received(t, recv))
	evs, err = b.Evaluate(ctx, []string{"CRASH", "NAN", "nan"})
	if err != nil || statuses(evs) != "failed,failed,failed" {
		t.Errorf("again: %s, %v", statuses(evs), err)
	}
	if n := len(received(t, recv)); n != before {
		t.Errorf("%d molecules sent again", n-before)
	}
	b.Close()

	// A resumed run (a new Budget on the log) asks for them once more.
	b, err = OpenBudget(path, pool.Objective(""), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	evs, err = b.Evaluate(ctx, []string{"NAN", "C5"})
	if err != nil || statuses(evs) != "failed,cached" {
		t.Errorf("after reopening: %s, %v", statuses(evs), err)
	}
	if n := len(received(t, recv)); n != before+1 {
		t.Errorf("after reopening, %d molecules sent, want 1 (NAN)", n-before)
	}
}

// With the pool as objective, every request's answers are in the log,
// synced, before that worker's next request: the test oracle refuses a
// request when a molecule it answered before is not in the log.
func TestBudgetLogsEachRequest(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "evals.jsonl")
			t.Setenv("NFBO_TEST_LOG", path)
			pool := newTestCommand(t, PoolOptions{Workers: workers, ChunkSize: 5})
			b, err := OpenBudget(path, pool.Objective(""), upperCanon{}, BudgetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			in := molecules(40)
			in[17] = "NAN" // not logged, and no reason to refuse
			evs, err := b.Evaluate(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range evs {
				if want := Paid; i != 17 && e.Status != want {
					t.Errorf("%s: %v", in[i], e.Status)
				}
			}
			if b.Calls() != 39 {
				t.Errorf("Calls() = %d, want 39", b.Calls())
			}
		})
	}
}

// {"ok": false} stops the batch at once, naming the program; the requests
// answered before it are paid and logged.
func TestRefusedRequestStops(t *testing.T) {
	pool := newTestCommand(t, PoolOptions{Workers: 1, ChunkSize: 2})
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	b, err := OpenBudget(path, pool.Objective(""), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	evs, err := b.Evaluate(context.Background(), []string{"a", "b", "c", "d", "REFUSE", "e", "f"})
	if err == nil || !strings.Contains(err.Error(), "refused the request: REFUSE refused") || !strings.Contains(err.Error(), "objective program") {
		t.Fatalf("err = %v", err)
	}
	if got, want := statuses(evs), "paid,paid,paid,paid,not scored,not scored,not scored"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if st := pool.Stats(); st.Restarts != 0 {
		t.Errorf("%d restarts after a refusal", st.Restarts)
	}
}

// Records that an earlier nfbo wrote for molecules its objective never
// answered are dropped when the log is opened, with a warning and a copy
// of the log as it was; the molecules are then scored again and paid once.
func TestBudgetDropsLegacyNoAnswer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "evals.jsonl")
	rec := func(call int, smiles string, score float64, reason string) string {
		return fmt.Sprintf(`{"call":%d,"smiles":%q,"canonical":%q,"score":%v,"error":%q,"time":"2026-01-01T00:00:00Z","task":"len"}`+"\n",
			call, smiles, strings.ToUpper(smiles), score, reason)
	}
	old := rec(1, "c", 0.1, "") +
		rec(2, "cc", 0, "worker failed on this molecule 3 times: worker exited (pid 7) before answering") +
		rec(3, "ccc", 0.3, "") +
		rec(4, "cccc", 0, "worker failed on this molecule: worker (pid 9) did not answer within 5m0s; killed") +
		rec(5, "bad1", 0, "cannot score bad1")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	warnf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	var calls atomic.Int64
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Task: "len", Warnf: warnf})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// An earlier nfbo's log: its records carry no check (said once), and those of unanswered molecules are dropped.
	if len(warnings) != 2 || !strings.Contains(warnings[0], "first 5 records were written by an earlier nfbo without a check") ||
		!strings.Contains(warnings[1], "dropped 2 of its 5 records") || !strings.Contains(warnings[1], path+".orig") {
		t.Errorf("warnings %q", warnings)
	}
	if kept, err := os.ReadFile(path + ".orig"); err != nil || string(kept) != old {
		t.Errorf("the log as it was is not kept: %v", err)
	}
	if b.Calls() != 3 {
		t.Errorf("Calls() = %d, want the 3 answered", b.Calls())
	}
	evs, err := b.Evaluate(context.Background(), []string{"cc", "ccc", "cccc", "bad1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs), "paid,cached,paid,cached"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if evs[0].Score != 0.2 || evs[0].Call != 4 || evs[2].Call != 5 || calls.Load() != 2 {
		t.Errorf("re-scored: %+v; objective called %d times", evs, calls.Load())
	}
	recs, _, torn, err := rundir.ReadLog(path)
	if err != nil || torn != 0 || len(recs) != 5 {
		t.Fatalf("log: %d records, torn %d, %v", len(recs), torn, err)
	}
	for i, r := range recs {
		if r.NoAnswer() || r.Call != i+1 {
			t.Errorf("record %d: %+v", i+1, r)
		}
	}
}

// An interrupt while a request is in flight waits for its answer, which is paid and logged, and sends no
// further request: the work the program did is paid for once, not asked for again after a resume.
func TestCancelPaysTheAnswerInFlight(t *testing.T) {
	dir := t.TempDir()
	path, recv := filepath.Join(dir, "evals.jsonl"), filepath.Join(dir, "recv")
	t.Setenv("NFBO_TEST_RECV", recv)
	t.Setenv("NFBO_TEST_DELAY", "400ms")
	pool := newTestCommand(t, PoolOptions{Workers: 1, ChunkSize: 3, Timeout: time.Minute})
	b, err := OpenBudget(path, pool.Objective(""), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the first request is in the program's hands.
		for len(received(t, recv)) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	evs, err := b.Evaluate(ctx, molecules(9))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got, want := statuses(evs), "paid,paid,paid,not scored,not scored,not scored,not scored,not scored,not scored"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil || len(recs) != 3 {
		t.Errorf("log holds %d records (%v), want the 3 answered", len(recs), err)
	}
	if got := received(t, recv); len(got) != 3 {
		t.Errorf("the program received %d molecules, want only the 3 of the request in flight", len(got))
	}
}

// TestBudgetUnwrittenAnswers: answers that could not be appended to the log (a full disk) were lost, and paid for
// again after -resume; they are printed as checked records, and appended by hand they are the log's own: nothing
// is paid twice (issue #56).
func TestBudgetUnwrittenAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var warnings []string
	warnf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	var calls atomic.Int64
	opts := BudgetOptions{Task: "len", Warnf: warnf}
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Evaluate(context.Background(), []string{"a", "bb"}); err != nil {
		t.Fatal(err)
	}
	// The disk fills: every write fails from now on.
	end, _ := b.f.Seek(0, io.SeekCurrent)
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ro.Seek(end, io.SeekStart)
	b.f.Close()
	b.f = ro
	if _, err := b.Evaluate(context.Background(), []string{"ccc", "dddd"}); err == nil || !strings.Contains(err.Error(), "appending to evaluation log") {
		t.Fatalf("a failed append: %v", err)
	}
	b.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "paid answers that could not be written") || strings.Count(warnings[0], `"crc":"`) != 2 {
		t.Fatalf("warnings %q", warnings)
	}
	_, lines, _ := strings.Cut(warnings[0], ":\n")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(lines + "\n") // what the user does once there is room
	f.Close()
	paid := calls.Load()
	b, err = OpenBudget(path, countingObjective(&calls), upperCanon{}, opts)
	if err != nil {
		t.Fatalf("the log with the printed records appended: %v", err)
	}
	defer b.Close()
	if _, err := b.Evaluate(context.Background(), []string{"ccc", "dddd"}); err != nil || calls.Load() != paid {
		t.Errorf("the printed answers appended: %v, %d molecules paid again", err, calls.Load()-paid)
	}
}
