//go:build unix

package main

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeKill9 builds the nfbo binary, runs "nfbo optimize" with a tiny model and an external objective,
// kills it with SIGKILL at random moments, and resumes it with -resume until it finishes. The evaluation log must
// then hold exactly the budget of distinct molecules, numbered without gaps (no call lost or counted twice), and
// equal, molecule for molecule and score for score, the log of an uninterrupted run with the same seed.
func TestOptimizeKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts many processes")
	}
	dir := t.TempDir()
	bin := buildNfbo(t)
	modeltest.WriteShippedVocabModel(t, dir)
	oracle := lengthOracle(t, dir)
	const budget = 100 // 20 initial molecules scored through the log + 80 new ones
	args := func(out string) []string {
		return []string{"optimize", "-task", "demo", "-objective-cmd", oracle, "-init", guacamol100, "-init-count", "20",
			"-budget", strconv.Itoa(budget), "-candidates", "200", "-model", dir, "-out", out, "-seed", "7"}
	}

	// The uninterrupted run first: its wall time sets when the killed legs die, so that they die mid-run on a
	// fast machine as on a slow one (a fixed 0.2-1.2 s let the whole run finish before the first kill).
	ref := filepath.Join(dir, "ref")
	start := time.Now()
	if out, err := exec.Command(bin, args(ref)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	full := time.Since(start)

	killed := filepath.Join(dir, "killed")
	rng := rand.New(rand.NewPCG(1, 1))
	kills, done := 0, false
	// Up to maxKills legs are killed at random moments; the leg after them runs to the end, so that a slow or
	// loaded machine, where a leg may not get past start-up, still finishes the run.
	const maxKills = 12
	for leg := 0; leg <= maxKills && !done; leg++ {
		a := args(killed)
		if rundir.Exists(filepath.Join(killed, "run.json")) {
			a = append(a, "-resume")
		}
		cmd := exec.Command(bin, a...)
		stderr := &bytes.Buffer{} // read only after Wait
		cmd.Stderr = stderr
		killed, err := proctest.RunOrKill(cmd, killAfter(leg < maxKills, time.Duration((0.05+0.6*rng.Float64())*float64(full))))
		if err != nil {
			t.Fatalf("leg %d: %v\n%s", leg, err, stderr.String())
		}
		if killed {
			kills++
		} else {
			done = true
		}
	}
	if !done {
		t.Fatalf("run did not finish after %d kills and an uninterrupted leg", kills)
	}
	if kills == 0 {
		t.Error("no leg was killed: the test proved nothing")
	}
	t.Logf("finished after %d kills (the uninterrupted run took %v)", kills, full.Round(time.Millisecond))

	got, gotY := readLogSMILES(t, filepath.Join(killed, "evaluations.jsonl"))
	if len(got) != budget {
		t.Errorf("%d paid calls in the log, want the budget %d", len(got), budget)
	}
	seen := map[string]bool{}
	for _, s := range got {
		if seen[s] {
			t.Errorf("%s paid twice", s)
		}
		seen[s] = true
	}

	want, wantY := readLogSMILES(t, filepath.Join(ref, "evaluations.jsonl"))
	if !slices.Equal(got, want) || !slices.Equal(gotY, wantY) {
		t.Errorf("killed-and-resumed run differs from the uninterrupted one:\n got %q\nwant %q", got, want)
	}
}

// killAfter returns a channel that fires after d, or never when kill is false.
func killAfter(kill bool, d time.Duration) <-chan time.Time {
	if !kill {
		return nil
	}
	return time.After(d)
}
