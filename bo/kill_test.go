//go:build unix

package bo

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
	"github.com/nfbo/nfbo/rundir"
)

const kill9Env = "NFBO_BO_KILL9_DIR"

// slowScorer widens the window between evaluations so that kills land inside iterations.
type slowScorer struct{ toyScorer }

func (s *slowScorer) Score(ctx context.Context, dst []float64, smiles []string) error {
	time.Sleep(time.Duration(len(smiles)) * 5 * time.Millisecond)
	return s.toyScorer.Score(ctx, dst, smiles)
}

// TestKill9Helper is the child process of TestKill9: one leg of a run in the directory named by kill9Env.
func TestKill9Helper(t *testing.T) {
	dir := os.Getenv(kill9Env)
	if dir == "" {
		t.Skip("helper process for TestKill9")
	}
	l, err := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), &slowScorer{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, err := runToy(t, toyConfig(dir), l, 5, nil, context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestKill9 kills a run with SIGKILL at random moments and restarts it until it finishes. Every molecule in the
// evaluation log must be in the final data exactly once (no paid evaluation lost, none paid twice), the data
// must hold exactly Budget new molecules, and the result must equal an uninterrupted run with the same seed.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test starts many processes")
	}
	if os.Getenv(kill9Env) != "" {
		t.Skip("inside the helper")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(42, 42))
	kills, done := 0, false
	for attempt := 0; attempt < 400 && !done; attempt++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Helper$", "-test.count=1")
		cmd.Env = append(os.Environ(), kill9Env+"="+dir)
		killed, err := proctest.RunOrKill(cmd, time.After(time.Duration(10+rng.IntN(150))*time.Millisecond))
		if err != nil {
			t.Fatalf("leg %d: %v", attempt, err)
		}
		if killed {
			kills++
		} else {
			done = true
		}
	}
	if !done {
		t.Fatalf("run did not finish after %d kills", kills)
	}
	t.Logf("finished after %d kills", kills)

	// Final state: resume once more (it returns at once) to read the data.
	l, err := OpenEvalLog(filepath.Join(dir, rundir.EvalLogFile), &slowScorer{})
	if err != nil {
		t.Fatal(err)
	}
	o, res, err := runToy(t, toyConfig(dir), l, 5, nil, context.Background())
	l.Close()
	if err != nil || res.Status != StatusBudgetSpent {
		t.Fatalf("final resume: %v %v", res.Status, err)
	}
	_, _, smiles := o.Data()
	newMols := smiles[30:]
	if len(newMols) != toyConfig("").Budget {
		t.Errorf("%d new molecules in the data, want the budget %d", len(newMols), toyConfig("").Budget)
	}
	logged := readLog(t, filepath.Join(dir, rundir.EvalLogFile))
	inData := map[string]int{}
	for _, s := range newMols {
		inData[s]++
	}
	seen := map[string]bool{}
	for _, s := range logged {
		if seen[s] {
			t.Errorf("molecule %s logged (paid) twice", s)
		}
		seen[s] = true
		if inData[s] != 1 {
			t.Errorf("paid molecule %s appears %d times in the data", s, inData[s])
		}
	}
	if len(logged) != len(newMols) {
		t.Errorf("%d paid evaluations logged, %d new molecules in the data", len(logged), len(newMols))
	}

	// Same seed, no crash.
	ref, _, err := runToy(t, toyConfig(""), memObjective{&toyScorer{}}, 5, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _, refS := ref.Data()
	if !slices.Equal(refS, smiles) {
		t.Errorf("killed-and-resumed run differs from the uninterrupted one")
	}
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r evalRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.SMILES)
	}
	return out
}
