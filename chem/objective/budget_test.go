package objective

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

// upperCanon is a test Canonicalizer: the canonical form is the upper-case
// string; strings holding '?' are invalid.
type upperCanon struct{}

func (upperCanon) Canonicalize(_ context.Context, smiles []string, _ bool) ([]Canonical, error) {
	out := make([]Canonical, len(smiles))
	for i, s := range smiles {
		if s == "" || strings.Contains(s, "?") {
			out[i] = Canonical{Reason: "invalid SMILES"}
			continue
		}
		out[i] = Canonical{SMILES: strings.ToUpper(s)}
	}
	return out, nil
}

// countingObjective scores a SMILES as its length divided by 10 and
// counts the molecules it was asked to score.
func countingObjective(calls *atomic.Int64) Func {
	return func(_ context.Context, s string) (float64, error) {
		calls.Add(1)
		if strings.HasPrefix(strings.ToUpper(s), "BAD") {
			return 0, errors.New("cannot score " + s)
		}
		return float64(len(s)) / 10, nil
	}
}

func statuses(evs []Evaluation) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.Status.String())
	}
	return strings.Join(parts, ",")
}

func TestBudgetCacheAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var calls atomic.Int64
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Task: "len"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evs, err := b.Evaluate(ctx, []string{"cc", "CC", "ccc", "?", "bad1", "cc"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs), "paid,cached,paid,invalid,paid,cached"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if evs[0].Call != 1 || evs[1].Call != 1 || evs[2].Call != 2 || evs[4].Call != 3 || evs[5].Call != 1 {
		t.Errorf("call numbers %+v", evs)
	}
	if evs[1].Score != 0.2 || evs[4].Score != 0 || evs[4].Reason != "cannot score bad1" || evs[3].Reason == "" {
		t.Errorf("evaluations %+v", evs)
	}
	if b.Calls() != 3 || calls.Load() != 3 {
		t.Errorf("Calls() = %d, objective called %d times; want 3 and 3", b.Calls(), calls.Load())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen: the cache and the count come back from the log exactly.
	b, err = OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Task: "len"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Calls() != 3 {
		t.Fatalf("after reopening, Calls() = %d, want 3", b.Calls())
	}
	evs, err = b.Evaluate(ctx, []string{"CCC", "bad1", "cccc"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs), "cached,cached,paid"; got != want {
		t.Errorf("after reopening: statuses %s, want %s", got, want)
	}
	if evs[1].Reason != "cannot score bad1" || evs[2].Call != 4 || calls.Load() != 4 {
		t.Errorf("after reopening: %+v, objective calls %d", evs, calls.Load())
	}
	if s := b.Scores(); len(s) != 4 || s[0] != 0.2 || s[3] != 0.4 {
		t.Errorf("Scores() = %v", s)
	}
}

// TestBudgetTornLine truncates the log in the middle of its last line, as a
// crash during a write would: reopening drops only that record, with a
// warning, and the count is exact; the dropped molecule is paid again.
func TestBudgetTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var calls atomic.Int64
	ctx := context.Background()
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mols := []string{"c", "cc", "ccc", "cccc", "ccccc"}
	for _, m := range mols {
		if _, err := b.Evaluate(ctx, []string{m}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	keep := len(data) - len(lines[4])/2 // cut the 5th record mid-line
	if err := os.Truncate(path, int64(keep)); err != nil {
		t.Fatal(err)
	}
	for cut := keep; cut > len(data)-len(lines[4]); cut -= 7 {
		// Every cut point inside the last line is a torn line, never a record.
		cutPath := filepath.Join(t.TempDir(), "cut.jsonl")
		if err := os.WriteFile(cutPath, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		recs, end, torn, err := rundir.ReadLog(cutPath)
		if err != nil || len(recs) != 4 || torn != cut-int(end) {
			t.Fatalf("cut at %d: %d records, torn %d, err %v", cut, len(recs), torn, err)
		}
	}

	var warnings []string
	warnf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	b, err = OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Warnf: warnf})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "torn") {
		t.Errorf("warnings %q, want one about a torn line", warnings)
	}
	if b.Calls() != 4 {
		t.Fatalf("Calls() = %d after a torn 5th record, want 4", b.Calls())
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(data)-len(lines[4])) {
		t.Errorf("log is %d bytes, want the torn line truncated to %d", fi.Size(), len(data)-len(lines[4]))
	}
	before := calls.Load()
	evs, err := b.Evaluate(ctx, mols)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(evs), "cached,cached,cached,cached,paid"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if calls.Load()-before != 1 || evs[4].Call != 5 {
		t.Errorf("objective called %d times, last call %d; want 1 and 5", calls.Load()-before, evs[4].Call)
	}
	recs, _, torn, err := rundir.ReadLog(path)
	if err != nil || torn != 0 || len(recs) != 5 {
		t.Errorf("log after resuming: %d records, torn %d, err %v", len(recs), torn, err)
	}
}

func TestBudgetDamagedLog(t *testing.T) {
	dir := t.TempDir()
	good := `{"call":1,"smiles":"c","canonical":"C","score":0.1,"error":"","time":"2026-01-01T00:00:00Z"}` + "\n"
	cases := map[string]string{
		"garbage line":    good + "garbage\n",
		"out of sequence": good + strings.Replace(good, `"call":1`, `"call":3`, 1),
		"paid twice":      good + strings.Replace(good, `"call":1`, `"call":2`, 1),
		"unknown field":   strings.Replace(good, `"score"`, `"scroe"`, 1),
		"other task":      strings.Replace(good, `"time"`, `"task":"qed","time"`, 1),
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		_, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Task: "adip"})
		var le *rundir.LogError
		if !errors.As(err, &le) {
			t.Errorf("%s: err = %v, want a *rundir.LogError", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestBudgetLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var calls atomic.Int64
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	evs, err := b.Evaluate(context.Background(), []string{"a", "b", "A", "?", "c", "d", "e"})
	if !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("err = %v, want ErrBudgetExhausted", err)
	}
	if got, want := statuses(evs), "paid,paid,cached,invalid,paid,not scored,not scored"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if b.Calls() != 3 || b.Remaining() != 0 || calls.Load() != 3 {
		t.Errorf("Calls %d, Remaining %d, objective calls %d", b.Calls(), b.Remaining(), calls.Load())
	}
	// Cached molecules are still answered when the budget is spent.
	evs, err = b.Evaluate(context.Background(), []string{"B"})
	if err != nil || evs[0].Status != Cached {
		t.Errorf("cached after exhaustion: %+v, %v", evs, err)
	}
}

// TestBudgetObjectiveFails: the molecules the objective scored before it
// failed are paid and logged; the rest are not scored and not counted.
func TestBudgetObjectiveFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	obj := Func(func(_ context.Context, s string) (float64, error) {
		n++
		if n == 2 {
			cancel()
		}
		return 1, nil
	})
	b, err := OpenBudget(path, obj, upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	evs, err := b.Evaluate(ctx, []string{"a", "b", "c", "d"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got, want := statuses(evs), "paid,paid,not scored,not scored"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil || len(recs) != 2 || b.Calls() != 2 {
		t.Errorf("log holds %d records (err %v), Calls() = %d; want 2", len(recs), err, b.Calls())
	}
}

// oneByOne is a StreamObjective that scores and delivers one molecule at a
// time, counting the molecules it was asked to score.
type oneByOne struct {
	f     Func
	calls int
}

func (o *oneByOne) Score(ctx context.Context, smiles []string) ([]Result, error) {
	return o.f.Score(ctx, smiles)
}

func (o *oneByOne) ScoreStream(ctx context.Context, smiles []string, deliver func(lo, hi int, res []Result) error) error {
	for i, s := range smiles {
		o.calls++
		res, err := o.f.Score(ctx, []string{s})
		if err != nil {
			return err
		}
		if err := deliver(i, i+1, res); err != nil {
			return fmt.Errorf("delivering molecule %d: %w", i, err)
		}
	}
	return nil
}

// TestBudgetErrorStreak: an objective that answers errors for every
// molecule stops the run after MaxErrorStreak answers in a row; what it
// answered stays paid, nothing more is sent, and a score resets the streak.
func TestBudgetErrorStreak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var calls atomic.Int64
	obj := &oneByOne{f: countingObjective(&calls)}
	b, err := OpenBudget(path, obj, upperCanon{}, BudgetOptions{MaxErrorStreak: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	evs, err := b.Evaluate(ctx, []string{"bad1", "ok", "bad2", "bad3", "bad4", "bad5", "x"})
	if !errors.Is(err, ErrErrorStreak) || !strings.Contains(err.Error(), `"cannot score bad4"`) {
		t.Fatalf("err = %v, want ErrErrorStreak naming the last error", err)
	}
	if got, want := statuses(evs), "paid,paid,paid,paid,paid,not scored,not scored"; got != want {
		t.Errorf("statuses %s, want %s", got, want)
	}
	if obj.calls != 5 || b.Calls() != 5 {
		t.Errorf("objective asked for %d molecules, %d paid; want 5 and 5", obj.calls, b.Calls())
	}
	// A score ends the streak.
	if _, err := b.Evaluate(ctx, []string{"good", "bad5", "bad6"}); err != nil {
		t.Errorf("after a score: %v", err)
	}
	// Negative: no limit, also for an objective without streaming.
	path2 := filepath.Join(t.TempDir(), "evals.jsonl")
	b2, err := OpenBudget(path2, countingObjective(&calls), upperCanon{}, BudgetOptions{MaxErrorStreak: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	bad := make([]string, 2*DefaultMaxErrorStreak)
	for i := range bad {
		bad[i] = fmt.Sprintf("bad%d", i)
	}
	if _, err := b2.Evaluate(ctx, bad); err != nil {
		t.Errorf("no limit: %v", err)
	}
	// Default limit, without streaming: everything asked is paid, then the
	// error.
	path3 := filepath.Join(t.TempDir(), "evals.jsonl")
	b3, err := OpenBudget(path3, countingObjective(&calls), upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b3.Close()
	if _, err := b3.Evaluate(ctx, bad); !errors.Is(err, ErrErrorStreak) || b3.Calls() != len(bad) {
		t.Errorf("default limit: err %v, %d paid", err, b3.Calls())
	}
}

// TestBudgetEvaluateFrom: each paid record keeps its molecule's origin, through a reopening (the log's crc
// covers it); a molecule answered from the cache keeps its first record's; molecules without a move have none.
func TestBudgetEvaluateFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals.jsonl")
	var calls atomic.Int64
	b, err := OpenBudget(path, countingObjective(&calls), upperCanon{}, BudgetOptions{Task: "len"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cross := rundir.Origin{By: rundir.ByCrossover, Parents: []string{"c", "cccc"}}
	from := []rundir.Origin{{By: rundir.ByFlow, Parents: []string{"c"}}, cross, {}, {By: rundir.ByMutation, Parents: []string{"cc"}}}
	if _, err := b.EvaluateFrom(ctx, []string{"cc", "ccc", "cccc", "CC"}, from); err != nil {
		t.Fatal(err)
	}
	from[1].Parents[0] = "changed by the caller"
	if _, err := b.EvaluateFrom(ctx, []string{"c"}, from); err == nil {
		t.Error("4 origins for 1 molecule: no error")
	}
	want := []*rundir.Origin{&from[0], &cross, nil}
	cross.Parents = []string{"c", "cccc"}
	check := func(where string, recs []rundir.Record) {
		t.Helper()
		if len(recs) != 3 {
			t.Fatalf("%s: %d records, want 3", where, len(recs))
		}
		for i, r := range recs {
			if !reflect.DeepEqual(r.From, want[i]) {
				t.Errorf("%s: record %d (%s): from %+v, want %+v", where, i+1, r.SMILES, r.From, want[i])
			}
		}
	}
	check("the Budget's records", b.Records())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := rundir.ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	check("the log", recs)
}

// TestBudgetDeferredOrigins: a Budget over Deferred (ask/tell) gives it the origins of the molecules it asks for,
// each kept apart from the caller's slice; molecules without a move have none.
func TestBudgetDeferredOrigins(t *testing.T) {
	d := &Deferred{}
	b, err := OpenBudget(filepath.Join(t.TempDir(), "evals.jsonl"), d, upperCanon{}, BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	from := []rundir.Origin{{By: rundir.ByMutation, Parents: []string{"c"}}, {}}
	if _, err := b.EvaluateFrom(context.Background(), []string{"cc", "ccc"}, from); !errors.Is(err, ErrAwaitingScores) {
		t.Fatalf("EvaluateFrom over Deferred: %v, want ErrAwaitingScores", err)
	}
	from[0].Parents[0] = "changed by the caller"
	asked := d.Asked()
	if len(asked) != 2 || asked[0].From == nil || !reflect.DeepEqual(*asked[0].From, rundir.Origin{By: rundir.ByMutation, Parents: []string{"c"}}) || asked[1].From != nil {
		t.Errorf("asked %+v, want cc from a mutation of c and ccc without an origin", asked)
	}
}
