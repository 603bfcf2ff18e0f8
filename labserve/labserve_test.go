package labserve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/rundir"
)

// TestToken: a loopback address needs no token; any other needs a token file with at least 16 characters.
func TestToken(t *testing.T) {
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
		_, err := Token(c.addr, c.file, false, t.Logf)
		if (err == nil) != c.ok {
			t.Errorf("Token(%q, %q): %v", c.addr, c.file, err)
		}
	}

	// A token file others may read is refused, or served with a warning when -token-file-shared says so
	// (issue #56: serve started on 0.0.0.0 without a word).
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdef0123\n"), 0o600)
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Token("0.0.0.0:8080", open, false, t.Logf); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable token file: %v, want a refusal saying chmod 600", err)
	}
	var said []string
	warnf := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if tok, err := Token("0.0.0.0:8080", open, true, warnf); err != nil || tok != "0123456789abcdef0123" || len(said) != 1 || !strings.Contains(said[0], "mode 0644") {
		t.Errorf("-token-file-shared: token %q, %v, said %q", tok, err, said)
	}
}

// TestBearerToken: a request without the server's token is a 401; the scheme's name is case-insensitive.
func TestBearerToken(t *testing.T) {
	dir := t.TempDir()
	srv := New(dir, "0123456789abcdef0123", nil, nil)
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

// TestTellMemory sends tells of the sizes in issue #28 through the server: a body is parsed as it comes, so a
// 30 MB one costs its rows (about 120 bytes each, 3 times the body in all), not 40 times the body as when it was
// read whole and split; a 41 MB one is refused by its length before a byte is read, and without a length once
// the limit is read.
func TestTellMemory(t *testing.T) {
	var body bytes.Buffer
	rows := 0
	for body.Len() < 30e6 {
		rows++
		fmt.Fprintf(&body, "{\"id\":\"m%07d\",\"score\":0.%09d}\n", rows, rows)
	}
	h := New(t.TempDir(), "", nil, nil)
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

// TestTellsAtOnce: of four tells sent at once, two read their bodies and two wait; a waiting tell whose
// client gives up is answered 503 without its body read; then all four are answered.
func TestTellsAtOnce(t *testing.T) {
	h := New(t.TempDir(), "", nil, nil)
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

// TestTellErrorQuotesExcerpt: a bad first line of 800 KB was echoed whole in the 400 answer (800,118 bytes); an
// error answer quotes a short excerpt of it and says how long it was (issue #56).
func TestTellErrorQuotesExcerpt(t *testing.T) {
	h := New(t.TempDir(), "", nil, nil)
	line := "x," + strings.Repeat("é", 400_000) + "\n1,2\n"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tell", strings.NewReader(line)))
	body := rec.Body.String()
	if rec.Code != http.StatusBadRequest || len(body) > 2048 || !strings.Contains(body, "800002 bytes") || !strings.Contains(body, "header") {
		t.Errorf("a bad 800 KB header: %d, %d bytes:\n%.300s", rec.Code, len(body), body)
	}
	if got := shortened(strings.Repeat("é", 5000), 1024); len(got) > 1100 || !strings.Contains(got, "bytes cut") || !utf8.ValidString(got) {
		t.Errorf("shortened: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}

// report.html marks the drawn molecules that break the default rules when MarkRules gives a checker (nfbo serve:
// RDKit's), as nfbo report's pages do; without one it marks none.
func TestReportMarksRules(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	for i, smi := range []string{"CCO", "CCBr", "c1ccccc1"} {
		var err error
		if log, err = rundir.AppendRecord(log, rundir.Record{Call: i + 1, SMILES: smi, Canonical: smi, Score: float64(i), Task: "demo"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.EvalLogFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteInfo(dir, rundir.Info{Task: "demo", Method: "nfbo", Budget: 3, Calls: 3, Setting: "0+3"}); err != nil {
		t.Fatal(err)
	}
	page := func(s *Server) string {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/report.html", nil))
		if rec.Code != 200 {
			t.Fatalf("report.html: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	if p := page(New(dir, "", nil, nil)); strings.Contains(p, "breaks the default rules") {
		t.Error("a page without a checker marks molecules")
	}
	s := New(dir, "", nil, nil)
	s.MarkRules(func(context.Context) (bench.CheckFunc, func(), error) {
		return func(_ context.Context, smiles []string) ([]string, error) {
			why := make([]string, len(smiles))
			for i, m := range smiles {
				if strings.Contains(m, "Br") {
					why[i] = "alert NIH:alkyl_halide"
				}
			}
			return why, nil
		}, func() {}, nil
	})
	if p := page(s); strings.Count(p, "breaks the default rules: alert NIH:alkyl_halide") != 1 {
		t.Errorf("the page does not mark CCBr once:\n%s", p)
	}
}
