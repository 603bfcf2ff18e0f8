package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/rundir"
)

// needChromium returns the path of Debian's chromium (make test installs it), skipping the test without it,
// or failing it under CI=true.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "chromium-headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium missing (make test installs it: scripts/setup.sh --test)")
	}
	t.Skip("chromium missing (apt-get install chromium)")
	return ""
}

// TestReportHTMLInChromium writes the HTML report of a small run and opens its pages in headless Chromium: every
// molecule's 2D structure must have been rendered with a non-empty size (the page's script writes each
// drawing's bounding box into its data-bbox attribute), in score order, with its canonical SMILES and call, and
// the suite page must link to the run page.
func TestReportHTMLInChromium(t *testing.T) {
	t.Parallel()
	needRDKit(t)
	chromium := needChromium(t)
	suite := t.TempDir()
	run := filepath.Join(suite, "qed", "nfbo", "seed1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	mols := []struct {
		smiles, canonical string
		score             float64
	}{
		{"C1=CC=CC=C1O", "Oc1ccccc1", 0.47},
		{"CC(=O)NC1=CC=C(O)C=C1", "CC(=O)Nc1ccc(O)cc1", 0.59},
		{"CN1C=NC2=C1C(=O)N(C)C(=O)N2C", "Cn1c(=O)c2c(ncn2C)n(C)c1=O", 0.54},
		{"CCO", "CCO", 0.41},
		{"C1CC", "", 0}, // answered with an error: not shown
	}
	var log strings.Builder
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i, m := range mols {
		rec := rundir.Record{Call: i + 1, SMILES: m.smiles, Canonical: m.canonical, Score: m.score, Time: now, Task: "qed"}
		if m.canonical == "" {
			rec.Canonical, rec.Error = m.smiles, "invalid SMILES"
		}
		b, _ := json.Marshal(rec)
		log.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(run, rundir.EvalLogFile), []byte(log.String()), 0o644)
	rundir.WriteInfo(run, rundir.Info{Setting: "0+5", Task: "qed", Method: "nfbo", Seed: 1, Budget: 5, Calls: 5, Finished: true,
		Objective: rundir.ObjectiveRDKit})

	if _, stderr, err := runCmd(t, newReportCmd(), "", "-plots=false", suite); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr)
	}
	page := filepath.Join(suite, "runs", "qed_nfbo_seed1.html")
	dom := dumpDOM(t, chromium, page)
	boxes := regexp.MustCompile(`class="mol(?: breaks)?" data-rank="(\d+)" data-bbox="(\d+)x(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(boxes) != 4 {
		t.Fatalf("%d rendered drawings in %s, want the 4 molecules with a score:\n%.3000s", len(boxes), page, dom)
	}
	for i, b := range boxes {
		w, _ := strconv.Atoi(b[2])
		h, _ := strconv.Atoi(b[3])
		if b[1] != strconv.Itoa(i) || w < 20 || h < 10 {
			t.Errorf("drawing %d: rank %s, rendered %dx%d", i, b[1], w, h)
		}
	}
	// Best first, with canonical SMILES and the call that found it.
	order := []string{"CC(=O)Nc1ccc(O)cc1", "Cn1c(=O)c2c(ncn2C)n(C)c1=O", "Oc1ccccc1", "CCO"}
	last := -1
	for _, s := range order {
		i := strings.Index(dom, `<div class="smiles">`+s+`</div>`)
		if i < last {
			t.Errorf("%s missing or out of order", s)
		}
		last = i
	}
	// Phenol and ethanol weigh less than the default rules' 150: marked, with the rule; the other two not.
	if n := strings.Count(dom, `class="mol breaks"`); n != 2 || !strings.Contains(dom, "breaks the default rules: molecular weight 46.1") {
		t.Errorf("%d molecules marked as breaking the default rules, want phenol and ethanol, with the rule", n)
	}
	if !strings.Contains(dom, "0.5900</span> · call 2") || strings.Contains(dom, "C1CC") {
		t.Errorf("the run page lacks the best score with its call, or shows the molecule answered with an error")
	}
	suiteDOM := dumpDOM(t, chromium, filepath.Join(suite, "report.html"))
	if !strings.Contains(suiteDOM, `href="runs/qed_nfbo_seed1.html"`) || !strings.Contains(suiteDOM, "<svg") {
		t.Errorf("the suite page lacks the link to the run page or its curves")
	}
}

// dumpDOM opens path in headless Chromium and returns the DOM after the page's scripts ran.
func dumpDOM(t *testing.T, chromium, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	abs, _ := filepath.Abs(path)
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", "file://"+abs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", path, err)
	}
	return string(out)
}
