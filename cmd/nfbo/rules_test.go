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

// TestOptimizeRulesSeenMolecules: a series built on a group no molecule of ZINC250k or GuacaMol 10k holds (an
// aryl dimethylphosphine oxide, brigatinib's) is grown under the default rules, not frozen: the initial
// molecules' atom environments count as seen, so analogs that keep the group are paid for; an initial molecule
// that breaks another rule is said when the run begins, not again at a resume.
func TestOptimizeRulesSeenMolecules(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	init := []string{"smiles"}
	for _, r := range []string{"C", "CC", "CCC", "C(C)C", "C1CC1", "CCO", "CCN(C)C", "c1ccccc1", "Cc1ccccc1", "C1CCCC1",
		"CCOC", "CC(C)(C)", "c1ccncc1", "CCc1ccccc1", "C1CCOCC1", "CC#N", "CCF", "c1ccc(F)cc1", "C1CCNCC1", "CC(=O)N"} {
		init = append(init, "CP(C)(=O)c1ccc(C(=O)N"+r+")cc1")
	}
	init = append(init, "Oc1ccc(N=Nc2ccccc2)cc1") // an azo dye: an alert of the hand-made list, and PAINS
	initFile := filepath.Join(dir, "init.csv")
	if err := os.WriteFile(initFile, []byte(strings.Join(init, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", initFile, "-budget", "71", "-candidates", "300", "-model", dir, "-out", out)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "1 of the 21 initial molecules break the chemistry rules (alerts 1, as alert NIH:azo_aryl") {
		t.Errorf("the azo dye among the initial molecules is not said:\n%s", stderr)
	}
	// A resume (as every ask is) widens the rules again but does not check every initial molecule again.
	_, stderr, err = runCmd(t, newOptimizeCmd(), "", "-task", "demo", "-objective-cmd", lengthOracle(t, dir),
		"-init", initFile, "-budget", "71", "-candidates", "300", "-model", dir, "-out", out, "-resume")
	if err != nil || strings.Contains(stderr, "initial molecules break") {
		t.Errorf("resume: %v, the warning again:\n%s", err, stderr)
	}
	smiles, _ := readLogSMILES(t, filepath.Join(out, rundir.EvalLogFile))
	if len(smiles) <= 21 {
		t.Fatalf("the optimiser paid for nothing")
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	// The group's environments are unseen in the two sets, and seen in the run's own molecules.
	env := rules.Rules{SeenEnvironments: true}
	why, err := pool.Check(ctx, env.JSON(), init[1:21])
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range why {
		if rules.Kind(w) != rules.KindUnseen {
			t.Fatalf("%s: %q, want an unseen environment", init[1+i], w)
		}
	}
	paid := smiles[21:]
	keep, err := pool.Check(ctx, env.JSON(), paid)
	if err != nil {
		t.Fatal(err)
	}
	grown := 0
	for _, w := range keep {
		if w != "" {
			grown++
		}
	}
	if grown == 0 {
		t.Errorf("no paid molecule keeps the series' group (%d paid)", len(paid))
	}
	why, err = pool.Check(ctx, rules.Default().WithSeen(init[1:21]).JSON(), paid)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range why {
		if w != "" {
			t.Errorf("paid %s breaks the rules widened by the series: %s", paid[i], w)
		}
	}
	t.Logf("%d of %d paid molecules hold an environment of the series unseen in the two sets", grown, len(paid))
}
