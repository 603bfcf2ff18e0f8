package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/bo/bench"
	"github.com/nfbo/nfbo/optimize"
	"github.com/nfbo/nfbo/rundir"
)

// newServeCmd returns "nfbo serve", ask/tell over HTTP.
func newServeCmd() *Command {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var a optimize.Args
	addRunFlags(fs, &a)
	fs.StringVar(&a.Out, "run", "", "run `directory` (required); made by nfbo ask, or by the first ask of this server with optimize's flags")
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on; any address but a loopback one needs -token-file")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token every request must carry (Authorization: Bearer TOKEN)")
	cmd := &Command{
		UsageLine: "serve -run DIR [-addr HOST:PORT] [-token-file FILE] [optimize's flags for a new run]",
		Short:     "ask/tell over HTTP/JSON",
		Long: `Serve offers the ask/tell run in -run DIR over HTTP, for programs and lab
systems that would rather call than run commands:

  POST /v1/ask     the next batch: {"batch": [{"id": "m1", "smiles": "..."}],
                   "finished": false, "calls": N, "budget": N}; asking again
                   before the batch is told gives the same batch; ?n=N hands
                   out at most N molecules of it (nfbo ask -n)
  POST /v1/tell    scores, as the body: CSV (id,score) or JSON lines, as
                   "nfbo tell" reads them; answers {"new": N, "repeated": N,
                   "calls": N, "awaiting": N}; a bad row is a 400 naming its
                   line, and nothing of that request is applied
  GET  /v1/status  the run: task, budget, calls, the molecules awaiting
                   scores and the best ten found
  GET  /v1/report  the run's table of Top-k and AUC Top-k (Markdown)
  GET  /v1/report.html
                   the run's page: its curve and best molecules drawn

Every told score is on disk (appended to evaluations.jsonl and synced) before
the answer is sent. The server is the run directory's one writer: it holds the
directory's lock while it runs (a second serve, an ask or a tell of the same
run waits or is refused) and serves asks and tells one at a time, reads
concurrently. Errors are {"error": "..."} with a 4xx or 5xx status.

It listens on 127.0.0.1 by default. Any other address, one reachable from
other machines, is refused unless -token-file names a file holding a bearer
token; then every request must carry "Authorization: Bearer TOKEN" (the
scheme in any case, one or more spaces before the token).

A tell's body is read as it arrives, and at most two tells are read or
applied at once; others wait their turn, before reading their bodies, for as
long as their clients do. A body is at most 32 MiB, 1,048,576 rows and lines
of 1 MiB (a 413 or a 400 otherwise), so a tell holds at most about 150 MB.
Ctrl-C or SIGTERM stops the server after the requests in flight.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "serve: unexpected arguments %q", args)
		}
		if a.Out == "" {
			return Usagef(cmd, "serve: -run is required")
		}
		token, err := serveToken(*addr, *tokenFile)
		if err != nil {
			return Usagef(cmd, "serve: %v", err)
		}
		run, err := resolveRunArgs(cmd, fs, a, "serve")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(a.Out, 0o755); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		unlock, err := rundir.Lock(a.Out)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer unlock()
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s := &labServer{dir: a.Out, token: token, ask: func(ctx context.Context, max int) ([]rundir.Asked, rundir.Info, error) {
			run.Resume = rundir.Exists(filepath.Join(run.Out, rundir.InfoFile)) // made by the first ask
			return optimize.Ask(ctx, optimize.Streams{Stdout: cmd.Stderr, Stderr: cmd.Stderr}, run,
				optimize.AskOptions{Locked: true, Max: max})
		}, draw: func(ctx context.Context) (bench.DrawFunc, func(), error) {
			return rdkitDrawer(ctx, run.Python, cmd.Stderr)
		}}
		srv := &http.Server{
			Handler:           s.handler(),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       2 * time.Minute,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}
		fmt.Fprintf(cmd.Stderr, "nfbo serve: run %s on http://%s/v1/ (ask, tell, status, report)\n", a.Out, ln.Addr())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return fmt.Errorf("serve: %w", err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("serve: shutdown: %w", err)
		}
		fmt.Fprintf(cmd.Stderr, "nfbo serve: stopped\n")
		return ctx.Err()
	}
	return cmd
}

// serveToken returns the bearer token from path (empty when path is), and refuses an address other than a
// loopback one without a token.
func serveToken(addr, path string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("-addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if path == "" {
		if !loopback {
			return "", fmt.Errorf("-addr %s can be reached from other machines: give -token-file with a bearer token, or listen on 127.0.0.1", addr)
		}
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", fmt.Errorf("-token-file %s: the token has %d characters; use at least 16 (e.g. openssl rand -hex 32)", path, len(token))
	}
	return token, nil
}

// labServer is the HTTP side of an ask/tell run in dir, whose lock the process holds: asks and tells, which
// write, one at a time; status and report, which read, at the same time as each other.
type labServer struct {
	dir   string
	token string
	// ask runs the optimiser to its next batch, at most max molecules of it when max > 0 (optimize.Ask).
	ask func(ctx context.Context, max int) ([]rundir.Asked, rundir.Info, error)

	// draw starts a drawer of molecules for the HTML report (rdkitDrawer); nil means no drawings.
	draw func(ctx context.Context) (bench.DrawFunc, func(), error)

	mu        sync.RWMutex
	cached    *askReply // the last ask's answer, until a tell changes what is awaited
	cachedMax int       // the n it was asked with

	// tells holds a slot for each tell being read or applied (handler makes it, tellsAtOnce slots); other
	// tells wait for one before they read their bodies.
	tells chan struct{}
}

type askReply struct {
	Batch    []askedJSON `json:"batch"`
	Finished bool        `json:"finished"`
	Calls    int         `json:"calls"`
	Budget   int         `json:"budget"`
}

type askedJSON struct {
	ID     string `json:"id"`
	SMILES string `json:"smiles"`
	Name   string `json:"name,omitempty"` // an initial molecule's name in the user's file
}

// bearerToken returns the credentials of an Authorization header value of the Bearer scheme: the scheme,
// whose name is case-insensitive, then one or more spaces and the token (RFC 7235 section 2.1, RFC 6750
// section 2.1).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}

// tellsAtOnce is how many tells a server reads and applies at once; others wait before reading their bodies.
// Each holds its rows until it is answered (at most about 150 MB; see asktell.MaxTellRows), and tells are
// applied one at a time anyway: two keep one body being read while another tell is applied.
const tellsAtOnce = 2

func (s *labServer) handler() http.Handler {
	if s.tells == nil {
		s.tells = make(chan struct{}, tellsAtOnce)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ask", s.handleAsk)
	mux.HandleFunc("POST /v1/tell", s.handleTell)
	mux.HandleFunc("GET /v1/status", s.handleStatus)
	mux.HandleFunc("GET /v1/report", s.handleReport)
	mux.HandleFunc("GET /v1/report.html", s.handleReportHTML)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.token != "" {
			got, ok := bearerToken(r.Header.Get("Authorization"))
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="nfbo"`)
				writeJSONError(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeJSONError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func (s *labServer) handleAsk(w http.ResponseWriter, r *http.Request) {
	max := 0
	if v := r.URL.Query().Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeJSONError(w, http.StatusBadRequest, fmt.Errorf("n=%q: want a count of molecules, 0 for the whole batch", v))
			return
		}
		max = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached == nil || s.cachedMax != max {
		batch, info, err := s.ask(r.Context(), max)
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
		s.cachedMax = max
		rep := &askReply{Batch: []askedJSON{}, Finished: batch == nil, Calls: info.Calls, Budget: info.Budget}
		for _, m := range batch {
			rep.Batch = append(rep.Batch, askedJSON{ID: m.ID, SMILES: displaySMILES(m), Name: m.Name})
		}
		s.cached = rep
	}
	writeJSON(w, http.StatusOK, s.cached)
}

func displaySMILES(m rundir.Asked) string {
	if m.Canonical != "" {
		return m.Canonical
	}
	return m.SMILES
}

func (s *labServer) handleTell(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > asktell.MaxTellBytes {
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body has %d bytes, more than %d MiB; nothing was applied",
			r.ContentLength, asktell.MaxTellBytes>>20))
		return
	}
	// The slot is held until the rows are applied, not only while they are parsed: parsed rows waiting for
	// the lock would hold as much memory.
	select {
	case s.tells <- struct{}{}:
		defer func() { <-s.tells }()
	case <-r.Context().Done():
		writeJSONError(w, http.StatusServiceUnavailable, fmt.Errorf("gave up waiting for the tells before this one: %w; nothing was applied",
			context.Cause(r.Context())))
		return
	}
	body := http.MaxBytesReader(w, r.Body, asktell.MaxTellBytes)
	rows, err := asktell.Parse("request body", body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, err)
			return
		}
		writeJSONError(w, http.StatusBadRequest, fmt.Errorf("%w; nothing was applied", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := rundir.ReadInfo(s.dir)
	if err != nil {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	sum, err := asktell.Tell(r.Context(), s.dir, "request body", rows, asktell.Options{Task: info.Task, Limit: info.Budget})
	if err != nil {
		status := http.StatusInternalServerError
		var re *asktell.RowError
		if errors.As(err, &re) || errors.Is(err, asktell.ErrOverBudget) {
			status = http.StatusBadRequest
		}
		writeJSONError(w, status, fmt.Errorf("%w; nothing was applied", err))
		return
	}
	if sum.New > 0 {
		s.cached = nil
		if sum.Calls > info.Calls {
			info.Calls = sum.Calls
			if err := rundir.WriteInfo(s.dir, info); err != nil {
				writeJSONError(w, http.StatusInternalServerError, fmt.Errorf("the scores are in the log, but %w", err))
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]int{"new": sum.New, "repeated": sum.Repeated, "calls": sum.Calls, "awaiting": sum.Awaiting})
}

type statusReply struct {
	Task     string      `json:"task"`
	Method   string      `json:"method"`
	Seed     int         `json:"seed"`
	Budget   int         `json:"budget"`
	Calls    int         `json:"calls"`
	Finished bool        `json:"finished"`
	Awaiting []askedJSON `json:"awaiting"`
	Best     []bestJSON  `json:"best"`
}

type bestJSON struct {
	Call   int     `json:"call"`
	Score  float64 `json:"score"`
	SMILES string  `json:"smiles"`
}

func (s *labServer) handleStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := rundir.ReadStatus(s.dir, 10)
	if errors.Is(err, fs.ErrNotExist) {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, newStatusReply(st))
}

// newStatusReply is a run's status as serve and "nfbo status -json" show it.
func newStatusReply(st rundir.Status) statusReply {
	rep := statusReply{Task: st.Info.Task, Method: st.Info.Method, Seed: st.Info.Seed, Budget: st.Info.Budget, Calls: st.Calls,
		Finished: st.Info.Finished, Awaiting: []askedJSON{}, Best: []bestJSON{}}
	for _, m := range st.Awaiting {
		rep.Awaiting = append(rep.Awaiting, askedJSON{ID: m.ID, SMILES: displaySMILES(m), Name: m.Name})
	}
	for _, rec := range st.Best {
		rep.Best = append(rep.Best, bestJSON{Call: rec.Call, Score: rec.Score, SMILES: rec.Canonical})
	}
	return rep
}

func (s *labServer) handleReport(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	run, err := bench.LoadRun(s.dir)
	if err != nil {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	var md bytes.Buffer
	if err := bench.WriteMarkdown(&md, []bench.Run{run}); err != nil {
		writeJSONError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Write(md.Bytes())
}

func (s *labServer) handleReportHTML(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	run, err := bench.LoadRun(s.dir)
	s.mu.RUnlock()
	if err != nil {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	mols := bench.BestMolecules(run, 20)
	if s.draw != nil {
		draw, closeDraw, err := s.draw(r.Context())
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
		err = bench.Draw(r.Context(), mols, draw)
		closeDraw()
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
	}
	var page bytes.Buffer
	if err := bench.WriteRunHTML(&page, bench.RunPage{Run: run, Molecules: mols}); err != nil {
		writeJSONError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page.Bytes())
}
