package asktell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

func TestParse(t *testing.T) {
	good := map[string]string{
		"csv":          "id,score\nm1,0.5\nm2,-3e2\n\nm3,1\n",
		"csv-extra":    "\ufeffID,smiles,Score,error\nm1,CCO,0.5,\nm2,CC,-300,\nm3,C,1,\n",
		"csv-crlf":     "id,score\r\nm1,0.5\r\nm2,-300\r\nm3,1\r\n",
		"jsonl":        "{\"id\":\"m1\",\"score\":0.5}\n{\"id\":\"m2\",\"score\":-300}\n\n{\"id\":\"m3\",\"score\":\"1\"}\n",
		"csv-repeated": "id,score\nm1,0.5\nm2,-300\nm1,0.5\nm3,1\n",
		"tsv":          "\ufeffid\tsmiles\tscore\tnote\nm1\tCCO\t0.5\ta, b\nm2\tCC\t-300\t\nm3\tC\t1\t\n",
	}
	for name, text := range good {
		rows, err := Parse(name, strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := map[string]float64{}
		for _, r := range rows {
			got[r.ID] = r.Score
		}
		if len(got) != 3 || got["m1"] != 0.5 || got["m2"] != -300 || got["m3"] != 1 {
			t.Errorf("%s: %+v", name, rows)
		}
	}
	rows, err := Parse("e", strings.NewReader("id,score,error\nm1,,no crystals\n"))
	if err != nil || len(rows) != 1 || rows[0].Error != "no crystals" {
		t.Errorf("a row with an error instead of a score: %+v, %v", rows, err)
	}
	bad := map[string]struct {
		text string
		line int
	}{
		"nan":       {"id,score\nm1,0.5\nm2,NaN\n", 3},
		"inf":       {"id,score\nm1,+Inf\n", 2},
		"text":      {"id,score\nm1,0.5\n\nm2,good\n", 4},
		"empty":     {"id,score\nm1,\n", 2},
		"both":      {"id,score,error\nm1,0.5,oops\n", 2},
		"no-id":     {"id,score\n,0.5\n", 2},
		"header":    {"name,value\nm1,0.5\n", 1},
		"twice":     {"id,score\nm1,0.5\nm2,1\nm1,0.6\n", 4},
		"quote":     {"id,score\nm1,0.5\nm2,\"1\n", 3},
		"json":      {"{\"id\":\"m1\",\"score\":0.5}\n{\"id\":\"m2\",\"score\":null}\n", 2},
		"json-junk": {"{\"id\":\"m1\",\"score\":0.5} {}\n", 1},
		"json-nan":  {"{\"id\":\"m1\",\"score\":\"NaN\"}\n", 1},
		"json-id":   {"{\"id\":[1],\"score\":1}\n", 1},
		"quote-id":  {"id,score\n\"m1\"x,1\n", 2},
	}
	for name, c := range bad {
		_, err := Parse("f.csv", strings.NewReader(c.text))
		var re *RowError
		if !errors.As(err, &re) || re.Line != c.line || re.File != "f.csv" {
			t.Errorf("%s: %v, want a *RowError at f.csv:%d", name, err, c.line)
		}
	}
	if _, err := Parse("f", strings.NewReader("id,score\n")); err == nil {
		t.Errorf("a file without rows was accepted")
	}
	if _, err := Parse("f", strings.NewReader("id;smiles;score\nm1;CCO;0,5\n")); err == nil ||
		!strings.Contains(err.Error(), "fields separated by semicolons") {
		t.Errorf("a table separated by semicolons: %v", err)
	}
}

// blanks reads n bytes of blank lines, 1,000 spaces each.
type blanks struct{ n int }

func (r *blanks) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.n)]
	for i := range p {
		p[i] = ' '
		if (r.n-i)%1000 == 1 {
			p[i] = '\n'
		}
	}
	r.n -= len(p)
	return len(p), nil
}

// failAfter reads r, then fails.
type failAfter struct{ r io.Reader }

func (f failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		err = errors.New("connection reset")
	}
	return n, err
}

// TestParseLimits: a file of MaxTellBytes is read and one byte more is refused, whatever its rows; a long line
// is refused naming it, after the rows before it; a failed read is reported in place of the row it cut short.
func TestParseLimits(t *testing.T) {
	const head = "id,score\nm1,0.5\n"
	file := func(head string, pad int, tail string) io.Reader {
		return io.MultiReader(strings.NewReader(head), &blanks{pad}, strings.NewReader(tail))
	}
	if rows, err := Parse("f", file(head, MaxTellBytes-len(head)-5, "m2,1\n")); err != nil || len(rows) != 2 {
		t.Errorf("a file of MaxTellBytes: %d rows, %v", len(rows), err)
	}
	for _, tail := range []string{"m2,1\n", "m2,\"1\n", "m2,NaN\n"} {
		if _, err := Parse("f", file(head, MaxTellBytes-len(head)-4, tail)); err == nil || err.Error() != "asktell: f is larger than 32 MiB" {
			t.Errorf("a file of MaxTellBytes+1 ending %q: %v", tail, err)
		}
	}
	for name, c := range map[string]struct {
		r    io.Reader
		want string
	}{
		"csv":          {file(head+"m2,1", 0, strings.Repeat(" ", MaxTellLineBytes-3)), "f:3: the line is longer than 1048576 bytes"},
		"csv-longest":  {file(head+"m2,1", 0, strings.Repeat(" ", MaxTellLineBytes-5)+"\r\n"), ""},
		"json":         {file(`{"id":"m1","score":1}`+"\n\n"+`{"id":"m2","score":`, 0, strings.Repeat(" ", MaxTellLineBytes)+"2}\n"), "f:3: the line is longer"},
		"bad-before":   {file(head+"m2,x\nm3,", 0, strings.Repeat("1", MaxTellLineBytes)), "f:3: id m2: score \"x\" is not a number"},
		"long-blank":   {file(head+"\n", 0, strings.Repeat(" ", MaxTellLineBytes+1)+"\n"), "f:4: the line is longer"},
		"json-blanks":  {file("", 60000, `{"id":"m1","score":1}`+"\n"), ""},
		"read":         {failAfter{strings.NewReader(head + "m2,1")}, "asktell: read f: connection reset"},
		"read-quote":   {failAfter{strings.NewReader(head + "m2,\"1")}, "asktell: read f: connection reset"},
		"read-json":    {failAfter{strings.NewReader(`{"id":"m1","score":1}` + "\n" + `{"id":"m2","sc`)}, "asktell: read f: connection reset"},
		"read-at-once": {failAfter{strings.NewReader("")}, "asktell: read f: connection reset"},
	} {
		rows, err := Parse("f", c.r)
		if c.want == "" && (err != nil || len(rows) < 1) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			msg := fmt.Sprint(err)
			if len(msg) > 200 {
				msg = msg[:200] + "..."
			}
			t.Errorf("%s: %d rows, %s; want %q", name, len(rows), msg, c.want)
		}
	}
	if testing.Short() {
		return
	}
	var many strings.Builder
	many.WriteString("id,score\n")
	for i := range MaxTellRows + 1 {
		fmt.Fprintf(&many, "m%d,1\n", i%1000+1)
	}
	want := fmt.Sprintf("f:%d: more than %d rows in one file; split it", MaxTellRows+2, MaxTellRows)
	if _, err := Parse("f", strings.NewReader(many.String())); err == nil || err.Error() != want {
		t.Errorf("a file of MaxTellRows+1 rows: %v, want %q", err, want)
	}
}

// FuzzParse: Parse never panics; it returns rows, each with an id and a finite score or an error, or a
// *RowError naming a line of the file (or a file-level error with no rows).
func FuzzParse(f *testing.F) {
	f.Add([]byte("id,score\nm1,0.5\n"))
	f.Add([]byte("id,smiles,score,error\nm1,CCO,,failed\nm2,CC,1e3,\n"))
	f.Add([]byte("{\"id\":\"m1\",\"score\":0.5}\n{\"id\":2,\"score\":\"3\"}\n"))
	f.Add([]byte("id,score\nm1,\"0.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := Parse("fuzz", bytes.NewReader(data))
		if err != nil {
			var re *RowError
			if errors.As(err, &re) && (re.Line < 1 || re.File != "fuzz") {
				t.Fatalf("row error %v names no line", err)
			}
			if rows != nil {
				t.Fatalf("rows returned with error %v", err)
			}
			return
		}
		for _, r := range rows {
			if r.ID == "" || r.Line < 1 || math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || (r.Error != "" && r.Score != 0) {
				t.Fatalf("bad row accepted: %+v", r)
			}
		}
	})
}

// FuzzJSONLine: the fast reading of a JSON line gives the row or the error that encoding/json's gives.
func FuzzJSONLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"m1","score":0.5}`, ` { "id" : 12 , "score" : "-3e2", "smiles": "CCO", "n": [1] } `,
		`{"id":"m1","score":null,"error":" no crystals "}`, `{"id":"m1","error":null,"score":1}`,
		`{"ID":"m1","score":1}`, `{"id":"m1","id":"m2","score":1}`, `{"id":"m\u0031","score":1}`,
		`{"id":"m1","score":01}`, `{"id":"m1","score":-0.5e+3}`, `{"id":"m1","score":1.}`, `{"id":"m1","score":true}`,
		`{"id":"m1","score":1} {}`, `{"id":"m1","score":1}}`, `{"id":"m1","score":"NaN"}`, `{"id":null,"score":1}`,
		`{"id":"m1","score":1,}`, "{\"id\":\"\xff\",\"score\":1}", `{}`, `{"score":1}`, `{"id":"m1","score":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ferr := jsonLine(line)
		slow, serr := jsonLineSlow(line)
		if fast != slow || fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("%q: read as %+v, %v; encoding/json reads %+v, %v", line, fast, ferr, slow, serr)
		}
	})
}

// newRun makes a run directory whose ledger holds n molecules and returns it with their SMILES.
func newRun(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	l, err := rundir.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	var smiles []string
	for i := range n {
		smiles = append(smiles, strings.Repeat("C", i+1)+"O")
	}
	if _, err := l.Append(smiles, smiles, time.Now()); err != nil {
		t.Fatal(err)
	}
	return dir, smiles
}

func tellText(t *testing.T, dir, text string, opts Options) (Summary, error) {
	t.Helper()
	rows, err := Parse("t.csv", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return Tell(context.Background(), dir, "t.csv", rows, opts)
}

func TestTell(t *testing.T) {
	dir, smiles := newRun(t, 4)
	opts := Options{Task: "lab", Limit: 4}
	sum, err := tellText(t, dir, "id,score\nm1,0.25\nm3,2\n", opts)
	if err != nil || sum.New != 2 || sum.Calls != 2 || sum.Awaiting != 2 {
		t.Fatalf("first tell: %+v, %v", sum, err)
	}
	logPath := filepath.Join(dir, rundir.EvalLogFile)
	before, _ := os.ReadFile(logPath)
	for text, want := range map[string]string{
		"id,score\nm2,1\nm1,0.5\n": "t.csv:3: id m1",
		"id,score\nm2,1\nm9,0.5\n": "t.csv:3: unknown id \"m9\" (this run handed out m1 to m4)",
	} {
		if _, err := tellText(t, dir, text, opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tell %q: %v, want %q", text, err, want)
		}
	}
	if after, _ := os.ReadFile(logPath); !bytes.Equal(before, after) {
		t.Fatalf("a rejected tell changed the log")
	}
	// A crash in the middle of a write leaves a torn line; the next tell drops it and applies its rows.
	f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"call":3,"smiles":"CC`)
	f.Close()
	var warned []string
	opts.Warnf = func(format string, args ...any) { warned = append(warned, format) }
	sum, err = tellText(t, dir, "id,score,error\nm1,0.25,\nm2,,broken\nm4,4,\n", opts)
	if err != nil || sum.New != 2 || sum.Repeated != 1 || sum.Calls != 4 || sum.Awaiting != 0 || len(warned) != 1 {
		t.Fatalf("tell after a torn line: %+v, %v, warnings %q", sum, err, warned)
	}
	recs, _, torn, err := rundir.ReadLog(logPath)
	if err != nil || torn != 0 || len(recs) != 4 {
		t.Fatalf("log: %d records, torn %d, %v", len(recs), torn, err)
	}
	want := map[string][2]any{smiles[0]: {0.25, ""}, smiles[2]: {2.0, ""}, smiles[1]: {0.0, "broken"}, smiles[3]: {4.0, ""}}
	for _, r := range recs {
		if w := want[r.Canonical]; r.Score != w[0] || r.Error != w[1] || r.Task != "lab" {
			t.Errorf("record %+v, want score %v error %q", r, w[0], w[1])
		}
	}
}

func TestTellBudget(t *testing.T) {
	dir, _ := newRun(t, 3)
	if _, err := tellText(t, dir, "id,score\nm1,1\nm2,1\nm3,1\n", Options{Limit: 2}); err == nil || !strings.Contains(err.Error(), "2 calls left") {
		t.Fatalf("a tell beyond the budget: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.EvalLogFile)); err == nil {
		if recs, _, _, _ := rundir.ReadLog(filepath.Join(dir, rundir.EvalLogFile)); len(recs) != 0 {
			t.Fatalf("a refused tell paid %d calls", len(recs))
		}
	}
}
