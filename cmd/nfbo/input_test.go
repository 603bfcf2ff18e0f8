package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
