package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/http"
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

// TestAskTellKill9 kills "nfbo tell" and "nfbo serve" with SIGKILL at random moments while they write told
// scores, and sends again whatever was not acknowledged, as a client would. The evaluation log must end with
// every asked molecule paid exactly once, with its score.
func TestAskTellKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts many processes")
	}
	needRDKit(t)
	dir := t.TempDir()
	bin := buildNfbo(t)
	modeltest.WriteShippedVocabModel(t, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	flags := []string{"-task", "demo", "-init", guacamol100, "-init-count", "60", "-budget", "70", "-model", dir,
		"-anchors", "1", "-queries", "5"}

	// tell: 12 overlapping files of 10 rows, each sent until a tell of it exits 0, killed at random before.
	run := filepath.Join(dir, "tell-run")
	batch := askBatch(t, append([]string{"-run", run}, flags...)...)
	kills := 0
	for f := range 12 {
		lo := f * 50 / 11
		file := tellFile(t, dir, fmt.Sprintf("part%d.csv", f), batch[lo:lo+10])
		for try := 0; ; try++ {
			cmd := exec.Command(bin, "tell", "-run", run, file)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
			if try < 5 {
				select {
				case err = <-exited:
				case <-time.After(time.Duration(rng.IntN(40_000)) * time.Microsecond):
					cmd.Process.Signal(syscall.SIGKILL)
					kills++
					err = <-exited
				}
			} else {
				err = <-exited
			}
			if err == nil {
				break
			}
		}
	}
	checkTold(t, run, batch)
	t.Logf("tell: %d kills", kills)

	// serve: a client tells 12 parts over HTTP; the server is killed at random and started again, and the part
	// is sent again until it is acknowledged.
	run = filepath.Join(dir, "serve-run")
	batch = askBatch(t, append([]string{"-run", run}, flags...)...)
	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(bin, "serve", "-run", run, "-addr", "127.0.0.1:0")
		pipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(pipe)
		re := regexp.MustCompile(`on (http://[0-9.:]+)/v1/`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				go func() {
					for sc.Scan() {
					}
				}()
				return cmd, m[1]
			}
		}
		cmd.Wait()
		t.Fatalf("serve did not start")
		return nil, ""
	}
	srv, base := start()
	kills = 0
	for f := range 12 {
		lo := f * 50 / 11
		var body strings.Builder
		body.WriteString("id,score\n")
		for _, m := range batch[lo : lo+10] {
			fmt.Fprintf(&body, "%s,%g\n", m[0], lengthScore(m[1]))
		}
		for try := 0; ; try++ {
			if try < 4 && rng.IntN(2) == 0 {
				go func(p *os.Process, d time.Duration) {
					time.Sleep(d)
					p.Signal(syscall.SIGKILL)
				}(srv.Process, time.Duration(rng.IntN(3000))*time.Microsecond)
			}
			resp, err := http.Post(base+"/v1/tell", "text/csv", strings.NewReader(body.String()))
			if err == nil {
				resp.Body.Close()
			}
			if err == nil && resp.StatusCode == 200 {
				break
			}
			if err == nil {
				t.Fatalf("tell part %d: status %d", f, resp.StatusCode)
			}
			// The server is gone: start it again and send the part again.
			srv.Wait()
			kills++
			srv, base = start()
		}
	}
	srv.Process.Signal(syscall.SIGKILL)
	srv.Wait()
	checkTold(t, run, batch)
	t.Logf("serve: %d restarts after kills", kills)
}

// checkTold checks that the run's log holds each molecule of batch once, with the lab's score.
func checkTold(t *testing.T, run string, batch [][2]string) {
	t.Helper()
	smiles, scores := readLogSMILES(t, filepath.Join(run, "evaluations.jsonl"))
	if len(smiles) != len(batch) {
		t.Errorf("%s: %d calls in the log, want the %d told", run, len(smiles), len(batch))
	}
	want := map[string]float64{}
	for _, m := range batch {
		want[m[1]] = lengthScore(m[1])
	}
	for i, s := range smiles {
		w, ok := want[s]
		if !ok || w != scores[i] {
			t.Errorf("call %d: %s scored %v, want %v (asked %v)", i+1, s, scores[i], w, ok)
		}
		delete(want, s)
	}
}
