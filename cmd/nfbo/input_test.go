package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/model/modeltest"
)

// countingOracle writes an external objective that scores a SMILES as its length / 10 and appends every molecule
// it is asked to score to a file; it returns the command line and a function that returns the molecules scored
// so far. A test that asserts no call was made reads it after the command returns.
func countingOracle(t testing.TB, dir string) (cmdLine string, calls func() []string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	script := filepath.Join(dir, "counting_oracle.py")
	record := filepath.Join(dir, "oracle_calls.txt")
	src := `import json, sys
record = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") != "score":
        resp = {"ok": False, "error": "unknown op %r" % req.get("op")}
    else:
        with open(record, "a") as f:
            for smi in req["smiles"]:
                f.write(smi + "\n")
        resp = {"ok": True, "scores": [len(s) / 10 if s else None for s in req["smiles"]],
                "errors": ["" if s else "empty SMILES" for s in req["smiles"]]}
    resp["id"] = req.get("id")
    print(json.dumps(resp), flush=True)
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return python + " " + script + " " + record, func() []string {
		b, err := os.ReadFile(record)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
}

// A line whose SMILES holds a byte that is not printable ASCII is not sent to the objective (RDKit would score
// the part before the byte, another molecule): it gets 0 and a message naming its line and the byte's offset.
func TestScoreCmdRejectsNonASCII(t *testing.T) {
	dir := t.TempDir()
	oracle, calls := countingOracle(t, dir)
	in := "CCéN\nC\xff\xfeC\nCCO\nC\u00a0C\nc1ccccc1 b\u00e9nz\u00e8ne\nC\x1b[31mC\n"
	out, errOut, err := runCmd(t, newScoreCmd(), in, "-objective-cmd", oracle, "-task", "demo")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("err = %v, want exit status 1\n%s", err, errOut)
	}
	if want := "0\n0\n0.29999999999999999\n0\n0.80000000000000004\n0\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	for _, want := range []string{
		`stdin:1: smiles: non-ASCII character 'é' (U+00E9) at byte offset 2 of "CCéN"`,
		`stdin:2: smiles: invalid UTF-8 byte 0xff at byte offset 1 of "C\xff\xfeC"`,
		`stdin:4: smiles: non-ASCII character '\u00a0' (U+00A0) at byte offset 1`,
		`stdin:6: smiles: control character 0x1b at byte offset 1 of "C\x1b[31mC"`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "\x1b") || strings.Contains(errOut, "\xff") {
		t.Errorf("raw bytes of the input reached stderr: %q", errOut)
	}
	if got := calls(); strings.Join(got, ",") != "CCO,c1ccccc1" {
		t.Errorf("the objective was asked for %q, want only the two good lines", got)
	}
}

// A bad line of a megabyte gives a message of one short line.
func TestScoreCmdLongBadLine(t *testing.T) {
	dir := t.TempDir()
	oracle, _ := countingOracle(t, dir)
	in := strings.Repeat("C", 1<<20) + "\xff\n"
	_, errOut, _ := runCmd(t, newScoreCmd(), in, "-objective-cmd", oracle, "-task", "demo")
	if len(errOut) > 400 || !strings.Contains(errOut, "(1048577 bytes)") {
		t.Errorf("stderr of %d bytes: %.400q", len(errOut), errOut)
	}
}

// writeInitFiles writes init files for the pre-flight tests into dir: the first n molecules of the GuacaMol CSV
// one per line, a CSV whose adip column holds NaN and Inf, and a file with a non-ASCII byte.
func writeInitFiles(t *testing.T, dir string, n int) (smi, nanCSV, nonASCII string) {
	t.Helper()
	f, err := os.Open(guacamol100)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var lines []string
	for _, r := range rows[1 : n+1] {
		lines = append(lines, r[col["smile"]])
	}
	smi = filepath.Join(dir, "init.smi")
	os.WriteFile(smi, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	rows[3][col["adip"]], rows[5][col["adip"]] = "NaN", "-Inf"
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.WriteAll(rows[:n+1])
	nanCSV = filepath.Join(dir, "nan.csv")
	os.WriteFile(nanCSV, []byte(b.String()), 0o644)
	nonASCII = filepath.Join(dir, "latin1.smi")
	os.WriteFile(nonASCII, []byte(lines[0]+"\n"+lines[1]+"\nCC\xe9N\n"), 0o644)
	return smi, nanCSV, nonASCII
}

// Every check that needs no objective runs before the first objective call and before the run directory is
// made: each refused case leaves the counting objective uncalled and no run directory behind.
func TestOptimizePreflight(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle, calls := countingOracle(t, dir)
	smi, nanCSV, nonASCII := writeInitFiles(t, dir, 25)
	emptyCSV, hexCSV := filepath.Join(dir, "empty.csv"), filepath.Join(dir, "hex.csv")
	for path, score := range map[string]string{emptyCSV: "", hexCSV: "0x1p-2"} {
		if err := os.WriteFile(path, []byte("smiles,adip\nCCO,0.5\nCCN,"+score+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"budget below the initial molecules", []string{"-init", guacamol100, "-budget", "80"},
			"-budget 80 leaves no call for the optimiser: the 100 initial molecules of " + guacamol100 + " have no demo scores"},
		{"budget read as new calls", []string{"-init", guacamol100, "-budget", "40"}, "give -budget 140 for 40 new calls"},
		{"budget equal to the initial molecules", []string{"-init", smi, "-budget", "25"}, "-budget 25 leaves no call"},
		{"more anchors than initial points", []string{"-init", smi, "-init-count", "2", "-budget", "30"},
			"bo: config: 5 anchors but only 2 initial points"},
		{"queries above candidates", []string{"-init", smi, "-budget", "40", "-queries", "300", "-candidates", "200"},
			"bo: config: Queries = 300 > Candidates = 200 per anchor"},
		{"NaN score", []string{"-task", "adip", "-init", nanCSV, "-init-count", "20", "-budget", "30"},
			"nan.csv:4: column 6 (adip): the score \"NaN\" is not a finite number"},
		{"empty score", []string{"-task", "adip", "-init", emptyCSV, "-budget", "30"},
			"empty.csv:3: column 2 (adip): no score: give every molecule a score, or drop the column"},
		{"hexadecimal score", []string{"-task", "adip", "-init", hexCSV, "-budget", "30"},
			"hex.csv:3: column 2 (adip): the score \"0x1p-2\" is not a decimal number"},
		{"non-ASCII SMILES", []string{"-init", nonASCII, "-budget", "30"},
			"latin1.smi:3: smiles: invalid UTF-8 byte 0xe9 at byte offset 2 of \"CC\\xe9N\""},
		{"score column absent", []string{"-init", guacamol100, "-score-column", "nope", "-budget", "30"},
			"-score-column nope: " + guacamol100 + " has no column (or SDF data item on every record) of that name; its columns: med1, pdop, adip"},
		{"-restart without -resume", []string{"-init", smi, "-budget", "30", "-restart"}, "-restart goes with -resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "run-"+strings.ReplaceAll(tc.name, " ", "-"))
			args := append([]string{"-task", "demo", "-objective-cmd", oracle, "-candidates", "200", "-model", dir, "-out", out}, tc.args...)
			_, stderr, err := runCmd(t, newOptimizeCmd(), "", args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q\n%s", err, tc.want, stderr)
			}
			if got := calls(); len(got) != 0 {
				t.Errorf("%d objective calls before the error", len(got))
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run directory %s left behind (%v)", out, err)
			}
		})
	}
	t.Run("unknown task", func(t *testing.T) {
		needRDKit(t)
		out := filepath.Join(dir, "run-unknown-task")
		_, _, err := runCmd(t, newOptimizeCmd(), "", "-task", "qde", "-init", smi, "-budget", "30", "-model", dir, "-out", out)
		if err == nil || !strings.Contains(err.Error(), `unknown task "qde"; did you mean "qed"? ("nfbo tasks" lists the`) {
			t.Fatalf("error %v, want unknown task", err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run directory %s left behind (%v)", out, err)
		}
	})
}

// demoRun makes a small run of the shipped vocabulary's random model with the counting objective (25
// initial molecules paid for, budget calls in all, seed 2) in a new directory's "run" and returns the
// directory, the run's, its optimize arguments, the objective's calls and what the run printed on stderr.
func demoRun(t *testing.T, budget int) (dir, out string, args []string, calls func() []string, stderr string) {
	t.Helper()
	dir = t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle, calls := countingOracle(t, dir)
	smi, _, _ := writeInitFiles(t, dir, 25)
	out = filepath.Join(dir, "run")
	args = []string{"-task", "demo", "-objective-cmd", oracle, "-init", smi, "-budget", strconv.Itoa(budget), "-candidates", "200",
		"-model", dir, "-out", out, "-seed", "2"}
	_, stderr, err := runCmd(t, newOptimizeCmd(), "", args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	return dir, out, args, calls, stderr
}

// A resumed run is checked before it pays: an emptied or shortened log, a deleted checkpoint, a damaged
// checkpoint or pending batch are refused with what to do, and no call is made; -restart sets the damaged or
// missing state aside and continues from the log without paying twice. The run's setting label counts the
// initial molecules actually used (25, not the preset's 100).
func TestOptimizeResumeChecks(t *testing.T) {
	t.Parallel()
	_, out, args, calls, stderr := demoRun(t, 35)
	oracle := args[slices.Index(args, "-objective-cmd")+1]
	// 10 new calls are one batch of 50: the run is warned about, with the budget that gives three.
	if want := "-budget 35 leaves 10 new calls after the 25 initial molecules it pays for: 1 batch(es) of 50 " +
		"(5 trust regions x 10), 1 round(s) of feedback; give -budget 175 or more for 3 rounds"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	paid := len(calls())
	if paid != 35 {
		t.Fatalf("%d calls, want the budget of 35", paid)
	}
	run, err := bench.LoadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if i := run.Info; i.Setting != "25+10" || i.Calls != 35 || i.InitialCalls != 25 || i.Objective != "cmd: "+oracle {
		t.Errorf("run.json: %+v; want setting 25+10, 35 calls, 25 initial calls and the objective", i)
	}
	files := map[string][]byte{}
	for _, name := range []string{"evaluations.jsonl", "checkpoint.gob", "pending.gob"} {
		if files[name], err = os.ReadFile(filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		t.Helper()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(out, name+".damaged"))
			os.Remove(filepath.Join(out, name+".unused"))
		}
	}
	flip := func(name string) {
		b := bytes.Clone(files[name])
		b[len(b)/2] ^= 0x10
		os.WriteFile(filepath.Join(out, name), b, 0o644)
	}
	resume := func(extra ...string) (string, error) {
		_, stderr, err := runCmd(t, newOptimizeCmd(), "", append(append(args, "-resume"), extra...)...)
		return stderr, err
	}
	log := files["evaluations.jsonl"]
	for _, tc := range []struct {
		name   string
		break_ func()
		want   string
	}{
		{"emptied log", func() { os.WriteFile(filepath.Join(out, "evaluations.jsonl"), nil, 0o644) },
			"evaluations.jsonl holds 0 paid calls, but run.json records 35: evaluations were lost"},
		{"log cut to 30 records", func() {
			lines := bytes.SplitAfter(log, []byte("\n"))
			os.WriteFile(filepath.Join(out, "evaluations.jsonl"), bytes.Join(lines[:30], nil), 0o644)
		}, "holds 30 paid calls, but run.json records 35"},
		{"deleted checkpoint", func() { os.Remove(filepath.Join(out, "checkpoint.gob")) },
			"has no checkpoint.gob, but its log holds 35 paid calls, 10 more than the initial molecules"},
		{"damaged checkpoint", func() { flip("checkpoint.gob") },
			"checkpoint.gob: damaged: CRC-32C"},
		{"damaged pending batch", func() { flip("pending.gob") },
			"pending.gob: damaged: CRC-32C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer restore()
			tc.break_()
			stderr, err := resume()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q\n%s", err, tc.want, stderr)
			}
			if strings.Contains(err.Error(), "can be resumed with -resume") {
				t.Errorf("the error invites a -resume that would fail the same way: %v", err)
			}
			if n := len(calls()); n != paid {
				t.Errorf("%d objective calls after the refused resume, want %d", n, paid)
			}
			if strings.Contains(tc.name, "checkpoint") || strings.Contains(tc.name, "pending") {
				if !strings.Contains(err.Error(), "-restart") {
					t.Errorf("no way forward offered: %v", err)
				}
				stderr, err := resume("-restart")
				if err != nil {
					t.Fatalf("-resume -restart: %v\n%s", err, stderr)
				}
				// The pending batch is set aside with a damaged checkpoint, but called damaged only when it is.
				if damagedPending := strings.Contains(stderr, "pending.gob.damaged"); damagedPending != (tc.name == "damaged pending batch") {
					t.Errorf("-restart on a %s says pending.gob.damaged: %v\n%s", tc.name, damagedPending, stderr)
				}
				if n := len(calls()); n != paid {
					t.Errorf("%d objective calls after -restart, want %d: nothing is paid twice", n, paid)
				}
			}
		})
	}
	if _, err := resume("-restart"); err == nil || !strings.Contains(err.Error(), "is intact; resume without -restart") {
		t.Errorf("-restart with an intact checkpoint: %v", err)
	}
}

// Ctrl-C after the initial molecules are paid reports them in the count, and run.json records them.
func TestOptimizeInterruptCountsInitialCalls(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle, calls := countingOracle(t, dir)
	smi, _, _ := writeInitFiles(t, dir, 20)
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for len(calls()) < 20 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	cmd := newOptimizeCmd()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
	err := cmd.Execute(ctx, []string{"-task", "demo", "-objective-cmd", oracle, "-init", smi, "-budget", "500",
		"-candidates", "200", "-model", dir, "-out", out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`interrupted after (\d+) paid calls \(20 for the initial molecules, (\d+) by the optimiser\)`).
		FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr does not count the 20 initial calls:\n%s", stderr.String())
	}
	total, _ := strconv.Atoi(m[1])
	opt, _ := strconv.Atoi(m[2])
	if total != 20+opt || total != len(calls()) {
		t.Errorf("reported %d paid calls (20 + %d); the objective was called %d times", total, opt, len(calls()))
	}
	if run, err := bench.LoadRun(out); err != nil || run.Info.Calls != total || run.Info.Finished {
		t.Errorf("run.json after the interrupt: %+v, %v; want %d calls, unfinished", run.Info, err, total)
	}
}

// A bad line of a megabyte, or one with control bytes, gives "selfies encode" a short message with the bytes
// escaped.
func TestSelfiesEncodeLongBadLine(t *testing.T) {
	_, stderr, code := run(t, strings.Repeat("C", 1<<20)+"X\nC\x1b[31mC\n", "selfies", "encode")
	if code != 1 || len(stderr) > 600 || strings.Contains(stderr, "\x1b") || !strings.Contains(stderr, "(1048577 bytes)") {
		t.Errorf("exit %d, stderr of %d bytes: %.600q", code, len(stderr), stderr)
	}
}

// Initial scores in a column not named like the task are taken with -score-column and not paid for again; without
// it the run says, naming the columns, that it pays for the initial molecules.
func TestOptimizeScoreColumn(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	oracle, calls := countingOracle(t, dir)
	common := []string{"-task", "demo", "-objective-cmd", oracle, "-init", guacamol100, "-init-count", "6", "-anchors", "1",
		"-queries", "5", "-candidates", "100", "-model", dir}
	_, stderr, err := runCmd(t, newOptimizeCmd(), "", append(common, "-out", filepath.Join(dir, "column"), "-score-column", "adip", "-budget", "5")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	paid := calls()
	if len(paid) != 5 {
		t.Fatalf("-score-column adip: %d calls, want the 5 new ones (the initial scores are in the file): %q", len(paid), paid)
	}
	if strings.Contains(stderr, "-score-column NAME") {
		t.Errorf("warned with -score-column given:\n%s", stderr)
	}
	_, stderr, err = runCmd(t, newOptimizeCmd(), "", append(common, "-out", filepath.Join(dir, "task"), "-budget", "11")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got := len(calls()) - len(paid); got != 11 {
		t.Errorf("without -score-column: %d calls, want 11 (6 initial + 5)", got)
	}
	want := "warning: " + guacamol100 + " has no column named demo, so its molecules are scored by the objective and count as " +
		"calls; its other columns (med1, pdop, adip"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "give -score-column NAME to use one") {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}
