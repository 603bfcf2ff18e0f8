package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// askBatch runs "nfbo ask" with args and returns its CSV rows (id, smiles) without the header.
func askBatch(t *testing.T, args ...string) [][2]string {
	t.Helper()
	stdout, stderr, err := runCmd(t, newAskCmd(), "", args...)
	if err != nil {
		t.Fatalf("ask %q: %v\nstderr:\n%s", args, err, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) == 0 || strings.Join(recs[0], ",") != "id,smiles" {
		t.Fatalf("ask printed %q (%v)", stdout, err)
	}
	var rows [][2]string
	for _, r := range recs[1:] {
		rows = append(rows, [2]string{r[0], r[1]})
	}
	return rows
}

// lengthScore is the score the test's lab gives a molecule: as the example oracle, len(SMILES)/10.
func lengthScore(smiles string) float64 { return float64(len(smiles)) / 10 }

// tellFile writes rows as a tell CSV (id, smiles, score: ask's CSV with a score column added) and returns its path.
func tellFile(t *testing.T, dir, name string, rows [][2]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,smiles,score\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%g\n", r[0], r[1], lengthScore(r[1]))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func tell(t *testing.T, run, file string) string {
	t.Helper()
	stdout, stderr, err := runCmd(t, newTellCmd(), "", "-run", run, file)
	if err != nil {
		t.Fatalf("tell %s: %v\nstderr:\n%s", file, err, stderr)
	}
	return stdout
}

// TestAskTellRoundTrip drives an ask/tell run through the CLI as a lab would: the initial molecules are asked
// for first, told in two parts (asking in between gives the rest of the same batch with the same ids), sent
// again, and then batches of the optimiser are asked and told until the budget is spent. Bad tell files are
// refused with FILE:LINE and change nothing. Halfway, the run switches to optimize -resume with an objective
// program, which scores the batch left untold and finishes the run; no molecule is paid twice.
func TestAskTellRoundTrip(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	flags := []string{"-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "26", "-anchors", "1",
		"-queries", "5", "-candidates", "100", "-model", dir}
	first := askBatch(t, append([]string{"-run", run}, flags...)...)
	if len(first) != 6 || first[0][0] != "m1" || first[5][0] != "m6" {
		t.Fatalf("first ask: %v, want the 6 initial molecules m1..m6", first)
	}
	tell(t, run, tellFile(t, dir, "part1.csv", first[:4]))
	rest := askBatch(t, "-run", run)
	if fmt.Sprint(rest) != fmt.Sprint(first[4:]) {
		t.Fatalf("asking again after a partial tell gave %v, want the rest of the batch %v", rest, first[4:])
	}
	all := tellFile(t, dir, "all.csv", first)
	if out := tell(t, run, all); !strings.Contains(out, "told 2 new scores (4 rows already told); 6 calls paid of 26; 0 molecules await") {
		t.Errorf("tell of the whole batch after a partial one: %q", out)
	}

	second := askBatch(t, "-run", run)
	if len(second) != 5 || second[0][0] != "m7" {
		t.Fatalf("second batch %v, want 5 molecules from m7", second)
	}
	if again := askBatch(t, "-run", run); fmt.Sprint(again) != fmt.Sprint(second) {
		t.Fatalf("asking twice gave %v then %v", second, again)
	}
	logPath := filepath.Join(run, rundir.EvalLogFile)
	before, _ := os.ReadFile(logPath)
	bad := map[string]string{
		"unknown.csv":  "id,score\nm7,0.5\nm99,0.5\n",
		"nan.csv":      "id,score\nm7,0.5\nm8,NaN\n",
		"text.csv":     "id,score\nm7,0.5\nm8,high\n",
		"changed.csv":  "id,score\nm7,0.5\nm1,123\n",
		"twice.csv":    "id,score\nm7,0.5\nm7,0.6\n",
		"header.csv":   "molecule,value\nm7,0.5\n",
		"quote.csv":    "id,score\nm7,0.5\nm8,\"0.5\n",
		"json.jsonl":   "{\"id\": \"m7\", \"score\": 0.5}\n{\"id\": \"m8\", \"score\": \"x\"}\n",
		"jsonbad.json": "{\"id\": \"m7\", \"score\": 0.5}\n{\"id\": \"m8\", \n",
	}
	for name, text := range bad {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(text), 0o644)
		_, _, err := runCmd(t, newTellCmd(), "", "-run", run, path)
		if err == nil || !strings.Contains(err.Error(), path+":") || !strings.Contains(err.Error(), "nothing was applied") {
			t.Errorf("tell %s: %v, want an error naming %s:LINE and saying nothing was applied", name, err, path)
		}
	}
	if after, _ := os.ReadFile(logPath); !bytes.Equal(before, after) {
		t.Fatalf("rejected tell files changed the evaluation log")
	}
	// JSON lines, with an error for a molecule that could not be made, from standard input.
	var jl strings.Builder
	for i, r := range second {
		if i == 0 {
			fmt.Fprintf(&jl, "{\"id\": %q, \"error\": \"synthesis failed\"}\n", r[0])
			continue
		}
		fmt.Fprintf(&jl, "{\"id\": %q, \"score\": %g}\n", r[0], lengthScore(r[1]))
	}
	if out, _, err := runCmd(t, newTellCmd(), jl.String(), "-run", run, "-"); err != nil || !strings.Contains(out, "told 5 new scores") {
		t.Fatalf("tell JSON lines from standard input: %q, %v", out, err)
	}

	third := askBatch(t, "-run", run)
	if out, _, err := runCmd(t, newStatusCmd(), "", "-run", run, "-best", "3"); err != nil ||
		!strings.Contains(out, "11 calls paid of 26; not finished") || !strings.Contains(out, fmt.Sprintf("%d molecules await scores", len(third))) ||
		!strings.Contains(out, "  "+third[0][0]+"  "+third[0][1]+"\n") {
		t.Errorf("status: %q, %v", out, err)
	}
	// -o writes the scored molecules, best first, as an -init table: the failed one left out, the scores exact.
	best := filepath.Join(t.TempDir(), "best.csv")
	if _, errOut, err := runCmd(t, newStatusCmd(), "", "-run", run, "-o", best); err != nil ||
		!strings.Contains(errOut, "wrote 10 molecules to "+best+"; 1 whose scoring failed left out") {
		t.Errorf("status -o: %q, %v", errOut, err)
	}
	rows, hasScores, err := molfile.Read(best, "demo", math.MaxInt)
	if err != nil || !hasScores || len(rows) != 10 {
		t.Fatalf("status -o's table: %d rows, scores %v, %v", len(rows), hasScores, err)
	}
	for i, r := range rows {
		if i > 0 && r.Score > rows[i-1].Score || !strings.HasPrefix(r.Name, filepath.Base(run)+" call ") {
			t.Errorf("row %d of the table: %+v (best first, named by call)", i+1, r)
		}
	}
	// The same as an SDF: RDKit's molfile blocks, titled and scored as the table's rows.
	bestSDF := filepath.Join(t.TempDir(), "best.sdf")
	if _, errOut, err := runCmd(t, newStatusCmd(), "", "-run", run, "-o", bestSDF); err != nil ||
		!strings.Contains(errOut, "wrote 10 molecules to "+bestSDF) {
		t.Errorf("status -o FILE.sdf: %q, %v", errOut, err)
	}
	recs, hasScores, err := molfile.Read(bestSDF, "demo", math.MaxInt)
	if err != nil || !hasScores || len(recs) != len(rows) {
		t.Fatalf("status -o's SDF: %d records, scores %v, %v", len(recs), hasScores, err)
	}
	for i, r := range recs {
		if r.Name != rows[i].Name || r.Score != rows[i].Score || !strings.Contains(r.MolBlock, "V2000") {
			t.Errorf("record %d of the SDF: %q %v, the table's row: %q %v", i+1, r.Name, r.Score, rows[i].Name, rows[i].Score)
		}
	}
	if len(third) == 0 || third[0][0] != "m12" {
		t.Fatalf("third batch %v, want molecules from m12", third)
	}
	// Switch to optimize: the untold batch is scored by the program, and the run ends with its budget.
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append([]string{"-out", run, "-resume", "-objective-cmd", lengthOracle(t, dir)}, flags...)...)
	if err != nil {
		t.Fatalf("optimize -resume of an ask/tell run: %v\n%s\n%s", err, stdout, stderr)
	}
	smiles, scores := readLogSMILES(t, logPath)
	if len(smiles) != 26 {
		t.Errorf("%d calls in the log, want the budget 26", len(smiles))
	}
	seen := map[string]bool{}
	for i, s := range smiles {
		if seen[s] {
			t.Errorf("%s paid twice", s)
		}
		seen[s] = true
		if i == 6 && scores[i] != 0 {
			t.Errorf("call 7 (told an error) scored %v", scores[i])
		}
	}
	for _, r := range third {
		if !seen[r[1]] {
			t.Errorf("asked %s (%s) was not scored by the optimize that took over", r[0], r[1])
		}
	}
	// Every molecule the optimiser proposed keeps its origin in the log, told or scored by the program; the
	// initial ones have none. The ledger keeps the origins of those it handed out.
	logRecs, _, _, err := rundir.ReadLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range logRecs {
		if (r.From != nil) != (r.Call > 6) || r.From != nil && len(r.From.Parents) == 0 {
			t.Errorf("call %d (%s): from %+v; want an origin with parents from call 7 on, none before", r.Call, r.SMILES, r.From)
		}
	}
	ledger, err := rundir.ReadLedger(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ledger.Items {
		if (a.From != nil) != (a.Batch > 1) {
			t.Errorf("ledger %s (batch %d): from %+v; want an origin from the second batch on", a.ID, a.Batch, a.From)
		}
	}
	if rows := askBatch(t, "-run", run); len(rows) != 0 {
		t.Errorf("ask of a finished run gave %v", rows)
	}
}

// TestTellConcurrent tells one batch from 20 clients at once, each sending an overlapping half of it: every
// score is paid once, and none is lost.
func TestTellConcurrent(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	batch := askBatch(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "40", "-budget", "60",
		"-model", dir, "-anchors", "1", "-queries", "5")
	if len(batch) != 40 {
		t.Fatalf("asked %d molecules, want 40", len(batch))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for c := range 20 {
		lo := c * 20 / 19 // windows of 20 from 0 to 20: together the whole batch
		file := tellFile(t, dir, fmt.Sprintf("client%d.csv", c), batch[lo:lo+20])
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, stderr, err := runCmd(t, newTellCmd(), "", "-run", run, file); err != nil {
				errs <- fmt.Errorf("client %d: %v (%s)", c, err, stderr)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	smiles, scores := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile))
	if len(smiles) != 40 {
		t.Errorf("%d calls in the log after 20 overlapping tells, want 40", len(smiles))
	}
	want := map[string]float64{}
	for _, r := range batch {
		want[r[1]] = lengthScore(r[1])
	}
	for i, s := range smiles {
		if w, ok := want[s]; !ok || w != scores[i] {
			t.Errorf("call %d: %s scored %v, want %v (asked: %v)", i+1, s, scores[i], w, ok)
		}
		delete(want, s)
	}
}

// TestOptimizeThenAsk switches a run from optimize to ask/tell: optimize scores the initial molecules with a
// program that then closes (it answers {"ok": false}), and ask goes on from where the run stopped.
func TestOptimizeThenAsk(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	script := filepath.Join(dir, "closing.py")
	os.WriteFile(script, []byte(`import json, sys
for n, line in enumerate(sys.stdin):
    req = json.loads(line)
    if n == 0:
        resp = {"ok": True, "scores": [len(s) / 10 for s in req["smiles"]]}
    else:
        resp = {"ok": False, "error": "the lab is closed"}
    resp["id"] = req["id"]
    print(json.dumps(resp), flush=True)
`), 0o644)
	python := strings.Fields(lengthOracle(t, dir))[0]
	run := filepath.Join(dir, "run")
	_, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", python+" "+script, "-init", guacamol100,
		"-init-count", "6", "-budget", "16", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir, "-out", run)
	if err == nil || !strings.Contains(err.Error(), "the lab is closed") {
		t.Fatalf("optimize with a program that closes: %v\n%s", err, stderr)
	}
	if smiles, _ := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile)); len(smiles) != 6 {
		t.Fatalf("%d calls paid before the program closed, want the 6 initial molecules", len(smiles))
	}
	batch := askBatch(t, "-run", run)
	if len(batch) == 0 || batch[0][0] != "m1" {
		t.Fatalf("ask after optimize: %v", batch)
	}
	if out := tell(t, run, tellFile(t, dir, "b.csv", batch)); !strings.Contains(out, fmt.Sprintf("told %d new scores", len(batch))) {
		t.Errorf("tell: %q", out)
	}
}

// After the last tell the run is finished: status says so, and the next ask says it in one line (no banner) and
// writes only the CSV header.
func TestAskTellFinishedInOneLine(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	flags := []string{"-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "6", "-budget", "11", "-anchors", "1",
		"-queries", "5", "-candidates", "100", "-model", dir}
	tell(t, run, tellFile(t, dir, "first.csv", askBatch(t, flags...)))
	_, stderr, err := runCmd(t, newTellCmd(), "", "-run", run, tellFile(t, dir, "second.csv", askBatch(t, "-run", run)))
	if err != nil || !strings.Contains(stderr, "nfbo tell: the run in "+run+" is finished: all 11 calls of its budget are paid") {
		t.Errorf("the last tell: %v\nstderr %q", err, stderr)
	}
	if out, _, err := runCmd(t, newStatusCmd(), "", "-run", run, "-best", "0"); err != nil ||
		!strings.Contains(out, "11 calls paid of 11; finished\n") {
		t.Errorf("status after the last tell: %q, %v", out, err)
	}
	stdout, stderr, err := runCmd(t, newAskCmd(), "", "-run", run)
	want := "nfbo ask: the run in " + run + " is finished: all 11 calls of its budget are paid; nothing to ask"
	if err != nil || stdout != "id,smiles\n" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("ask after the last tell: %v\nstdout %q\nstderr %q\nwant one line starting %q", err, stdout, stderr, want)
	}
}
