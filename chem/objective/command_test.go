package objective

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

// TestMain lets the test binary act as an external objective program
// (NFBO_TEST_ORACLE=1), so the pool's protocol handling, retries and
// bisection are tested without RDKit and in any language's stead.
func TestMain(m *testing.M) {
	if os.Getenv("NFBO_TEST_ORACLE") == "1" {
		testOracle(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testOracle scores a SMILES as its length. Special molecules: CRASH exits
// (every time), CRASHONCE exits the first time only (a marker file in
// $NFBO_TEST_MARKER remembers), HANG never answers, NULL answers null,
// FAIL answers an error, GARBLE writes a line that is not JSON, NAN
// answers NaN (written as Python's json module writes it), REFUSE makes
// the whole request answer "ok": false.
//
// $NFBO_TEST_MODE breaks the whole program: "exit" exits with status 3 at
// once, after a line on stderr; "hang" never answers; "nan" answers NaN
// for every molecule; "garble" answers every request with a line that is
// not JSON. $NFBO_TEST_RECV names a file to which every molecule received
// is appended (one line each, before answering: $NFBO_TEST_TAG, the
// process id, the request id and the molecule), and $NFBO_TEST_DELAY a
// time.Duration to sleep per request. $NFBO_TEST_LOG names an evaluation
// log: each request first checks that every molecule this process
// answered before is in it, and answers "ok": false if not.
func testOracle(in io.Reader, out io.Writer) {
	mode := os.Getenv("NFBO_TEST_MODE")
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "oracle: cannot load the model")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	}
	delay, _ := time.ParseDuration(os.Getenv("NFBO_TEST_DELAY"))
	var recv *os.File
	if path := os.Getenv("NFBO_TEST_RECV"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			panic(err)
		}
		recv = f
	}
	var answered []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var req struct {
			ID     int64    `json:"id"`
			Op     string   `json:"op"`
			Task   string   `json:"task"`
			SMILES []string `json:"smiles"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			json.NewEncoder(out).Encode(map[string]any{"id": nil, "ok": false, "error": err.Error()})
			continue
		}
		if req.Op != "score" {
			json.NewEncoder(out).Encode(map[string]any{"id": req.ID, "ok": false, "error": "unknown op " + req.Op})
			continue
		}
		if recv != nil {
			// One line per molecule: the tag (or pid), the process and
			// request ids, the molecule.
			tag := os.Getenv("NFBO_TEST_TAG")
			if tag == "" {
				tag = "-"
			}
			var b strings.Builder
			for _, s := range req.SMILES {
				fmt.Fprintf(&b, "%s %d %d %s\n", tag, os.Getpid(), req.ID, s)
			}
			if _, err := recv.WriteString(b.String()); err != nil {
				panic(err)
			}
		}
		if path := os.Getenv("NFBO_TEST_LOG"); path != "" {
			if missing := notLogged(path, answered); missing != "" {
				json.NewEncoder(out).Encode(map[string]any{"id": req.ID, "ok": false,
					"error": "molecule " + missing + " was answered but is not in the log yet"})
				continue
			}
		}
		time.Sleep(delay)
		switch mode {
		case "garble":
			io.WriteString(out, "this is not json\n")
			continue
		case "nan":
			nans := strings.TrimSuffix(strings.Repeat("NaN, ", len(req.SMILES)), ", ")
			fmt.Fprintf(out, "{\"id\": %d, \"ok\": true, \"scores\": [%s]}\n", req.ID, nans)
			continue
		}
		scores := make([]string, len(req.SMILES))
		errs := make([]string, len(req.SMILES))
		refuse := false
		for i, s := range req.SMILES {
			switch s {
			case "CRASH":
				os.Exit(3)
			case "CRASHONCE":
				marker := filepath.Join(os.Getenv("NFBO_TEST_MARKER"), "crashed")
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, nil, 0o644)
					os.Exit(3)
				}
			case "HANG":
				time.Sleep(time.Hour)
			case "GARBLE":
				io.WriteString(out, "this is not json\n")
			case "NULL":
				scores[i] = "null"
				continue
			case "NAN":
				scores[i] = "NaN"
				continue
			case "REFUSE":
				refuse = true
			case "FAIL":
				scores[i] = "0"
				errs[i] = "cannot score FAIL"
				continue
			}
			scores[i] = strconv.FormatFloat(float64(len(s))+float64(len(req.Task))/1000, 'g', -1, 64)
		}
		if refuse {
			json.NewEncoder(out).Encode(map[string]any{"id": req.ID, "ok": false, "error": "REFUSE refused"})
			continue
		}
		e, _ := json.Marshal(errs)
		fmt.Fprintf(out, "{\"id\": %d, \"ok\": true, \"scores\": [%s], \"errors\": %s}\n", req.ID, strings.Join(scores, ", "), e)
		answered = append(answered, req.SMILES...)
	}
}

// notLogged returns the first of smiles that is not in the evaluation log
// at path (by its SMILES field), or "".
func notLogged(path string, smiles []string) string {
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil && len(smiles) > 0 {
		return smiles[0] + " (" + err.Error() + ")"
	}
	in := map[string]bool{}
	for _, r := range recs {
		in[r.SMILES] = true
	}
	for _, s := range smiles {
		if !in[s] && s != "NAN" {
			return s
		}
	}
	return ""
}

func newTestCommand(t *testing.T, opts PoolOptions) *Pool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NFBO_TEST_ORACLE", "1")
	t.Setenv("NFBO_TEST_MARKER", t.TempDir())
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	opts.Warnf = func(format string, args ...any) { t.Logf(format, args...) }
	pool, err := NewCommand([]string{exe}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestCommandObjective(t *testing.T) {
	pool := newTestCommand(t, PoolOptions{Workers: 2, ChunkSize: 3})
	obj := pool.Objective("xy")
	in := []string{"C", "CC", "NULL", "FAIL", "CCCCC", "CCO", "", "CCCC"}
	res, err := obj.Score(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		switch in[i] {
		case "NULL":
			if r.Score != 0 || r.Reason != "no score" {
				t.Errorf("NULL: %+v", r)
			}
		case "FAIL":
			if r.Score != 0 || r.Reason != "cannot score FAIL" {
				t.Errorf("FAIL: %+v", r)
			}
		default:
			if want := float64(len(in[i])) + 0.002; r.Score != want || r.Reason != "" || !r.Done {
				t.Errorf("%q: %+v, want score %v", in[i], r, want)
			}
		}
	}
}

// TestPoisonMoleculeIsolated: a molecule that crashes the worker every time
// is isolated by bisection and scored 0 with a reason; the others in its
// batch keep their scores.
func TestPoisonMoleculeIsolated(t *testing.T) {
	pool := newTestCommand(t, PoolOptions{Workers: 2, ChunkSize: 8, Retries: 1})
	in := make([]string, 20)
	for i := range in {
		in[i] = strings.Repeat("C", i+1)
	}
	in[7] = "CRASH"
	in[12] = "GARBLE"
	res, err := pool.ScoreTask(context.Background(), "", in)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if i == 7 || i == 12 {
			if r.Score != 0 || !strings.Contains(r.Reason, "worker failed") || !r.Done {
				t.Errorf("poison %d: %+v", i, r)
			}
			continue
		}
		if r.Score != float64(i+1) || r.Reason != "" {
			t.Errorf("molecule %d: %+v", i, r)
		}
	}
}

func TestCrashOnceRetried(t *testing.T) {
	pool := newTestCommand(t, PoolOptions{})
	res, err := pool.ScoreTask(context.Background(), "", []string{"C", "CRASHONCE", "CCC"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Score != 1 || res[1].Score != 9 || res[2].Score != 3 {
		t.Errorf("after one crash: %+v", res)
	}
	if st := pool.Stats(); st.Restarts != 1 {
		t.Errorf("restarts %d, want 1", st.Restarts)
	}
}

// TestCancelReturnsPartial: a cancelled batch returns the finished chunks
// with Done set and the context's error; the request in flight is waited
// for up to its timeout, and then abandoned.
func TestCancelReturnsPartial(t *testing.T) {
	pool := newTestCommand(t, PoolOptions{Workers: 1, ChunkSize: 2, Timeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err := pool.ScoreTask(ctx, "", []string{"C", "CC", "HANG", "CCCC"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if len(res) != 4 || !res[0].Done || !res[1].Done || res[2].Done || res[3].Done || res[1].Score != 2 {
		t.Errorf("partial results %+v", res)
	}
}

func TestCommandNotFound(t *testing.T) {
	pool, err := NewCommand([]string{"/nonexistent/oracle"}, PoolOptions{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	start := time.Now()
	_, err = pool.ScoreTask(context.Background(), "", []string{"C"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/oracle") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a missing program took %v to report", d)
	}
}

func TestSplitCommand(t *testing.T) {
	got := SplitCommand("  python3 oracle.py   --model m.pt ")
	want := []string{"python3", "oracle.py", "--model", "m.pt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("SplitCommand = %q", got)
	}
}
