//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/model/modeltest"
)

// hugeOracle answers ±1e308 (by the parity of the SMILES' length): finite scores whose squares overflow.
const hugeOracle = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    scores = [1e308 if len(s) % 2 else -1e308 for s in req.get("smiles", [])]
    print(json.dumps({"id": req.get("id"), "ok": True, "scores": scores}), flush=True)
`

// runBounded runs the command and kills it with SIGKILL after limit: a run that spins must fail the test, not
// hang it. It returns stdout and stderr together, and whether the process had to be killed.
func runBounded(t *testing.T, cmd *exec.Cmd, limit time.Duration) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%v: %v", cmd.Args[1:3], err)
		}
		return out.String(), false
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return out.String(), true
	}
}

// TestOptimizeCmdHugeScores runs nfbo optimize, and -resume, against an objective that answers ±1e308. Such
// scores made the exact GP's posterior NaN, Spearman's ranking spin forever at full CPU after the calls were paid
// (SIGTERM unheard), and a shorter run print Top-10 +Inf and 309-digit scores (issue #56): the first leg gets SIGTERM after
// its first iteration and must stop soon, -resume must finish.
func TestOptimizeCmdHugeScores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the optimiser")
	}
	dir := t.TempDir()
	bin := buildNfbo(t)
	modeltest.WriteShippedVocabModel(t, dir)
	python := strings.Fields(lengthOracle(t, dir))[0]
	script := filepath.Join(dir, "huge.py")
	if err := os.WriteFile(script, []byte(hugeOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	args := []string{"optimize", "-task", "demo", "-objective-cmd", python + " " + script, "-init", guacamol100,
		"-init-count", "6", "-budget", "150", "-candidates", "200", "-model", dir, "-out", out}

	// The first leg gets SIGTERM once it has printed its first iteration: it stops within seconds.
	if _, err := signalAfterIteration(t, bin, args, syscall.SIGTERM); err == nil {
		t.Error("the run stopped by SIGTERM exited 0")
	}

	// -resume runs to the end, and its figures are finite and short.
	text, killed := runBounded(t, exec.Command(bin, append(args, "-resume")...), 3*time.Minute)
	if killed {
		t.Fatalf("-resume still running after 3 minutes (it spins on scores of 1e308)\n%s", tail(text))
	}
	if !strings.Contains(text, "Top-10 1.0000e+308") || strings.Contains(text, "Inf") || regexp.MustCompile(`[0-9]{20}`).MatchString(text) {
		t.Errorf("want Top-10 1.0000e+308 and no Inf nor long digit strings in:\n%s", tail(text))
	}
	if got, _ := readLogSMILES(t, filepath.Join(out, "evaluations.jsonl")); len(got) != 150 {
		t.Errorf("%d calls in the log, want the budget of 150", len(got))
	}
}

// signalAfterIteration starts bin with args, sends it sig once it has printed its first iteration's line, and
// returns its output and exit error; it fails the test when no iteration comes within two minutes or the process
// is still running 20 s after the signal.
func signalAfterIteration(t *testing.T, bin string, args []string, sig os.Signal) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	iterated, text := make(chan bool, 1), make(chan string, 1)
	go func() {
		var all strings.Builder
		lines := bufio.NewScanner(pr)
		for lines.Scan() {
			all.WriteString(lines.Text() + "\n")
			if strings.HasPrefix(lines.Text(), "iter 1 ") {
				iterated <- true
			}
		}
		text <- all.String()
	}()
	select {
	case <-iterated:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no iteration after 2 minutes (a run on scores of 1e308 spun here)")
	}
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
		t.Logf("stopped %v after %v", time.Since(sent).Round(time.Millisecond), sig)
	case <-time.After(20 * time.Second):
		t.Fatalf("nfbo optimize still running 20 s after %v", sig)
	}
	pw.Close()
	return <-text, err
}

// TestOptimizeCmdSIGHUP: a closed terminal or SSH session sends SIGHUP, which killed optimize at once with no
// word and rc 129, losing the requests in flight; it is handled as SIGTERM: the run stops after them, says so,
// exits 129, and -resume finishes it (issue #56).
func TestOptimizeCmdSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the optimiser")
	}
	dir := t.TempDir()
	bin := buildNfbo(t)
	modeltest.WriteShippedVocabModel(t, dir)
	out := filepath.Join(dir, "run")
	args := []string{"optimize", "-task", "demo", "-objective-cmd", lengthOracle(t, dir), "-init", guacamol100,
		"-init-count", "6", "-budget", "150", "-candidates", "200", "-model", dir, "-out", out}
	text, err := signalAfterIteration(t, bin, args, syscall.SIGHUP)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 129 || !strings.Contains(text, "nfbo: stopped by hangup (SIGHUP") {
		t.Errorf("after SIGHUP: %v (exit code %d), want exit 129 and a line saying the hangup stopped it:\n%s", err, ee.ExitCode(), tail(text))
	}
	if text, killed := runBounded(t, exec.Command(bin, append(args, "-resume")...), 3*time.Minute); killed || !strings.Contains(text, "status: budget spent") {
		t.Errorf("-resume after SIGHUP did not finish:\n%s", tail(text))
	}
}

// tail returns the last lines of a command's output, for a failure's message.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
