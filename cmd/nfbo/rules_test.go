package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// TestOptimizeRules runs optimize with a tiny (untrained, so mostly nonsensical) flow under the default rules
// and a file of stricter ones: no molecule the optimiser paid for breaks them (checked again by RDKit), the
// progress lines say what was filtered, the rules are kept in the run, and a resume with other rules is refused.
func TestOptimizeRules(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	strict := filepath.Join(dir, "strict.json")
	if err := os.WriteFile(strict, []byte(`{"closed_shell": true, "charges": {"elements": []}, "max_ring_size": 6,
		"forbidden_smarts": ["[#7][#8]"], "catalogs": ["PAINS", "BRENK"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, spec := range []string{"default", strict} {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			flags := []string{"-task", "demo", "-objective-cmd", lengthOracle(t, dir), "-init", guacamol100,
				"-init-count", "20", "-budget", "50", "-candidates", "300", "-model", dir, "-rules", spec}
			stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", append(flags, "-out", out)...)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
			}
			want, _ := rules.Load(spec)
			if !strings.Contains(stderr, "chemistry rules: "+want.String()) {
				t.Errorf("the first line does not name the rules %q:\n%s", want, stderr)
			}
			if !strings.Contains(stdout, " filtered ") {
				t.Errorf("no progress line says what was filtered:\n%s", stdout)
			}
			smiles, _ := readLogSMILES(t, filepath.Join(out, rundir.EvalLogFile))
			why, err := pool.Check(context.Background(), want.JSON(), smiles[20:])
			if err != nil {
				t.Fatal(err)
			}
			if len(smiles) <= 20 {
				t.Fatalf("the optimiser paid for nothing")
			}
			for i, w := range why {
				if w != "" {
					t.Errorf("paid call %d, %s, breaks the rules: %s", 21+i, smiles[20+i], w)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, rundir.RulesFile))
			if err != nil || strings.TrimSpace(string(b)) != string(want.JSON()) {
				t.Errorf("rules.json holds %q (%v), want %s", b, err, want.JSON())
			}
			_, _, err = runCmd(t, newOptimizeCmd(), "", append(flags[:len(flags)-1], "none", "-out", out, "-resume")...)
			if err == nil || !strings.Contains(err.Error(), "other chemistry rules") {
				t.Errorf("resume with -rules none: %v, want a refusal", err)
			}
		})
	}
}
