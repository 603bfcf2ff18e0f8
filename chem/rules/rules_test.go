package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/data"
	"github.com/nfbo/nfbo/internal/chemtest"
)

func TestLoadNames(t *testing.T) {
	if r, err := Load("default"); err != nil || r.IsZero() || !r.ClosedShell || r.MaxMW != 650 {
		t.Errorf("default: %+v, %v", r, err)
	}
	if r, err := Load(""); err != nil || r.String() != Default().String() {
		t.Errorf("empty spec: %v, %v, want the default", r, err)
	}
	if r, err := Load("none"); err != nil || !r.IsZero() || r.String() != "none" {
		t.Errorf("none: %+v, %v", r, err)
	}
	if got := Default().String(); got != "closed-shell, charges ±1 on N O (net ±1), MW 150-650, PAINS, alerts, seen environments" {
		t.Errorf("Default().String() = %q", got)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"closed_shell": true, "elements": ["C", "N", "O"],
  "charges": {"elements": [], "max_abs_net": 0}, "max_ring_size": 7, "forbidden_smarts": ["[N+](=O)[O-]"],
  "catalogs": ["PAINS", "BRENK"], "max_sa": 5}`)
	r, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != "closed-shell, elements C N O, no formal charges, rings ≤ 7, 1 forbidden SMARTS, PAINS, BRENK, SA ≤ 5" {
		t.Errorf("String() = %q", got)
	}
	back, err := Parse("back", r.JSON())
	if err != nil || string(back.JSON()) != string(r.JSON()) {
		t.Errorf("JSON round trip: %s, %v", back.JSON(), err)
	}
	for name, c := range map[string]struct{ text, want string }{
		"unknown.json":  {"{\n  \"closed_shell\": true,\n  \"max_weight\": 500\n}", "unknown.json:3:"},
		"syntax.json":   {"{\n  \"closed_shell\": true,\n  \"min_mw\": ,\n}", "syntax.json:3:"},
		"type.json":     {"{\n\n  \"min_mw\": \"150\"\n}", "type.json:3:"},
		"trailing.json": {"{}\n{}\n", "data after"},
		"range.json":    {`{"min_mw": 500, "max_mw": 200}`, "min_mw 500 and max_mw 200"},
		"catalog.json":  {`{"catalogs": ["pains"]}`, `unknown "pains"`},
		"ring.json":     {`{"max_ring_size": 2}`, "max_ring_size 2"},
		"sa.json":       {`{"max_sa": 11}`, "max_sa 11"},
		"allow.json":    {`{"alerts": true, "allow_alerts": ["NIH:peroxid"]}`, `allow_alerts: "NIH:peroxid" is no alert of the default list`},
	} {
		_, err := Load(write(name, c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), `"default", "none" or a JSON file`) {
		t.Errorf("missing file: %v", err)
	}
}

// The generated alert list: every row read, unique ids, the alerts rare in both sets default with reason "rare",
// the hand-made list's default with its reasons, the alerts of the paid molecules present; and the rules
// that switch each check.
func TestGeneratedAlerts(t *testing.T) {
	all, err := GeneratedAlerts()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 300 {
		t.Fatalf("%d alerts, want NIH's, BRENK's and ZINC's (335) and nfbo's own", len(all))
	}
	ids, rejected := map[string]bool{}, map[string]bool{}
	defaults := 0
	for _, a := range all {
		if a.SMARTS == "" || a.MinCount < 0 {
			t.Errorf("%s: SMARTS %q, min count %d", a.ID(), a.SMARTS, a.MinCount)
		}
		ids[a.ID()] = true
		rare := a.ZINC < 0.001 && a.GuacaMol < 0.001
		if rare != (a.Reason == ReasonRare) || (rare && !a.Default) {
			t.Errorf("%s: default %v, reason %q, with frequencies %g (ZINC250k) and %g (GuacaMol 10k)", a.ID(), a.Default, a.Reason, a.ZINC, a.GuacaMol)
		}
		if a.Default && !rare {
			rejected[a.ID()] = true
		}
		if a.Default {
			defaults++
		}
	}
	for _, id := range []string{"NIH:alpha_halo_amine", "NIH:carbonyl_halide", "NIH:halogen_heteroatom", "NIH:peroxide", "NIH:anhydride",
		"NFBO:cyclopentadiene", "NFBO:dihydrobenzene"} {
		if !ids[id] {
			t.Errorf("%s missing", id)
		}
	}
	// Frequent groups a chemist rejects on sight, made default by hand; an acrylamide (osimertinib's warhead)
	// is not one of them.
	for _, id := range []string{"NIH:hydrazine", "NIH:aldehyde", "NIH:primary_halide_sulfate", "BRENK:Three-membered_heterocycle", "NIH:peroxide"} {
		if !rejected[id] {
			t.Errorf("%s: not a default alert, or a rare one", id)
		}
	}
	if rejected["NIH:acrylate"] || rejected["BRENK:Michael_acceptor_1"] {
		t.Error("a Michael acceptor made default by hand: osimertinib holds one")
	}
	if defaults == 0 || defaults == len(all) {
		t.Errorf("%d default alerts of %d: the threshold chose nothing", defaults, len(all))
	}
	r := Default()
	if !r.Alerts || !r.SeenEnvironments {
		t.Errorf("default rules without the generated checks: %+v", r)
	}
	r.AllowAlerts = []string{"NIH:anhydride"}
	if err := r.Validate(); err != nil {
		t.Errorf("allowing a default alert: %v", err)
	}
	for why, want := range map[string]string{"alert NIH:peroxide": "alerts", "alert: azo_A": "alerts",
		"unseen environment at C3 (radius 1): …": "unseen environments", "radical on C4": ""} {
		if got := Kind(why); got != want {
			t.Errorf("Kind(%q) = %q, want %q", why, got, want)
		}
	}
}

// TestWithSeen: the molecules are added once each, in order, to a copy; seen_molecules needs seen_environments.
func TestWithSeen(t *testing.T) {
	r := Default()
	got := r.WithSeen([]string{"CP(C)(=O)c1ccccc1", "CCO", "CP(C)(=O)c1ccccc1"}).WithSeen([]string{"CCO", "CCN"})
	if want := []string{"CP(C)(=O)c1ccccc1", "CCO", "CCN"}; !slices.Equal(got.SeenMolecules, want) {
		t.Errorf("SeenMolecules %q, want %q", got.SeenMolecules, want)
	}
	if len(r.SeenMolecules) != 0 {
		t.Errorf("WithSeen changed its receiver: %q", r.SeenMolecules)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("default rules with seen molecules: %v", err)
	}
	if s := got.String(); !strings.Contains(s, "seen environments (and 3 molecules')") {
		t.Errorf("String() = %q", s)
	}
	if _, err := Parse("r.json", []byte(`{"seen_molecules": ["CCO"]}`)); err == nil ||
		!strings.Contains(err.Error(), "seen_molecules without seen_environments") {
		t.Errorf("seen_molecules alone: %v", err)
	}
}

// TestSummarize: the verdicts that break a rule counted by kind, the most common first, each with its first.
func TestSummarize(t *testing.T) {
	n, s := Summarize([]string{"", "alert: azo_A(324)", "molecular weight 700.1 outside 150-650", "",
		"alert NIH:peroxide", "unseen environment at P2 (radius 0): …"})
	want := "alerts 2, as alert: azo_A(324); other rules 1, as molecular weight 700.1 outside 150-650; " +
		"unseen environments 1, as unseen environment at P2 (radius 0): …"
	if n != 4 || s != want {
		t.Errorf("Summarize = %d, %q; want 4, %q", n, s, want)
	}
	if n, s := Summarize([]string{"", ""}); n != 0 || s != "" {
		t.Errorf("nothing broken: %d, %q", n, s)
	}
}

// A row of alerts.tsv whose default and reason disagree is an error naming its line and alert.
func TestParseAlertsReason(t *testing.T) {
	const head = "# comment\ncatalogue\tname\tsmarts\tmin_count\tzinc250k_frequency\tguacamol10k_frequency\tdefault\treason\n"
	good := head + "NIH\thydrazine\tNN\t1\t0.0019\t0.0017\tyes\tmutagen: hydrazine\nNIH\tnitro\tN(=O)=O\t1\t0.04\t0.04\tno\t\n"
	all, err := parseAlerts([]byte(good))
	if err != nil || len(all) != 2 || all[0].Reason != "mutagen: hydrazine" || !all[0].Default || all[1].Default {
		t.Fatalf("%+v, %v", all, err)
	}
	for _, row := range []string{"NIH\thydrazine\tNN\t1\t0.0019\t0.0017\tyes\t\n", "NIH\tnitro\tN(=O)=O\t1\t0.04\t0.04\tno\trare\n"} {
		if _, err := parseAlerts([]byte(head + row)); err == nil || !strings.Contains(err.Error(), "alerts.tsv:3: NIH:") {
			t.Errorf("%q: %v", row, err)
		}
	}
}

// The committed alerts.tsv is what scripts/gen-rules.py makes of its counts: its default and reason columns
// follow the script's threshold and hand-made list (REJECT), so an edit of either, or of the file, that was not
// relabelled fails here.
func TestGeneratedAlertsRelabel(t *testing.T) {
	chemtest.NeedRDKit(t)
	b, err := data.Rules("alerts.tsv")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.tsv"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(objective.DefaultPython, filepath.Join("..", "..", "scripts", "gen-rules.py"), "--relabel")
	cmd.Env = append(os.Environ(), "NFBO_GEN_OUT="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-rules.py --relabel: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "alerts.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	date := regexp.MustCompile(`on \d{4}-\d{2}-\d{2}\.`) // the day it was written
	committed := date.ReplaceAllString(string(b), "on DATE.")
	if script := date.ReplaceAllString(string(got), "on DATE."); script != committed {
		cl, sl := strings.Split(committed, "\n"), strings.Split(script, "\n")
		for i := range min(len(cl), len(sl)) {
			if cl[i] != sl[i] {
				t.Fatalf("alerts.tsv:%d is not the script's: run scripts/gen-rules.py --relabel\ncommitted: %s\n   script: %s", i+1, cl[i], sl[i])
			}
		}
		t.Fatalf("alerts.tsv has %d lines, the script writes %d: run scripts/gen-rules.py --relabel", len(cl), len(sl))
	}
}
