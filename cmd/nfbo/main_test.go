package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/optimize"
)

// run executes the command tree on args with the given stdin and returns
// stdout, stderr and the exit status main would use.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := root()
	cmd.setStreams(strings.NewReader(stdin), &out, &errb)
	err := cmd.Execute(context.Background(), args)
	if err != nil {
		if _, ok := err.(*ExitError); !ok {
			errb.WriteString(err.Error())
		}
	}
	return out.String(), errb.String(), exitCode(err)
}

// Every leaf command's usage line is documented in README.md's CLI section,
// so the README cannot drift from the binary.
func TestREADMEListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(c *Command)
	walk = func(c *Command) {
		for _, sub := range c.Commands {
			if len(sub.Commands) > 0 {
				walk(sub)
				continue
			}
			if !bytes.Contains(readme, []byte("nfbo "+sub.UsageLine)) {
				t.Errorf("README.md does not show %q", "nfbo "+sub.UsageLine)
			}
			if sub.Short == "" || sub.Long == "" {
				t.Errorf("%s: missing Short or Long help", sub.UsageLine)
			}
		}
	}
	walk(root())
}

func TestUnknownCommandExits2(t *testing.T) {
	if _, _, code := run(t, "", "frobnicate"); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if _, _, code := run(t, ""); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
}

// What a newcomer types first: --version and -version print the version; a mistyped command or flag gets a
// short message with the name meant and a pointer to the help, not the whole flag list.
func TestNewcomerMistakes(t *testing.T) {
	for _, flag := range []string{"--version", "-version"} {
		out, errs, code := run(t, "", flag)
		if code != 0 || !strings.HasPrefix(out, "nfbo ") || errs != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", flag, code, out, errs)
		}
	}
	_, errs, code := run(t, "", "optimize", "-budgte", "40")
	if code != 2 || !strings.Contains(errs, "flag provided but not defined: -budgte; did you mean -budget?") ||
		!strings.Contains(errs, `"nfbo help optimize" lists the flags`) {
		t.Errorf("wrong flag: exit %d, stderr %q", code, errs)
	}
	if n := strings.Count(errs, "\n"); n > 2 {
		t.Errorf("wrong flag: %d lines of stderr, want at most 3:\n%s", n+1, errs)
	}
	_, errs, code = run(t, "", "optimze")
	if code != 2 || !strings.Contains(errs, `unknown command "optimze"; did you mean "optimize"?`) || strings.Count(errs, "\n") > 2 {
		t.Errorf("wrong command: exit %d, stderr %q", code, errs)
	}
	_, errs, code = run(t, "", "report", "runs/nonexist")
	if want := "report: runs/nonexist does not exist (want a run directory, a suite directory or a runs.tsv)"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("report of a missing directory: exit %d, stderr %q, want %q", code, errs, want)
	}
	out, errs, code := run(t, "", "optimize", "-h")
	if code != 0 || !strings.Contains(errs, "-budget int") {
		t.Errorf("-h: exit %d, stdout %q, stderr lacks the flag list: %q", code, out, errs)
	}
}

// The help and the README say what is true: the pure-Go decoder is the default and the faster, the screened GP
// reads fingerprints and token counts, and the example objective's length is its own.
func TestHelpAndREADMEFacts(t *testing.T) {
	out, _, code := run(t, "", "help", "optimize")
	if code != 0 || strings.Contains(out, "several\ntimes faster") || strings.Contains(out, "several times faster") ||
		!strings.Contains(out, "auto (the default) is pure Go") || !strings.Contains(out, "an exact GP on Morgan fingerprints and token counts") {
		t.Errorf("help optimize: the backend or the screened GP's inputs misdescribed:\n%s", out)
	}
	example, err := os.ReadFile("../../examples/objectives/user_objectives.py")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d lines of Python", bytes.Count(example, []byte("\n")))
	for _, doc := range []string{"../../README.md", "../../docs/USAGE.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s does not say the example objective is %s", doc, want)
		}
		if bytes.Contains(b, []byte("It prints one line per iteration")) {
			t.Errorf("%s says status prints a line per iteration", doc)
		}
	}
}

func TestHelp(t *testing.T) {
	out, _, code := run(t, "", "help", "selfies", "encode")
	if code != 0 || !strings.Contains(out, "usage: nfbo selfies encode") {
		t.Fatalf("help: exit %d, output %q", code, out)
	}
}

func TestSelfiesEncodeDecodeLines(t *testing.T) {
	// One output line per input line; the bad line gives an empty line, a
	// message naming its line, and exit status 1.
	out, errs, code := run(t, "CCO\nC1CC\nc1ccccc1\n", "selfies", "encode")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "[C][C][O]" || lines[1] != "" || lines[2] != "[C][=C][C][=C][C][=C][Ring1][=Branch1]" {
		t.Fatalf("encode output %q", out)
	}
	if code != 1 || !strings.Contains(errs, "stdin:2:") {
		t.Fatalf("encode: exit %d, stderr %q; want 1 and a message for stdin:2", code, errs)
	}
	out, errs, code = run(t, "[C][C][O]\n[C][=C][C][=C][C][=C][Ring1][=Branch1]\n", "selfies", "decode")
	if code != 0 || out != "CCO\nC1=CC=CC=C1\n" {
		t.Fatalf("decode: exit %d, output %q, stderr %q", code, out, errs)
	}
	// A name after the molecule, as in .smi files, follows the converted molecule.
	out, errs, code = run(t, "CCO ethanol\n  c1ccccc1\tbenzene 2\n", "selfies", "encode")
	if code != 0 || out != "[C][C][O] ethanol\n[C][=C][C][=C][C][=C][Ring1][=Branch1]\tbenzene 2\n" {
		t.Fatalf("encode with names: exit %d, output %q, stderr %q", code, out, errs)
	}
	out, errs, code = run(t, "[C][C][O] ethanol\n", "selfies", "decode")
	if code != 0 || out != "CCO ethanol\n" {
		t.Fatalf("decode with names: exit %d, output %q, stderr %q", code, out, errs)
	}
}

// Files named *.gz are read through gzip by every command that reads molecules, here selfies encode.
func TestSelfiesEncodeGzip(t *testing.T) {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte("CCO\nc1ccccc1\n"))
	z.Close()
	path := filepath.Join(t.TempDir(), "m.smi.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "", "selfies", "encode", path)
	if code != 0 || out != "[C][C][O]\n[C][=C][C][=C][C][=C][Ring1][=Branch1]\n" {
		t.Fatalf("exit %d, output %q, stderr %q", code, out, errs)
	}
}

// A command stopped by Ctrl-C exits 130 (128 + SIGINT), as a shell reports a process killed by it, whether its
// error is context.Canceled itself or wraps it; other errors keep their statuses.
func TestExitStatusInterrupt(t *testing.T) {
	ctx, stop := signalContext(context.Background(), os.Interrupt)
	defer stop()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(os.Interrupt); err != nil {
		t.Skipf("cannot send an interrupt to this process: %v", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupt did not cancel the context")
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{ctx.Err(), 130},
		{fmt.Errorf("optimize: scoring the 20 initial molecules: %w", ctx.Err()), 130},
		{nil, 0},
		{errors.New("objective failed"), 1},
		{&UsageError{Err: errors.New("bad flag")}, 2},
	} {
		if got := exitStatus(ctx, tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	// Cancelled otherwise than by a signal (a test's context, say): an ordinary failure.
	plain, cancel := context.WithCancel(context.Background())
	cancel()
	if got := exitStatus(plain, plain.Err()); got != 1 {
		t.Errorf("exitStatus after a cancel without a signal = %d, want 1", got)
	}
}

// TestTimeoutMustBePositive: -timeout 0 or negative used to mean "no limit" silently.
func TestTimeoutMustBePositive(t *testing.T) {
	for _, args := range [][]string{
		{"score", "-task", "qed", "-timeout", "0"},
		{"score", "-task", "qed", "-timeout", "-1s"},
		{"optimize", "-task", "qed", "-init", "x", "-model", "m", "-out", t.TempDir(), "-timeout", "0"},
	} {
		_, stderr, code := run(t, "CCO\n", args...)
		if code != 2 || !strings.Contains(stderr, "-timeout must be positive") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// TestAnchorFlags: -anchor-rule and -anchor-temp reach bo.Config, and bad values are usage errors.
func TestAnchorFlags(t *testing.T) {
	preset, err := bo.PresetByName("guacamol-500")
	if err != nil {
		t.Fatal(err)
	}
	a := optimize.Args{OptimiserArgs: optimize.OptimiserArgs{Variant: "screened", AnchorRule: "raw", AnchorTemp: 0.2, ReferenceArgs: optimize.ReferenceArgs{Sampler: "exact", Update: "once"}}}
	cfg, err := a.Config(preset)
	if err != nil || cfg.AnchorRule != bo.AnchorsRaw || cfg.Temperature != 0.2 {
		t.Errorf("raw at 0.2: rule %v, temperature %v, err %v", cfg.AnchorRule, cfg.Temperature, err)
	}
	a = optimize.Args{OptimiserArgs: optimize.OptimiserArgs{Variant: "screened", AnchorRule: "minmax", ReferenceArgs: optimize.ReferenceArgs{Sampler: "exact", Update: "once"}}}
	if cfg, err = a.Config(preset); err != nil || cfg.AnchorRule != bo.AnchorsMinMax || cfg.Temperature != 0 {
		t.Errorf("default: rule %v, temperature %v, err %v", cfg.AnchorRule, cfg.Temperature, err)
	}
	for _, args := range [][]string{
		{"-anchor-rule", "paper"},
		{"-anchor-temp", "-0.5"},
	} {
		full := append([]string{"optimize", "-task", "qed", "-init", "x", "-model", "m", "-out", t.TempDir()}, args...)
		_, stderr, code := run(t, "", full...)
		if code != 2 || !strings.Contains(stderr, "-anchor-") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// TestStartProfile checks NFBO_CPUPROFILE's profile: written where it says once stopped, nothing for an empty
// path, and a command that still runs when the file cannot be created.
func TestStartProfile(t *testing.T) {
	path := t.TempDir() + "/cpu.pprof"
	stop := startProfile(path)
	for i := 0; i < 1e7; i++ { // something to sample
		_ = fmt.Sprint(i % 7)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v)", path, err, fi)
	}
	startProfile("")()
	startProfile(t.TempDir() + "/missing/dir/cpu.pprof")()
}

// nfboBinary is the nfbo binary that the tests running it as a child process share: built once (buildNfbo),
// removed by TestMain.
var nfboBinary struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if nfboBinary.dir != "" {
		os.RemoveAll(nfboBinary.dir)
	}
	os.Exit(code)
}

// buildNfbo returns the path of the nfbo binary built from this package, building it the first time.
func buildNfbo(t *testing.T) string {
	t.Helper()
	b := &nfboBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "nfbo-test-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "nfbo")
		b.out, b.err = exec.Command("go", "build", "-o", b.path, ".").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build: %v\n%s", b.err, b.out)
	}
	return b.path
}

// A command's flag groups hold each of its flags once and name no flag it lacks, and optimize's -h, the everyday
// group and a pointer to the rest, fits one screen (issue #58: it printed 112 lines).
func TestFlagGroupsCoverEveryFlag(t *testing.T) {
	var walk func(c *Command)
	walk = func(c *Command) {
		for _, sub := range c.Commands {
			walk(sub)
		}
		if len(c.Groups) == 0 || c.Flag == nil {
			return
		}
		seen := map[string]string{}
		for _, g := range c.Groups {
			for _, n := range g.Names {
				if c.Flag.Lookup(n) == nil {
					t.Errorf("%s: group %q names -%s, which the command lacks", c.Path(), g.Title, n)
				}
				if prev, ok := seen[n]; ok {
					t.Errorf("%s: -%s in groups %q and %q", c.Path(), n, prev, g.Title)
				}
				seen[n] = g.Title
			}
		}
		c.Flag.VisitAll(func(f *flag.Flag) {
			if _, ok := seen[f.Name]; !ok {
				t.Errorf("%s: -%s is in no flag group", c.Path(), f.Name)
			}
		})
	}
	walk(root())
	_, stderr, code := run(t, "", "optimize", "-h")
	if code != 0 || !strings.Contains(stderr, `"nfbo help optimize"`) || strings.Contains(stderr, "-candidate-target") {
		t.Errorf("optimize -h: exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "\n"); n > 45 {
		t.Errorf("optimize -h prints %d lines, want at most 45", n)
	}
	out, _, _ := run(t, "", "help", "optimize")
	if !strings.Contains(out, "-candidate-target") || !strings.Contains(out, "Everyday flags:") {
		t.Error("help optimize does not list every group")
	}
}
