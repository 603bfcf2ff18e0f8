package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

// writeRun writes a run directory with the given paid scores.
func writeRun(t *testing.T, dir string, info rundir.Info, scores []float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, rundir.InfoFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	for i, s := range scores {
		rec := rundir.Record{Call: i + 1, SMILES: fmt.Sprintf("C%d", i), Canonical: fmt.Sprintf("C%d", i),
			Score: s, Time: time.Unix(0, 0).UTC(), Task: info.Task}
		line, _ := json.Marshal(rec)
		log.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.EvalLogFile), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReportFromLogs(t *testing.T) {
	dir := t.TempDir()
	for seed := 1; seed <= 2; seed++ {
		scores := make([]float64, 300)
		for i := range scores {
			scores[i] = float64(i%50) / 100 // best 0.49
		}
		scores[10] = 0.5 + 0.1*float64(seed) // best 0.6 or 0.7
		writeRun(t, filepath.Join(dir, "qed", "nfbo", fmt.Sprintf("seed%d", seed)),
			rundir.Info{Setting: "1000+9000", Task: "qed", Method: "nfbo", Seed: seed, Budget: 300, Finished: true, Seconds: 10}, scores)
		writeRun(t, filepath.Join(dir, "qed", "prior", fmt.Sprintf("seed%d", seed)),
			rundir.Info{Setting: "1000+9000", Task: "qed", Method: "prior", Seed: seed, Budget: 300, Finished: true,
				InitialScores: []float64{0.2}}, []float64{0.1, 0.15})
	}
	// valt's initial set holds two added molecules; it stays in the 100+500 table, with a note.
	writeRun(t, filepath.Join(dir, "valt", "nfbo", "seed1"),
		rundir.Info{Setting: "100+500", Task: "valt", Method: "nfbo", Seed: 1, Budget: 500, Initial: 102, Finished: true}, []float64{0.1})
	// An unfinished run is marked and stays out of the sums.
	writeRun(t, filepath.Join(dir, "zale", "nfbo", "seed1"),
		rundir.Info{Setting: "100+500", Task: "zale", Method: "nfbo", Seed: 1, Budget: 500, Initial: 100}, []float64{0.3})
	suite, err := LoadSuite(dir)
	if err != nil || len(suite.Warnings) != 0 {
		t.Fatal(err, suite.Warnings)
	}
	all := suite.Runs
	if len(all) != 6 {
		t.Fatalf("loaded %d runs, want 6", len(all))
	}
	runs := all[2:] // sorted by setting and task: valt and zale (100+500) before qed (1000+9000)
	f := runs[0].Figures()
	if runs[0].Info.Method != "nfbo" || f.Top[0] != 0.6 || f.Calls != 300 {
		t.Fatalf("first run %s: Top-1 %v, calls %d; want nfbo, 0.6, 300", runs[0].Info.Method, f.Top[0], f.Calls)
	}
	// Top-10 of the prior run counts its initial score and the missing 7 as 0.
	if got := runs[2].Figures().Top[1]; math.Abs(got-(0.2+0.1+0.15)/10) > 1e-15 {
		t.Fatalf("prior Top-10 = %v, want 0.045", got)
	}
	curve := runs[2].BestCurve()
	if len(curve) != 3 || curve[0] != 0.2 || curve[2] != 0.2 {
		t.Fatalf("prior best curve %v, want [0.2 0.2 0.2]", curve)
	}
	all[0].Info.Version, all[1].Info.Version = "v1 (commit abc)", "v1 (commit abc)"
	var md bytes.Buffer
	if err := WriteMarkdown(&md, all); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{"Written by nfbo v1 (commit abc) (2 runs).", "### Setting 1000+9000", "| qed | nfbo | 2 | 300 | 0.650 ± 0.071 |", "AUC Top-10 0.941 (ours ", "Top-1 0.948 (ours -0.298)", "| prior | 1 |",
		"### Setting 100+500", "valt starts from 102 initial molecules, not 100",
		"| zale | nfbo | 1 (1 unfinished) | 1 |", "| nfbo | 1 | 0.100 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	var tsv bytes.Buffer
	if err := WriteRunsTSV(&tsv, all); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(tsv.String()), "\n")
	if len(rows) != len(all)+1 || !strings.HasPrefix(rows[0], "setting\ttask\tmethod\tseed") ||
		len(strings.Split(rows[1], "\t")) != 19 || !strings.Contains(rows[1], "\tv1 (commit abc)\t") {
		t.Errorf("runs.tsv:\n%s", tsv.String())
	}
	files, err := WritePlots(filepath.Join(dir, "img"), runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("plots %v, want one PNG and one SVG", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() < 1000 {
			t.Fatalf("plot %s missing or tiny: %v", f, err)
		}
	}
}

// TestPublishedUnfinished checks that an unfinished run is set beside the
// published figure without a difference, since its figures are not final.
func TestPublishedUnfinished(t *testing.T) {
	means := [6]float64{0.9, 0.9, 0.9, 0.9, 0.9, 0.9}
	if got, want := published("qed", "1000+9000", "nfbo", means, false), "AUC Top-10 0.941, Top-1 0.948 (ours: unfinished)"; got != want {
		t.Errorf("unfinished: %q, want %q", got, want)
	}
	if got, want := published("qed", "1000+9000", "nfbo", means, true), "AUC Top-10 0.941 (ours -0.041), Top-1 0.948 (ours -0.048)"; got != want {
		t.Errorf("finished: %q, want %q", got, want)
	}
	if got := published("qed", "1000+9000", "ga", means, true); got != "—" {
		t.Errorf("ga: %q, want —", got)
	}
}

// The report's defects of issue #11: two runs with one seed are not two seeds, an external objective is not
// merged with the RDKit task of the same name, a run without a log is marked rather than reported as 0 calls, a
// torn last log line is said, and a damaged run.json leaves out that run, with a warning, not the report.
func TestReportSuiteDefects(t *testing.T) {
	dir := t.TempDir()
	info := func(seed int, objective string) rundir.Info {
		return rundir.Info{Setting: "100+500", Task: "qed", Method: "nfbo", Seed: seed, Budget: 3, Finished: true, Objective: objective}
	}
	writeRun(t, filepath.Join(dir, "qed", "nfbo", "seed1"), info(1, rundir.ObjectiveRDKit), []float64{0.1, 0.2, 0.3})
	// A copy of seed 1 with fewer calls, and a legacy run.json (no objective) for the same seed: one run.
	writeRun(t, filepath.Join(dir, "qed", "nfbo", "seed1.bak"), info(1, ""), []float64{0.9})
	writeRun(t, filepath.Join(dir, "qed", "nfbo", "seed2"), info(2, rundir.ObjectiveRDKit), []float64{0.2, 0.2, 0.4})
	// The same task name, scored by an external program: its own row.
	writeRun(t, filepath.Join(dir, "ext", "seed1"), info(1, rundir.ObjectiveCommand("python3 /home/u/oracle.py")), []float64{5, 6, 7})
	// No log at all.
	writeRun(t, filepath.Join(dir, "nolog"), rundir.Info{Setting: "100+500", Task: "adip", Method: "nfbo", Seed: 1, Budget: 3}, nil)
	os.Remove(filepath.Join(dir, "nolog", rundir.EvalLogFile))
	// A torn last line.
	writeRun(t, filepath.Join(dir, "torn"), rundir.Info{Setting: "100+500", Task: "zale", Method: "nfbo", Seed: 1, Budget: 3}, []float64{0.5})
	f, _ := os.OpenFile(filepath.Join(dir, "torn", rundir.EvalLogFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"call":2,"smi`)
	f.Close()
	// A log that lost calls run.json records as paid.
	lost := info(4, rundir.ObjectiveRDKit)
	lost.Calls = 3
	writeRun(t, filepath.Join(dir, "lost"), lost, []float64{0.1})
	// A damaged run.json.
	writeRun(t, filepath.Join(dir, "bad"), info(3, ""), []float64{1})
	os.WriteFile(filepath.Join(dir, "bad", rundir.InfoFile), []byte(`{"setting":"100+500","task":"qed",`), 0o644)

	s, err := LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(s.Warnings, "\n")
	for _, want := range []string{
		"left out " + filepath.Join(dir, "bad") + ": " + filepath.Join(dir, "bad", rundir.InfoFile) + ": unexpected end of JSON input",
		"left out " + filepath.Join(dir, "qed", "nfbo", "seed1.bak") + ": it repeats setting 100+500, task qed (objective rdkit), method nfbo, seed 1 of " +
			filepath.Join(dir, "qed", "nfbo", "seed1") + ", which has 3 calls",
		filepath.Join(dir, "torn", rundir.EvalLogFile) + ": the last line (14 bytes) has no newline",
		filepath.Join(dir, "lost", rundir.EvalLogFile) + " holds 1 calls, but " + filepath.Join(dir, "lost", rundir.InfoFile) + " records 3 paid",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if len(s.Runs) != 6 {
		t.Fatalf("%d runs, want 6 (3 qed seeds, the external one, no log, torn)", len(s.Runs))
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s.Runs); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| qed | nfbo | 3 | 2 | 0.267 ± 0.153 |",     // seeds 1, 2 and 4 (best 0.3, 0.4 and 0.1), not the copy
		"| qed [python3 oracle.py] | nfbo | 1 | 3 |", // the external objective on its own row
		"| adip | nfbo | 1 (1 without a log) | 0 |",
		"| zale | nfbo | 1 (1 unfinished) | 1 |",
		"| nfbo | 2 |", // the sum: qed and qed [python3 oracle.py]; adip and zale are left out
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// FuzzParseRunInfo feeds arbitrary bytes as a run.json: rundir.ParseInfo must never panic, and what it accepts
// must survive a round trip through JSON unchanged. The seed corpus is testdata/fuzz/FuzzParseRunInfo and the
// f.Add calls.
func FuzzParseRunInfo(f *testing.F) {
	good, _ := json.Marshal(rundir.Info{Setting: "100+500", Task: "qed", Method: "nfbo", Seed: 1, Budget: 500, Initial: 100,
		Finished: true, Seconds: 12.5, InitialScores: []float64{0.1, 0.2}, Objective: rundir.ObjectiveRDKit, Calls: 500})
	f.Add(good)
	f.Add([]byte(`{"setting":"100+500","task":"qed","method":"nfbo","seed":-1}`))
	f.Add([]byte(`{"setting":"100+500","task":"qed","method":"nfbo","future_field":[1,2]}`))
	f.Add([]byte(`{"setting":"100+500",`))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := rundir.ParseInfo(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(info)
		if err != nil {
			t.Fatalf("accepted %q, which does not marshal: %v", data, err)
		}
		again, err := rundir.ParseInfo(b)
		if err != nil {
			t.Fatalf("accepted %q but not its round trip %s: %v", data, b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
			t.Errorf("round trip changed %s into %s", b, b2)
		}
		_ = info.ObjectiveID()
	})
}

// TestPMOSideBySide checks PMO's side-by-side table: one column per method beside the published figures, an
// unfinished run marked, and sums over the tasks where every method is final only.
func TestPMOSideBySide(t *testing.T) {
	cells := map[[2]string]aucCell{
		{"qed", "ga"}:            {0.9, 0.01, 3, true},
		{"qed", "nfbo"}:          {0.8, 0, 1, true},
		{"median2", "ga"}:        {0.2, 0, 1, true},
		{"median2", "nfbo"}:      {0.1, 0, 1, false},
		{"zaleplon_mpo", "nfbo"}: {0.5, 0, 1, true},
	}
	var b strings.Builder
	writePMOSideBySide(&b, []string{"median2", "qed", "zaleplon_mpo"}, []string{"ga", "nfbo"}, cells)
	tableHas(t, b.String(),
		"| task | ga | nfbo | published NF-BO | Genetic GFN |",
		"| median2 | 0.200 (1) | unfinished | 0.260 | 0.294 |",
		"| qed | 0.900 ± 0.010 (3) | 0.800 (1) | 0.941 | 0.942 |",
		"| zaleplon_mpo | — | 0.500 (1) | 0.504 | 0.552 |",
		"| **sum, 1 tasks** | **0.900** | **0.800** | **0.941** | **0.942** |",
		"Published sums over the 20 tasks (AUC Top-10, the GenMol paper's collection): GenMol 15.475*, f-RAG 14.063*,",
		"Genetic GFN 13.594, NF-BO 12.458,",
		"(marked *: starts each task from fragments of all 249,455 ZINC250k molecules",
		"Graph GA 11.437, GP BO 10.805 (marked")

	// A probe on one task of three is shown but left out of the sums, which would otherwise cover no task.
	cells[[2]string{"qed", "probe"}] = aucCell{0.7, 0, 1, true}
	b.Reset()
	writePMOSideBySide(&b, []string{"median2", "qed", "zaleplon_mpo"}, []string{"ga", "nfbo", "probe"}, cells)
	tableHas(t, b.String(),
		"| qed | 0.900 ± 0.010 (3) | 0.800 (1) | 0.700 (1) | 0.941 | 0.942 |",
		"| **sum, 1 tasks** | **0.900** | **0.800** | — | **0.941** | **0.942** |",
		"left out, with the tasks they ran: probe (1 of 3)")
}

// tableHas fails t for each of want that the table out lacks.
func tableHas(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
}

// TestPublishedGeneticGFNSum checks the Genetic GFN figures against the 20-task sum published.md gives.
func TestPublishedGeneticGFNSum(t *testing.T) {
	var sum float64
	for task, v := range PublishedGeneticGFNPMO {
		if _, ok := PublishedPMO[task]; !ok {
			t.Errorf("Genetic GFN's %s is not a PMO task of PublishedPMO", task)
		}
		sum += v
	}
	if len(PublishedGeneticGFNPMO) != 20 || math.Abs(sum-13.594) > 5e-4 {
		t.Errorf("%d tasks summing to %.4f, want 20 summing to 13.594", len(PublishedGeneticGFNPMO), sum)
	}
}

// TestRunsTSVRoundTrip: a runs.tsv read back gives the tables its runs gave, and pooled with the run directories
// it came from counts each run once; plots leave the rows out; a damaged row is an error naming its line.
func TestRunsTSVRoundTrip(t *testing.T) {
	dir := t.TempDir()
	scores := func(seed int) []float64 {
		s := make([]float64, 200)
		for i := range s {
			s[i] = float64((i*seed*7919)%97) / 100
		}
		return s
	}
	writeRun(t, filepath.Join(dir, "a", "seed1"), rundir.Info{Setting: "100+200", Task: "med2", Method: "nfbo", Seed: 1,
		Budget: 200, Finished: true, Seconds: 12, CPUSeconds: 7, Version: "abc", Kernels: "go; OpenBLAS (netlib), Haswell kernels"}, scores(1))
	writeRun(t, filepath.Join(dir, "a", "seed2"), rundir.Info{Setting: "100+200", Task: "oral_mpo", Method: "ga", Seed: 2,
		Budget: 200, Objective: rundir.ObjectiveCommand("/usr/bin/python3 /x/user_objectives.py oral_mpo"), Minimize: true,
		Seconds: 3}, scores(2)[:150])
	suite, err := LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tsv, want, got bytes.Buffer
	if err := WriteRunsTSV(&tsv, suite.Runs); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadRunsTSV("runs.tsv", bytes.NewReader(tsv.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WriteRunsTSV(&again, rows); err != nil {
		t.Fatal(err)
	}
	if again.String() != tsv.String() {
		t.Errorf("runs.tsv read back and written again:\n%s\nwant\n%s", again.String(), tsv.String())
	}
	if k := rows[0].Info.Kernels; k != "go; OpenBLAS (netlib), Haswell kernels" {
		t.Errorf("the kernels read back: %q", k)
	}
	if err := WriteMarkdown(&want, suite.Runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&got, rows); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("the tables from the rows:\n%s\nwant those from the logs:\n%s", got.String(), want.String())
	}
	// nfbo's CPU seconds beside the wall seconds where the run has them, the wall seconds alone where not.
	if !strings.Contains(got.String(), " 12 (CPU 7) |") || !strings.Contains(got.String(), " 3 | ") ||
		strings.Contains(got.String(), "(CPU 0)") {
		t.Errorf("the s/run cells:\n%s", got.String())
	}
	path := filepath.Join(dir, "runs.tsv")
	if err := os.WriteFile(path, tsv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pooled, err := LoadPaths([]string{path, filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	if len(pooled.Runs) != 2 || len(pooled.Warnings) != 2 {
		t.Errorf("pooled the rows with their directories: %d runs, warnings %q; want 2 runs, 2 warnings", len(pooled.Runs), pooled.Warnings)
	}
	plots, err := taskPlots(rows)
	if err != nil || len(plots) != 0 {
		t.Errorf("plots of rows: %d, %v", len(plots), err)
	}
	lines := strings.Split(tsv.String(), "\n")
	for _, c := range []struct{ name, row, want string }{
		{"short row", "100+200\tmed2\tnfbo\t1", "runs.tsv:3: 4 columns"},
		{"bad number", strings.Replace(lines[1], "\t12\t", "\ttwelve\t", 1), `runs.tsv:3: column seconds: "twelve"`},
		{"bad flag", strings.Replace(lines[1], "\ttrue\t", "\tyes\t", 1), `runs.tsv:3: column finished: "yes"`},
	} {
		bad := lines[0] + "\n" + lines[1] + "\n" + c.row + "\n"
		if _, err := ReadRunsTSV("runs.tsv", strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := ReadRunsTSV("x.csv", strings.NewReader("a,b\n")); err == nil || !strings.Contains(err.Error(), "x.csv:1: not a runs.tsv") {
		t.Errorf("not a runs.tsv: %v", err)
	}
}

// TestReportPaidFewer: a run that paid for fewer initial molecules than its setting's (the calls in all the
// same) is reported under the setting with a note naming its method and count, from its directory and from its
// row; rows of the former format, without the counts, still read.
func TestReportPaidFewer(t *testing.T) {
	dir := t.TempDir()
	scores := []float64{0.1, 0.3, 0.2}
	writeRun(t, filepath.Join(dir, "qed", "nfbo", "seed1"), rundir.Info{Setting: "1000+9000", Task: "qed", Method: "nfbo",
		Seed: 1, Budget: 10000, Initial: 200, InitialCalls: 200, Finished: true}, scores)
	writeRun(t, filepath.Join(dir, "qed", "ga", "seed1"), rundir.Info{Setting: "1000+9000", Task: "qed", Method: "ga",
		Seed: 1, Budget: 10000, Initial: 1000, InitialCalls: 1000, Finished: true}, scores)
	suite, err := LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tsv bytes.Buffer
	if err := WriteRunsTSV(&tsv, suite.Runs); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadRunsTSV("runs.tsv", bytes.NewReader(tsv.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for name, runs := range map[string][]Run{"logs": suite.Runs, "rows": rows} {
		var md bytes.Buffer
		if err := WriteMarkdown(&md, runs); err != nil {
			t.Fatal(err)
		}
		out := md.String()
		if want := "nfbo pays for 200 initial molecules, not 1000"; !strings.Contains(out, want) {
			t.Errorf("from the %s: report lacks %q:\n%s", name, want, out)
		}
		if strings.Contains(out, "ga pays") || strings.Contains(out, "added molecules") {
			t.Errorf("from the %s: a note on the GA's 1,000:\n%s", name, out)
		}
	}
	// The formats of earlier nfbo: without the initial counts (15 columns), without the CPU seconds (17), without
	// the kernels (18).
	for _, cols := range []int{15, 17, 18} {
		var former []string
		for _, line := range strings.Split(strings.TrimSuffix(tsv.String(), "\n"), "\n") {
			f := strings.Split(line, "\t")
			former = append(former, strings.Join(f[:cols], "\t"))
		}
		old, err := ReadRunsTSV("former.tsv", strings.NewReader(strings.Join(former, "\n")+"\n"))
		if err != nil || len(old) != 2 || old[0].Info.Method != rows[0].Info.Method ||
			old[0].Info.Initial != map[int]int{15: 0, 17: rows[0].Info.Initial, 18: rows[0].Info.Initial}[cols] {
			t.Errorf("a runs.tsv of %d columns: %d rows, %v", cols, len(old), err)
		}
	}
}

// readRows reads the runs.tsv at path.
func readRows(t *testing.T, path string) []Run {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadRunsTSV(path, f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestWriteRows: the rows file holds one row per finished run, kept across calls (rows of other suites too),
// and never an unfinished run's; a damaged file is an error that leaves it as it was.
func TestWriteRows(t *testing.T) {
	dir := t.TempDir()
	scores := make([]float64, 50)
	for i := range scores {
		scores[i] = float64(i%7) / 10
	}
	run := func(task string, seed int, finished bool) Run {
		d := filepath.Join(dir, task, fmt.Sprint(seed))
		writeRun(t, d, rundir.Info{Setting: "100+50", Task: task, Method: "nfbo", Seed: seed, Budget: 50, Finished: finished}, scores)
		r, err := LoadRun(d)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	path := filepath.Join(dir, "rows.tsv")
	count := func() int { return len(readRows(t, path)) }
	a1, a2 := run("med2", 1, true), run("med2", 2, false)
	if err := WriteRows(context.Background(), path, []Run{a1, a2}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("one finished run and one unfinished: %d rows, want 1", n)
	}
	if err := WriteRows(context.Background(), path, []Run{a1, run("zale", 1, true)}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("the same finished run again and another: %d rows, want 2", n)
	}
	before, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(before, "100+50\tmed2\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteRows(context.Background(), path, []Run{a1}); err == nil || !strings.Contains(err.Error(), "rows.tsv:4") {
		t.Errorf("a damaged rows file: %v, want an error naming rows.tsv:4", err)
	}
}

// TestWriteRowsConcurrent: writers that share a rows file, each adding its own runs, lose none of each other's
// rows (each read-merge-write holds the file's lock; without it the last write of an interleaved pair wins).
func TestWriteRowsConcurrent(t *testing.T) {
	dir := t.TempDir()
	scores := make([]float64, 50)
	const writers, each = 8, 4
	runs := make([][]Run, writers)
	for w := range runs {
		for s := range each {
			d := filepath.Join(dir, fmt.Sprintf("task%d", w), fmt.Sprint(s+1))
			writeRun(t, d, rundir.Info{Setting: "100+50", Task: fmt.Sprintf("task%d", w), Method: "nfbo", Seed: s + 1, Budget: 50, Finished: true}, scores)
			r, err := LoadRun(d)
			if err != nil {
				t.Fatal(err)
			}
			runs[w] = append(runs[w], r)
		}
	}
	path := filepath.Join(dir, "rows.tsv")
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for s := range each {
				if err := WriteRows(context.Background(), path, runs[w][s:s+1]); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(readRows(t, path)); n != writers*each {
		t.Errorf("%d writers adding %d rows each: the file holds %d rows, want %d", writers, each, n, writers*each)
	}
}

// TestRunJobsStopsOnCancel: once the context ends no job starts, not even the one waiting for the slot that the
// interrupted run frees (it left a run directory with nothing but its log's first line).
func TestRunJobsStopsOnCancel(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	jobs := []Job{
		{Dir: filepath.Join(out, "a"), Argv: []string{"/bin/sleep", "10"}, Task: "a", Method: "nfbo", Seed: 1},
		{Dir: filepath.Join(out, "b"), Argv: []string{"/bin/true"}, Task: "b", Method: "nfbo", Seed: 1},
	}
	time.AfterFunc(200*time.Millisecond, cancel)
	var progress bytes.Buffer
	if err := RunJobs(ctx, &progress, out, jobs, RunOptions{Procs: 1}); err == nil {
		t.Error("RunJobs after its context ended: no error")
	}
	if _, err := os.Stat(jobs[1].Dir); err == nil {
		t.Errorf("the job after the interrupted one started (%s exists)", jobs[1].Dir)
	}
}

// TestRunJobsSkipsRows: with RunOptions.Rows a job whose finished row the file holds is not run again (here its
// command would fail), and the others run.
func TestRunJobsSkipsRows(t *testing.T) {
	dir := t.TempDir()
	scores := make([]float64, 50)
	d := filepath.Join(dir, "done")
	writeRun(t, d, rundir.Info{Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 1, Budget: 50, Finished: true}, scores)
	r, err := LoadRun(d)
	if err != nil {
		t.Fatal(err)
	}
	rows := filepath.Join(dir, "rows.tsv")
	if err := WriteRows(context.Background(), rows, []Run{r}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "suite")
	jobs := []Job{
		{Dir: filepath.Join(out, "med2", "nfbo", "seed1"), Argv: []string{"/bin/false"}, Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 1},
		{Dir: filepath.Join(out, "med2", "nfbo", "seed2"), Argv: []string{"/bin/true"}, Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 2},
		{Dir: filepath.Join(out, "med2", "nfbo", "seed3"), Argv: []string{"/bin/false"}, Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 3},
	}
	// A job's run finished before the bench, without its row: its row joins the file and the partial report.
	writeRun(t, jobs[2].Dir, rundir.Info{Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 3, Budget: 50, Finished: true}, scores)
	// Another bench's run under the same directory (a probe beside the campaign, with rows files of their own):
	// in the partial report, not in this bench's rows.
	writeRun(t, filepath.Join(out, "med2", "probe", "seed1"),
		rundir.Info{Setting: "100+50", Task: "med2", Method: "probe", Seed: 1, Budget: 50, Finished: true}, scores)
	var progress bytes.Buffer
	if err := RunJobs(context.Background(), &progress, out, jobs, RunOptions{Procs: 1, Rows: rows}); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "seed1: finished, by its row in") {
		t.Errorf("progress does not say the run with a row was skipped:\n%s", progress.String())
	}
	if _, err := os.Stat(filepath.Join(jobs[1].Dir, rundir.RunLogFile)); err != nil {
		t.Errorf("the run without a row did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
		t.Errorf("no partial report after a run finished: %v", err)
	}
	if got, err := readRowsFile(rows); err != nil || len(got) != 2 {
		t.Errorf("rows after a run finished: %d rows (%v), want the kept one and the job's finished one", len(got), err)
	} else {
		for _, r := range got {
			if r.Info.Method != "nfbo" {
				t.Errorf("rows hold another bench's run: %+v", r.Info)
			}
		}
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "probe") {
		t.Errorf("the partial report leaves out the directory's other run (%v)", err)
	}
	if err := RunJobs(context.Background(), &progress, out, jobs[:1], RunOptions{Procs: 1}); err == nil {
		t.Error("without -rows the run whose command fails ran and succeeded")
	}
	// A run that finished without its row (its bench killed after the run): the next bench writes the row at
	// once, though it has nothing to run.
	seed4 := filepath.Join(out, "med2", "nfbo", "seed4")
	writeRun(t, seed4, rundir.Info{Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 4, Budget: 50, Finished: true}, scores)
	only := []Job{{Dir: seed4, Argv: []string{"/bin/false"}, Setting: "100+50", Task: "med2", Method: "nfbo", Seed: 4}}
	if err := RunJobs(context.Background(), &progress, out, only, RunOptions{Procs: 1, Rows: rows}); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if got, err := readRowsFile(rows); err != nil || len(got) != 3 {
		t.Errorf("rows after a bench with a finished run and nothing to run: %d rows (%v), want 3 (seed4's added)", len(got), err)
	}
}

// Scores of any size print in the tables: an objective's 1e308 as 1.000e+308, not as 309 digits.
func TestReportHugeScores(t *testing.T) {
	dir := t.TempDir()
	for seed := 1; seed <= 2; seed++ {
		writeRun(t, filepath.Join(dir, "qed", "nfbo", fmt.Sprintf("seed%d", seed)),
			rundir.Info{Setting: "100+500", Task: "qed", Method: "nfbo", Seed: seed, Budget: 3, Finished: true},
			[]float64{1e308, -1e308, 5e307 * float64(seed)})
	}
	md := reportOf(t, dir)
	if !strings.Contains(md, "1.000e+308") {
		t.Errorf("no 1.000e+308 in the report:\n%s", md)
	}
	if strings.Contains(md, "Inf") || strings.Contains(md, "NaN") {
		t.Errorf("a figure overflowed:\n%s", md)
	}
	if m, sd := meanStd([]float64{1e308, -1e308, 1e308}); math.Abs(m-1e308/3) > 1e293 || math.Abs(sd-1e308*math.Sqrt(4.0/3)) > 1e294 {
		t.Errorf("meanStd(1e308, -1e308, 1e308) = %g, %g; want 3.333e307, 1.155e308", m, sd)
	}
	for i, l := range strings.Split(md, "\n") {
		if len(l) > 600 {
			t.Errorf("line %d is %d bytes: %.120s…", i+1, len(l), l)
		}
	}
}

// TestPaired checks the paired table: differences by seed, the pairs led, the sum of the means, the tasks beyond
// their sd, the seed sums only where both methods finished every task, and methods with one pair left out.
func TestPaired(t *testing.T) {
	bySeed := map[[2]string]map[int]float64{
		{"qed", "nfbo"}:          {1: 0.9, 2: 0.8, 3: 0.7},
		{"qed", "graph-ga"}:      {1: 0.5, 2: 0.6, 3: 0.6},
		{"median2", "nfbo"}:      {1: 0.3, 2: 0.2},
		{"median2", "graph-ga"}:  {1: 0.4, 2: 0.3},
		{"median2", "nfbo-once"}: {1: 0.1},
	}
	// One pair on other kernels, one where a run's are unknown (not counted).
	kernels := map[[2]string]map[int]string{
		{"qed", "nfbo"}:     {1: "go; Haswell", 2: "go; Haswell", 3: "go; Haswell"},
		{"qed", "graph-ga"}: {1: "go; Cooperlake", 2: "go; Haswell", 3: ""},
	}
	var b strings.Builder
	writePaired(&b, "nfbo", "AUC Top-10", []string{"median2", "qed"}, []string{"graph-ga", "nfbo", "nfbo-once"}, bySeed, kernels)
	out := b.String()
	tableHas(t, out,
		"| task | graph-ga |\n",
		"| median2 | -0.100 ± 0.000 (2), 0 of 2 |",
		"| qed | +0.233 ± 0.153 (3), 3 of 3 |",
		"| **sum of the means** | **+0.133** (2 tasks) |",
		"| tasks ahead, behind by more than the sd (two pairs or more) | 1, 1 |",
		"nfbo against graph-ga: seed 1 1.200 against 0.900 (+0.300); seed 2 1.000 against 0.900 (+0.100).",
		"1 of the 5 pairs of nfbo and graph-ga ran on different kernels")
	if strings.Contains(out, "nfbo-once") || strings.Contains(out, "seed 3") {
		t.Errorf("a method with one pair, or a seed without every task, is in the table:\n%s", out)
	}
	b.Reset()
	writePaired(&b, "nfbo", "AUC Top-10", []string{"qed"}, []string{"ga"}, map[[2]string]map[int]float64{{"qed", "ga"}: {1: 0.5}}, nil)
	if b.Len() != 0 {
		t.Errorf("a table without nfbo: %q", b.String())
	}
}

// TestPairedFigure: the paired table reads AUC Top-10 at PMO's budget and Top-10 at a lab's (100+500), the
// figures each setting is judged on.
func TestPairedFigure(t *testing.T) {
	dir := t.TempDir()
	for _, setting := range []string{"1000+9000", "100+500"} {
		for seed := 1; seed <= 2; seed++ {
			for i, method := range []string{"nfbo", "ga"} {
				scores := []float64{0.1, 0.2 + 0.1*float64(i)}
				writeRun(t, filepath.Join(dir, setting, method, fmt.Sprintf("seed%d", seed)),
					rundir.Info{Setting: setting, Task: "qed", Method: method, Seed: seed, Budget: 2, Finished: true}, scores)
			}
		}
	}
	out := reportOf(t, dir)
	lab, pmo := strings.Index(out, "### Setting 100+500"), strings.Index(out, "### Setting 1000+9000")
	if lab < 0 || pmo < lab {
		t.Fatalf("settings out of order:\n%s", out)
	}
	tableHas(t, out[lab:pmo], "nfbo against each method on the same seeds (Top-10, nfbo − method",
		"| qed | -0.010 ± 0.000 (2), 0 of 2 |")
	tableHas(t, out[pmo:], "nfbo against each method on the same seeds (AUC Top-10, nfbo − method")
}

// reportOf returns the Markdown report of the runs under dir.
func reportOf(t *testing.T, dir string) string {
	t.Helper()
	suite, err := LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, suite.Runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Finished run directories made by another nfbo count as done (a campaign resumed by a later binary), and
// progress says how many and names one (after a change of default they are not the new default's runs).
func TestRunJobsNamesOtherVersions(t *testing.T) {
	out := t.TempDir()
	scores := make([]float64, 50)
	var jobs []Job
	for seed, version := range []string{"nfbo A", "nfbo B", "nfbo A"} {
		j := Job{Dir: filepath.Join(out, "med2", "nfbo", fmt.Sprintf("seed%d", seed+1)), Argv: []string{"/bin/false"},
			Setting: "100+50", Task: "med2", Method: "nfbo", Seed: seed + 1}
		writeRun(t, j.Dir, rundir.Info{Setting: j.Setting, Task: j.Task, Method: j.Method, Seed: j.Seed, Budget: 50,
			Finished: true, Version: version}, scores)
		jobs = append(jobs, j)
	}
	for _, tc := range []struct {
		version, want string
	}{
		{"nfbo B", fmt.Sprintf("bench: 2 finished runs were made by another nfbo than this one (nfbo B), %s by nfbo A;", jobs[0].Dir)},
		{"nfbo A", fmt.Sprintf("bench: 1 finished runs were made by another nfbo than this one (nfbo A), %s by nfbo B;", jobs[1].Dir)},
		{"", ""},
	} {
		var progress bytes.Buffer
		if err := RunJobs(context.Background(), &progress, out, jobs, RunOptions{Procs: 1, Version: tc.version}); err != nil {
			t.Fatalf("version %q: %v\n%s", tc.version, err, progress.String())
		}
		got := progress.String()
		if (tc.want == "" && strings.Contains(got, "made by another nfbo")) || !strings.Contains(got, tc.want) {
			t.Errorf("version %q: progress\n%s\nwant it to say %q", tc.version, got, tc.want)
		}
	}
}

// A variant with its own -setting (a lab's budget on pmo20's draws) files its runs under that setting, and its
// jobs must say so: RunJobs keys rows by the run's setting, and a job under the suite's would never get its row.
func TestJobsVariantSetting(t *testing.T) {
	suite := SuiteSpec{Name: "pmo20", Tasks: []string{"qed"}, Setting: PMORandomSetting, Initial: 1000, Budget: 9000,
		PaidInit: true, Preset: "pmo", Seeds: []int{1},
		Init: func(InitEnv) (string, error) { return "init.csv", nil }}
	p := Plan{Suite: suite, Methods: []string{"nfbo", "lab", "eq"}, Out: t.TempDir(), Self: "nfbo", Dry: true,
		Variants: Variants{"lab": "-budget 600 -setting 100+500-zinc", "eq": "-setting=600-eq"}}
	jobs, err := p.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nfbo": PMORandomSetting, "lab": "100+500-zinc", "eq": "600-eq"}
	for _, j := range jobs {
		if j.Setting != want[j.Method] {
			t.Errorf("method %s: job's setting %q, want %q (argv %q)", j.Method, j.Setting, want[j.Method], j.Argv)
		}
	}
}

// A variant or bench's -args that sets a flag the bench sets per run is refused, naming the flag: the run would file
// itself under another seed, task or method than its job's.
func TestVariantBenchFlags(t *testing.T) {
	for _, c := range []struct{ args, flag string }{
		{"-gp-targets ranks -setting 100+500-zinc", ""}, {"-model data/models/medium", ""}, {"-seed 4", "-seed"},
		{"-no-flow --task=qed", "--task=qed"}, {"-label other", "-label"}, {"-out /tmp/x", "-out"}, {"-resume", "-resume"},
	} {
		err := Variants{}.Set("probe=" + c.args)
		if c.flag == "" {
			if err != nil {
				t.Errorf("-variant probe=%q: %v", c.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("-variant probe=%q: %v, want an error naming %s", c.args, err, c.flag)
		}
		_, err = Plan{Suite: SuiteSpec{Name: "s", Tasks: []string{"qed"}}, Methods: []string{"nfbo"}, Out: t.TempDir(),
			Extra: c.args, Dry: true}.Jobs()
		if pe := (*PlanError)(nil); !errors.As(err, &pe) || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("-args %q: %v, want a PlanError naming %s", c.args, err, c.flag)
		}
	}
}
