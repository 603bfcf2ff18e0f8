package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nfbo/nfbo/labserve"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestServeConcurrentClients runs a budget-capped ask/tell run over HTTP with 8 clients at once, each asking,
// then telling a random part of what it was given (so batches are told partly, in pieces, out of order, and the
// last one is cut short by the budget), until the server says the run is finished. The server must hand out
// exactly the budget's ids (never one beyond it), take every tell (none refused for the budget), and finish
// with the budget in the log and nothing awaiting.
func TestServeConcurrentClients(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	run := filepath.Join(dir, "run")
	const budget = 60
	// 33 initial molecules, then batches of 10: the third optimiser batch is capped at 7.
	base, stderr := startServe(t, "-run", run, "-task", "demo", "-init", guacamol100, "-init-count", "33",
		"-budget", fmt.Sprint(budget), "-anchors", "2", "-queries", "5", "-candidates", "100", "-model", dir)

	var (
		mu      sync.Mutex
		handed  = map[string]string{} // id -> SMILES, over every answer of every client
		refused []string
		wg      sync.WaitGroup
	)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for round := 0; round < 200; round++ {
				var rep labserve.AskReply
				if code := call(t, "POST", base+"/v1/ask", "", &rep); code != 200 {
					mu.Lock()
					refused = append(refused, fmt.Sprintf("client %d: ask: %d", c, code))
					mu.Unlock()
					return
				}
				if rep.Finished {
					return
				}
				var body strings.Builder
				body.WriteString("id,score\n")
				mu.Lock()
				for _, m := range rep.Batch {
					if s, ok := handed[m.ID]; ok && s != m.SMILES {
						t.Errorf("id %s handed out as %s and as %s", m.ID, s, m.SMILES)
					}
					handed[m.ID] = m.SMILES
					if rng.IntN(3) == 0 { // a third of what it was given, at random
						fmt.Fprintf(&body, "%s,%g\n", m.ID, lengthScore(m.SMILES))
					}
				}
				mu.Unlock()
				if body.Len() == len("id,score\n") {
					continue
				}
				var told map[string]any
				if code := call(t, "POST", base+"/v1/tell", body.String(), &told); code != 200 {
					mu.Lock()
					refused = append(refused, fmt.Sprintf("client %d: tell: %d %v", c, code, told))
					mu.Unlock()
				}
			}
			t.Errorf("client %d: the run did not finish in 200 rounds", c)
		}()
	}
	wg.Wait()
	for _, r := range refused {
		t.Error(r)
	}
	if len(handed) != budget {
		t.Errorf("%d ids handed out for a budget of %d", len(handed), budget)
	}
	smiles, scores := readLogSMILES(t, filepath.Join(run, rundir.EvalLogFile))
	if len(smiles) != budget {
		t.Errorf("%d calls in the log, want %d", len(smiles), budget)
	}
	for i, s := range smiles {
		if scores[i] != lengthScore(s) {
			t.Errorf("call %d: %s scored %v", i+1, s, scores[i])
		}
	}
	var st labserve.StatusReply
	if code := call(t, "GET", base+"/v1/status", "", &st); code != 200 || !st.Finished || st.Calls != budget || len(st.Awaiting) != 0 {
		t.Errorf("status at the end: %d %+v\n%s", code, st, stderr)
	}
	if l, err := rundir.ReadLedger(run); err != nil || len(l.Items) != budget {
		t.Errorf("the ledger holds %d ids (%v), want %d", len(l.Items), err, budget)
	}
}

// TestServeAskN: POST /v1/ask?n=N hands out at most N molecules of the batch, the same until told; a bad n is a
// 400.
func TestServeAskN(t *testing.T) {
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	base, stderr := startServe(t, "-run", filepath.Join(dir, "run"), "-task", "demo", "-init", guacamol100, "-init-count", "6",
		"-budget", "16", "-anchors", "1", "-queries", "5", "-candidates", "100", "-model", dir)
	var a, b, all labserve.AskReply
	if code := call(t, "POST", base+"/v1/ask?n=2", "", &a); code != 200 || len(a.Batch) != 2 || a.Batch[1].ID != "m2" {
		t.Fatalf("ask?n=2: %d %+v\n%s", code, a, stderr)
	}
	if call(t, "POST", base+"/v1/ask?n=2", "", &b); fmt.Sprint(b) != fmt.Sprint(a) {
		t.Errorf("ask?n=2 twice: %+v then %+v", a, b)
	}
	if call(t, "POST", base+"/v1/ask", "", &all); len(all.Batch) != 6 {
		t.Errorf("ask after ask?n=2: %d molecules, want the whole batch of 6", len(all.Batch))
	}
	var bad map[string]string
	if code := call(t, "POST", base+"/v1/ask?n=x", "", &bad); code != 400 {
		t.Errorf("ask?n=x: %d %v", code, bad)
	}
}
