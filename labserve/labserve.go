// Package labserve holds the HTTP side of an ask/tell run ("nfbo serve"): the handlers of /v1/ask, /v1/tell,
// /v1/status, /v1/report and /v1/report.html, the JSON they answer, the bearer-token check and the rule for which
// addresses need a token. The optimiser's side comes in as a function (optimize.Ask in nfbo serve), the scores go
// through asktell, and the reports are package bench's; the command owns the flags, the run directory's lock and the
// listener. A run can also score itself (Drive: asking, scoring with an objective such as a NATS queue's
// workers, telling), its HTTP side then showing status and reports.
package labserve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/rundir"
)

// AskFunc runs the optimiser to the run's next batch, at most max molecules of it when max > 0 (optimize.Ask
// with the run directory's lock held by the caller). A nil batch means the run is finished.
type AskFunc func(ctx context.Context, max int) ([]rundir.Asked, rundir.Info, error)

// DrawFunc starts a drawer of molecules for the HTML report and returns it with the function that stops it.
type DrawFunc func(ctx context.Context) (bench.DrawFunc, func(), error)

// CheckFunc starts a checker of molecules against the default chemistry rules for the HTML report, which marks
// the molecules that break one, and returns it with the function that stops it.
type CheckFunc func(ctx context.Context) (bench.CheckFunc, func(), error)

// Server is the HTTP side of an ask/tell run in a run directory whose lock the process holds: asks and tells,
// which write, one at a time; status and report, which read, at the same time as each other. It is an
// http.Handler.
type Server struct {
	dir   string
	token string
	ask   AskFunc
	draw  DrawFunc
	check CheckFunc
	mux   *http.ServeMux

	mu        sync.RWMutex
	cached    *AskReply // the last ask's answer, until a tell changes what is awaited
	cachedMax int       // the n it was asked with
	driven    string    // when not empty, who scores the run (Drive): HTTP asks and tells are refused

	// tells holds a slot for each tell being read or applied (tellsAtOnce slots); other tells wait for one
	// before they read their bodies.
	tells chan struct{}
}

// tellsAtOnce is how many tells a server reads and applies at once; others wait before reading their bodies.
// Each holds its rows until it is answered (at most about 150 MB; see asktell.MaxTellRows), and tells are
// applied one at a time anyway: two keep one body being read while another tell is applied.
const tellsAtOnce = 2

// New returns the server of the run in dir. A non-empty token is the bearer token every request must carry.
// ask makes the next batch (and the run, at the first ask); draw, nil for no drawings, draws the molecules of
// report.html.
func New(dir, token string, ask AskFunc, draw DrawFunc) *Server {
	s := &Server{dir: dir, token: token, ask: ask, draw: draw, tells: make(chan struct{}, tellsAtOnce)}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/ask", s.handleAsk)
	s.mux.HandleFunc("POST /v1/tell", s.handleTell)
	s.mux.HandleFunc("GET /v1/status", s.handleStatus)
	s.mux.HandleFunc("GET /v1/report", s.handleReport)
	s.mux.HandleFunc("GET /v1/report.html", s.handleReportHTML)
	return s
}

// MarkRules makes report.html mark the molecules that break the default chemistry rules, as nfbo report does,
// checking them with check (not when the Server's DrawFunc found no drawer: the check needs RDKit as drawing
// does). Call it before serving.
func (s *Server) MarkRules(check CheckFunc) { s.check = check }

// ServeHTTP checks the bearer token, when the server has one, and serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nfbo"`)
			writeJSONError(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// Token returns the bearer token read from the file path (empty when path is), and refuses an address other
// than a loopback one without a token. It refuses a token file that other users may read or write (its mode
// has group or other bits, on unix), unless shared, when it says so through warnf: such a token guards nothing
// from anyone with a login on the machine. addr, path and shared are nfbo serve's -addr, -token-file and
// -token-file-shared, which its errors name.
func Token(addr, path string, shared bool, warnf func(string, ...any)) (string, error) {
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
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		msg := fmt.Sprintf("-token-file %s can be read or written by other users of this machine (mode %04o)", path, fi.Mode().Perm())
		if !shared {
			return "", fmt.Errorf("%s, who could then use the server: chmod 600 %s, or give -token-file-shared to serve with it anyway", msg, path)
		}
		warnf("%s; -token-file-shared serves with it anyway", msg)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", fmt.Errorf("-token-file %s: the token has %d characters; use at least 16 (e.g. openssl rand -hex 32)", path, len(token))
	}
	return token, nil
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

// AskReply is the answer to POST /v1/ask.
type AskReply struct {
	Batch    []Asked `json:"batch"`
	Finished bool    `json:"finished"`
	Calls    int     `json:"calls"`
	Budget   int     `json:"budget"`
}

// Asked is a molecule handed out, as the answers show it.
type Asked struct {
	ID     string `json:"id"`
	SMILES string `json:"smiles"`
	Name   string `json:"name,omitempty"` // an initial molecule's name in the user's file
}

// StatusReply is a run's status as GET /v1/status and "nfbo status -json" show it.
type StatusReply struct {
	Task     string  `json:"task"`
	Method   string  `json:"method"`
	Seed     int     `json:"seed"`
	Budget   int     `json:"budget"`
	Calls    int     `json:"calls"`
	Finished bool    `json:"finished"`
	Awaiting []Asked `json:"awaiting"`
	Best     []Best  `json:"best"`
}

// Best is one of the best molecules found, with the call that paid for it.
type Best struct {
	Call   int     `json:"call"`
	Score  float64 `json:"score"`
	SMILES string  `json:"smiles"`
}

// NewStatusReply returns st as a StatusReply; empty lists are [] rather than null.
func NewStatusReply(st rundir.Status) StatusReply {
	rep := StatusReply{Task: st.Info.Task, Method: st.Info.Method, Seed: st.Info.Seed, Budget: st.Info.Budget, Calls: st.Calls,
		Finished: st.Finished(), Awaiting: []Asked{}, Best: []Best{}}
	for _, m := range st.Awaiting {
		rep.Awaiting = append(rep.Awaiting, Asked{ID: m.ID, SMILES: DisplaySMILES(m), Name: m.Name})
	}
	for _, rec := range st.Best {
		rep.Best = append(rep.Best, Best{Call: rec.Call, Score: rec.Score, SMILES: rec.Canonical})
	}
	return rep
}

// DisplaySMILES is the SMILES a molecule handed out is shown with: RDKit's canonical form when ask had one.
func DisplaySMILES(m rundir.Asked) string {
	if m.Canonical != "" {
		return m.Canonical
	}
	return m.SMILES
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeJSONError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": shortened(err.Error(), maxErrorBytes)})
}

// maxErrorBytes bounds an error response's message: an error that quotes a client's input (a whole first line of
// a tell) must not send it back whole (an 800 KB line once made an 800 KB answer).
const maxErrorBytes = 1024

// shortened returns msg when it has at most max bytes, else its start and end around a note of what was cut,
// cut at UTF-8 boundaries.
func shortened(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	head, tail := max*3/4, max/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	end := len(msg) - tail
	for end < len(msg) && !utf8.RuneStart(msg[end]) {
		end++
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", msg[:head], end-head, msg[end:])
}

// refuseDriven answers a request that asks or tells in a run that Drive scores, and reports whether it did.
// The caller holds s.mu.
func (s *Server) refuseDriven(w http.ResponseWriter) bool {
	if s.driven == "" {
		return false
	}
	writeJSONError(w, http.StatusConflict, fmt.Errorf("this run is scored by %s: it asks and tells by itself; "+
		"GET /v1/status shows the molecules being scored", s.driven))
	return true
}

func (s *Server) handleAsk(w http.ResponseWriter, r *http.Request) {
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
	if s.refuseDriven(w) {
		return
	}
	if s.cached == nil || s.cachedMax != max {
		batch, info, err := s.ask(r.Context(), max)
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
		s.cachedMax = max
		rep := &AskReply{Batch: []Asked{}, Finished: batch == nil, Calls: info.Calls, Budget: info.Budget}
		for _, m := range batch {
			rep.Batch = append(rep.Batch, Asked{ID: m.ID, SMILES: DisplaySMILES(m), Name: m.Name})
		}
		s.cached = rep
	}
	writeJSON(w, http.StatusOK, s.cached)
}

func (s *Server) handleTell(w http.ResponseWriter, r *http.Request) {
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
	if s.refuseDriven(w) {
		return
	}
	info, err := rundir.ReadInfo(s.dir)
	if err != nil {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	sum, err := asktell.TellRun(r.Context(), s.dir, "request body", rows, info, nil)
	if sum.New > 0 {
		s.cached = nil // what is awaited changed, even when run.json could not be updated
	}
	if err != nil {
		status := http.StatusInternalServerError
		var re *asktell.RowError
		if errors.As(err, &re) || errors.Is(err, asktell.ErrOverBudget) {
			status = http.StatusBadRequest
		}
		writeJSONError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"new": sum.New, "repeated": sum.Repeated, "calls": sum.Calls, "awaiting": sum.Awaiting})
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
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
	writeJSON(w, http.StatusOK, NewStatusReply(st))
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) handleReportHTML(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	run, err := bench.LoadRun(s.dir)
	s.mu.RUnlock()
	if err != nil {
		writeJSONError(w, http.StatusConflict, fmt.Errorf("no run yet: ask first (%w)", err))
		return
	}
	mols := bench.BestMolecules(run, 20)
	rdkit := false // a drawer came: RDKit is there to check the rules too, as nfbo report has it
	if s.draw != nil {
		draw, closeDraw, err := s.draw(r.Context())
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
		rdkit = draw != nil
		err = bench.Draw(r.Context(), mols, draw)
		closeDraw()
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err)
			return
		}
	}
	if s.check != nil && (rdkit || s.draw == nil) {
		check, closeCheck, err := s.check(r.Context())
		if err == nil {
			err = bench.Check(r.Context(), mols, check)
			closeCheck()
		}
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
