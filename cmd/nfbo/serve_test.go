package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/labserve"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// lockedBuffer is a bytes.Buffer that a command's goroutines write through lockedWriter while the test reads it.
type lockedBuffer struct {
	objective.LockedWriter
	buf bytes.Buffer
}

func newLockedBuffer() *lockedBuffer {
	l := &lockedBuffer{}
	l.W = &l.buf
	return l
}

func (l *lockedBuffer) String() string {
	l.Lock()
	defer l.Unlock()
	return l.buf.String()
}

// startServe runs "nfbo serve" with args in the background on a free loopback port and returns its base URL;
// the server stops when the test ends.
func startServe(t *testing.T, args ...string) (base string, stderr *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newServeCmd()
	stderr = newLockedBuffer()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), io.Discard, stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Execute(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop")
		}
	})
	addr := regexp.MustCompile(`on (http://[0-9.:]+)/v1/`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, stderr)
		default:
		}
	}
	t.Fatalf("serve did not say where it listens:\n%s", stderr)
	return "", nil
}

// call sends a request and decodes the JSON answer into v; it returns the status.
func call(t *testing.T, method, url, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// TestServe runs an ask/tell run over HTTP on loopback: the server makes the run at the first ask, asks twice
// give one batch, 20 clients tell overlapping parts of it at once (every score paid once, none lost), a bad
// tell is a 400 naming its line that changes nothing, status and report read the run, and the next ask gives
// the next batch.
func TestServe(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	base, stderr := startServe(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "40",
		"-budget", "50", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)

	var first, again labserve.AskReply
	if code := call(t, "POST", base+"/v1/ask", "", &first); code != 200 || len(first.Batch) != 40 || first.Finished {
		t.Fatalf("first ask: %d %+v\n%s", code, first, stderr)
	}
	call(t, "POST", base+"/v1/ask", "", &again)
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("a second ask gave another batch")
	}
	if code := call(t, "GET", base+"/v1/ask", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/ask: %d", code)
	}

	logPath := filepath.Join(run, rundir.EvalLogFile)
	var bad map[string]string
	if code := call(t, "POST", base+"/v1/tell", "id,score\nm1,0.5\nm2,NaN\n", &bad); code != 400 ||
		!strings.Contains(bad["error"], "request body:3:") {
		t.Errorf("bad tell: %d %v", code, bad)
	}
	if b, _ := os.ReadFile(logPath); len(b) != 0 {
		t.Fatalf("a rejected tell wrote %q", b)
	}

	var wg sync.WaitGroup
	for c := range 20 {
		lo := c * 20 / 19
		var body strings.Builder
		body.WriteString("id,score\n")
		for _, m := range first.Batch[lo : lo+20] {
			fmt.Fprintf(&body, "%s,%g\n", m.ID, lengthScore(m.SMILES))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rep map[string]any
			if code := call(t, "POST", base+"/v1/tell", body.String(), &rep); code != 200 {
				t.Errorf("client %d: %d %v", c, code, rep)
			}
		}()
	}
	// Readers at the same time.
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st labserve.StatusReply
			if code := call(t, "GET", base+"/v1/status", "", &st); code != 200 || st.Task != "demo" {
				t.Errorf("status while telling: %d %+v", code, st)
			}
		}()
	}
	wg.Wait()
	smiles, scores := readLogSMILES(t, logPath)
	if len(smiles) != 40 {
		t.Fatalf("%d calls in the log after 20 overlapping tells, want 40", len(smiles))
	}
	for i, s := range smiles {
		if scores[i] != lengthScore(s) {
			t.Errorf("call %d: %s scored %v", i+1, s, scores[i])
		}
	}
	var st labserve.StatusReply
	if call(t, "GET", base+"/v1/status", "", &st); st.Calls != 40 || len(st.Awaiting) != 0 || len(st.Best) != 10 || st.Best[0].Score < st.Best[9].Score {
		t.Errorf("status: %+v", st)
	}
	resp, err := http.Get(base + "/v1/report")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(md), "demo") {
		t.Errorf("report: %d %q", resp.StatusCode, md)
	}
	resp, err = http.Get(base + "/v1/report.html")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(page), `<div class="drawing"><svg`) != 20 {
		t.Errorf("report.html: %d, %d drawings, want 20", resp.StatusCode, strings.Count(string(page), `<div class="drawing"><svg`))
	}
	var next labserve.AskReply
	if code := call(t, "POST", base+"/v1/ask", "", &next); code != 200 || len(next.Batch) == 0 || next.Batch[0].ID != "m41" {
		t.Fatalf("ask after the batch was told: %d %+v\n%s", code, next, stderr)
	}
	// The server holds the run: a tell from the command line waits for it, and gives up.
	_, _, err = runCmd(t, newTellCmd(), "id,score\nm41,1\n", "-run", run, "-wait", "100ms", "-")
	if err == nil || !strings.Contains(err.Error(), "in use by another nfbo process") {
		t.Errorf("tell while serve holds the run: %v", err)
	}
}

// TestServeNeedsToken: serve refuses an address reachable from other machines without -token-file (the rules
// are labserve.Token's, tested there).
func TestServeNeedsToken(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCmd(t, newServeCmd(), "", "-run", filepath.Join(dir, "run"), "-addr", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "-token-file") {
		t.Errorf("serve on 0.0.0.0 without a token: %v", err)
	}
}

// TestServeQueue runs an ask/tell run that scores itself on the workers of a NATS queue ("nfbo serve -queue"
// beside an "nfbo worker" with the protocol's example program): the server asks and tells by itself until the
// budget is spent, every molecule paid once with the program's score; HTTP asks and tells are refused while
// status and reports answer.
func TestServeQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("a run and a worker with Python programs")
	}
	needRDKit(t)
	needPython(t)
	url := startNATS(t, "")
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	startWorkerCmd(t, url, lengthOracle(t, dir))

	run := filepath.Join(dir, "run")
	base, stderr := startServe(t, "-run", run, "-queue", url, "-task", "demo", "-init", guacamol100, "-init-count", "20",
		"-budget", "30", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), "the run is finished"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish:\n%s", stderr)
		}
	}
	smiles, scores := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile))
	if len(smiles) != 30 {
		t.Errorf("%d calls, want the budget's 30 (20 initial molecules and 10 new)", len(smiles))
	}
	seen := map[string]bool{}
	for i, s := range smiles {
		if seen[s] || scores[i] <= 0 {
			t.Errorf("%s: paid again, or scored %v", s, scores[i])
		}
		seen[s] = true
	}
	var refused map[string]string
	if code := call(t, "POST", base+"/v1/ask", "", &refused); code != http.StatusConflict || !strings.Contains(refused["error"], "NATS queue") {
		t.Errorf("ask: %d %v, want a 409 naming the queue", code, refused)
	}
	if code := call(t, "POST", base+"/v1/tell", "id,score\nm1,1\n", &refused); code != http.StatusConflict {
		t.Errorf("tell: %d %v, want a 409", code, refused)
	}
	var st labserve.StatusReply
	if code := call(t, "GET", base+"/v1/status", "", &st); code != 200 || !st.Finished || st.Calls != 30 || len(st.Awaiting) != 0 {
		t.Errorf("status: %d %+v", code, st)
	}
}

// TestServeQueueRestart: "nfbo serve -queue" is stopped in the middle of the first batch while the worker goes
// on scoring, and started again: it collects the scores that arrived meanwhile instead of publishing those
// molecules again, and finishes the run. The worker's program receives every molecule once.
func TestServeQueueRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("a run and a worker with Python programs")
	}
	needRDKit(t)
	needPython(t)
	url := startNATS(t, "")
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	receipts := filepath.Join(dir, "receipts")
	slow := strings.Replace(exampleOracle, "for line in sys.stdin:", "import time\nfor line in sys.stdin:", 1)
	slow = strings.Replace(slow, "            else:\n", "            else:\n                time.sleep(0.2)\n                open("+
		strconv.Quote(receipts)+", \"a\").write(smi + \"\\n\")\n", 1)
	script := filepath.Join(dir, "slow.py")
	if err := os.WriteFile(script, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	python, _ := exec.LookPath("python3")
	startWorkerCmd(t, url, python+" "+script)

	run := filepath.Join(dir, "run")
	args := []string{"-addr", "127.0.0.1:0", "-run", run, "-queue", url, "-task", "demo", "-init", guacamol100, "-init-count", "20",
		"-budget", "30", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir}
	logPath := filepath.Join(run, rundir.EvalLogFile)
	first := newServeCmd()
	ferr := newLockedBuffer()
	first.Stdin, first.Stdout, first.Stderr = strings.NewReader(""), io.Discard, ferr
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Execute(fctx, args) }()
	for deadline := time.Now().Add(time.Minute); logLines(logPath) < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no scores told:\n%s", ferr)
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first server: %v, want it stopped\n%s", err, ferr)
	}
	if n := logLines(logPath); n >= 20 {
		t.Fatalf("the first server told %d scores: stopped too late to test anything", n)
	}
	time.Sleep(2 * time.Second) // the worker scores the rest of the batch meanwhile

	_, stderr := startServe(t, args[2:]...)
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), "the run is finished"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish:\n%s", stderr)
		}
	}
	smiles, _ := readLogSMILES(t, logPath)
	if len(smiles) != 30 {
		t.Errorf("%d calls, want 30", len(smiles))
	}
	b, _ := os.ReadFile(receipts)
	got := map[string]int{}
	for _, s := range strings.Fields(string(b)) {
		got[s]++
	}
	for s, n := range got {
		if n > 1 {
			t.Errorf("the program received %s %d times", s, n)
		}
	}
	if len(got) != 30 {
		t.Errorf("the program received %d molecules, want 30", len(got))
	}
}

// logLines returns the number of lines of the file at path (0 when it is missing).
func logLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// startWorkerCmd runs "nfbo worker" for task demo with the objective program cmd (two molecules at a time) on the
// NATS server url until the test ends; its output is logged when the test fails.
func startWorkerCmd(t *testing.T, url, cmd string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	out := newLockedBuffer()
	w := newWorkerCmd()
	w.Stdout, w.Stderr, w.Stdin = out, out, strings.NewReader("")
	wg.Go(func() {
		w.Execute(ctx, []string{"-queue", url, "-task", "demo", "-objective-cmd", cmd, "-concurrency", "2"})
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("worker:\n%s", out)
		}
	})
}
