package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/chem/objective"
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
	writeTinyModel(t, dir)
	run := filepath.Join(dir, "run")
	base, stderr := startServe(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "40",
		"-budget", "50", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)

	var first, again askReply
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
			var st statusReply
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
	var st statusReply
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
	var next askReply
	if code := call(t, "POST", base+"/v1/ask", "", &next); code != 200 || len(next.Batch) == 0 || next.Batch[0].ID != "m41" {
		t.Fatalf("ask after the batch was told: %d %+v\n%s", code, next, stderr)
	}
	// The server holds the run: a tell from the command line waits for it, and gives up.
	_, _, err = runCmd(t, newTellCmd(), "id,score\nm41,1\n", "-run", run, "-wait", "100ms", "-")
	if err == nil || !strings.Contains(err.Error(), "in use by another nfbo process") {
		t.Errorf("tell while serve holds the run: %v", err)
	}
}

func TestServeToken(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "token")
	os.WriteFile(tokenPath, []byte("0123456789abcdef0123\n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	for _, c := range []struct {
		addr, file string
		ok         bool
	}{
		{"127.0.0.1:0", "", true},
		{"localhost:8080", "", true},
		{"[::1]:0", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"192.168.1.5:80", "", false},
		{"0.0.0.0:8080", tokenPath, true},
		{"0.0.0.0:8080", short, false},
		{"0.0.0.0:8080", filepath.Join(dir, "none"), false},
	} {
		_, err := serveToken(c.addr, c.file)
		if (err == nil) != c.ok {
			t.Errorf("serveToken(%q, %q): %v", c.addr, c.file, err)
		}
	}
	_, _, err := runCmd(t, newServeCmd(), "", "-run", filepath.Join(dir, "run"), "-addr", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "-token-file") {
		t.Errorf("serve on 0.0.0.0 without a token: %v", err)
	}

	s := &labServer{dir: dir, token: "0123456789abcdef0123"}
	srv := s.handler()
	for _, c := range []struct {
		auth string
		code int
	}{
		{"", 401}, {"Bearer wrong", 401}, {"Bearer", 401}, {"Bearer0123456789abcdef0123", 401},
		{"Basic 0123456789abcdef0123", 401}, {"Basic MDEyMzQ1Njc4OWFiY2RlZjAxMjM=", 401}, {"Bearer 0123456789abcdef012", 401},
		{"Bearer 0123456789abcdef0123 x", 401},
		// The scheme is case-insensitive (RFC 7235 section 2.1), and one or more spaces come before the token.
		{"Bearer 0123456789abcdef0123", 409}, {"bearer 0123456789abcdef0123", 409}, {"BEARER 0123456789abcdef0123", 409},
		{"bEaReR   0123456789abcdef0123", 409},
	} {
		req, _ := http.NewRequest("GET", "/v1/status", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("Authorization %q: %d, want %d", c.auth, rec.Code, c.code)
		}
	}
}

// TestServeTellMemory sends tells of the sizes in issue #28 through the server: a body is parsed as it comes, so a
// 30 MB one costs its rows (about 120 bytes each, 3 times the body in all), not 40 times the body as when it was
// read whole and split; a 41 MB one is refused by its length before a byte is read, and without a length once
// the limit is read.
func TestServeTellMemory(t *testing.T) {
	var body bytes.Buffer
	rows := 0
	for body.Len() < 30e6 {
		rows++
		fmt.Fprintf(&body, "{\"id\":\"m%07d\",\"score\":0.%09d}\n", rows, rows)
	}
	s := &labServer{dir: t.TempDir()}
	h := s.handler()
	tell := func(body io.Reader) (code int, alloc uint64) {
		t.Helper()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tell", body))
		runtime.ReadMemStats(&after)
		return rec.Code, after.TotalAlloc - before.TotalAlloc
	}
	// Every row is read and checked; then there is no run to tell.
	code, alloc := tell(bytes.NewReader(body.Bytes()))
	t.Logf("%d MB, %d rows: %d, %.1f MB allocated", body.Len()/1e6, rows, code, float64(alloc)/1e6)
	if code != http.StatusConflict || alloc > 4*uint64(body.Len()) {
		t.Errorf("a tell of %d MB: %d, %.1f MB allocated, want 409 and at most %d MB", body.Len()/1e6, code, float64(alloc)/1e6, 4*body.Len()/1e6)
	}

	for body.Len() < 41e6 {
		rows++
		fmt.Fprintf(&body, "{\"id\":\"m%07d\",\"score\":0.%09d}\n", rows, rows)
	}
	if code, alloc := tell(bytes.NewReader(body.Bytes())); code != http.StatusRequestEntityTooLarge || alloc > 1e6 {
		t.Errorf("a tell of %d MB: %d, %.1f MB allocated, want 413 and at most 1 MB", body.Len()/1e6, code, float64(alloc)/1e6)
	}
	code, alloc = tell(io.MultiReader(bytes.NewReader(body.Bytes()))) // no length
	t.Logf("%d MB without a length: %d, %.1f MB allocated", body.Len()/1e6, code, float64(alloc)/1e6)
	if code != http.StatusRequestEntityTooLarge || alloc > 4*asktell.MaxTellBytes {
		t.Errorf("a tell of %d MB without a length: %d, %.1f MB allocated, want 413 and at most %d MiB", body.Len()/1e6, code,
			float64(alloc)/1e6, 4*asktell.MaxTellBytes>>20)
	}
}

// heldBody is a tell's body that counts the bodies being read and holds its first read until release is closed.
type heldBody struct {
	text            *strings.Reader
	release         <-chan struct{}
	reading, most   *atomic.Int32
	started, closed bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		n := b.reading.Add(1)
		for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
		}
		<-b.release
	}
	n, err := b.text.Read(p)
	if err == io.EOF && !b.closed {
		b.closed = true
		b.reading.Add(-1)
	}
	return n, err
}

// TestServeTellsAtOnce: of four tells sent at once, two read their bodies and two wait; a waiting tell whose
// client gives up is answered 503 without its body read; then all four are answered.
func TestServeTellsAtOnce(t *testing.T) {
	s := &labServer{dir: t.TempDir()}
	h := s.handler()
	release := make(chan struct{})
	var reading, most atomic.Int32
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := &heldBody{text: strings.NewReader("id,score\nm1,0.5\n"), release: release, reading: &reading, most: &most}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tell", body))
			codes[i] = rec.Code
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); reading.Load() < tellsAtOnce && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time for more to start, were they let
	if n := reading.Load(); n != tellsAtOnce {
		t.Errorf("%d tells reading their bodies at once, want %d", n, tellsAtOnce)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	closed := make(chan struct{})
	close(closed)
	var unreadReading, unreadMost atomic.Int32
	unread := &heldBody{text: strings.NewReader("id,score\nm1,0.5\n"), release: closed, reading: &unreadReading, most: &unreadMost}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tell", unread).WithContext(ctx))
	if rec.Code != http.StatusServiceUnavailable || unread.started {
		t.Errorf("a tell given up while waiting: %d %s, body read: %v", rec.Code, rec.Body, unread.started)
	}

	close(release)
	wg.Wait()
	if m := most.Load(); m > tellsAtOnce {
		t.Errorf("%d tells read their bodies at once, want at most %d", m, tellsAtOnce)
	}
	for i, code := range codes {
		if code != http.StatusConflict { // read and checked; no run yet
			t.Errorf("tell %d: %d", i, code)
		}
	}
}
