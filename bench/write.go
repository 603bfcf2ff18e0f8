package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ReportOptions say what WriteReport writes besides report.md and runs.tsv.
type ReportOptions struct {
	Plots bool     // img/*.png and .svg: best score against calls per task
	HTML  bool     // report.html and a page per run in runs/
	Best  int      // molecules on each run's page
	Draw  DrawFunc // draws them (RDKit's in nfbo report); nil: their SMILES only
	// Check marks those that break the default chemistry rules (RDKit's in nfbo report); nil: none marked.
	Check CheckFunc
}

// WriteReport writes the report of suite, read from the directory dir, into out: report.md (the tables of
// every setting, the notes on the run directories, links to the plots), runs.tsv (a row per run), and as opts
// says the plots and the HTML pages. It returns the Markdown.
func WriteReport(ctx context.Context, suite Suite, dir, out string, opts ReportOptions) ([]byte, error) {
	runs := suite.Runs
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no runs (run.json) under %s", dir)
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "## Report of %s (%d runs)\n\n", dir, len(runs))
	if err := WriteMarkdown(&md, runs); err != nil {
		return nil, err
	}
	if len(suite.Warnings) > 0 {
		md.WriteString("Notes on the run directories:\n\n")
		for _, w := range suite.Warnings {
			fmt.Fprintf(&md, "- %s\n", w)
		}
		md.WriteString("\n")
	}
	if opts.Plots {
		files, err := WritePlots(filepath.Join(out, "img"), runs)
		if err != nil {
			return nil, err
		}
		md.WriteString("Plots:\n\n")
		for _, f := range files {
			if filepath.Ext(f) == ".png" {
				rel, _ := filepath.Rel(out, f)
				fmt.Fprintf(&md, "![%s](%s)\n", filepath.Base(f), rel)
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "report.md"), md.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var tsv bytes.Buffer
	if err := WriteRunsTSV(&tsv, runs); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "runs.tsv"), tsv.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if opts.HTML {
		if err := writeHTMLPages(ctx, suite, dir, out, opts); err != nil {
			return nil, err
		}
	}
	return md.Bytes(), nil
}

// writeHTMLPages writes out/report.html and out/runs/*.html, each run's best molecules drawn by opts.Draw.
func writeHTMLPages(ctx context.Context, suite Suite, dir, out string, opts ReportOptions) error {
	runsDir := filepath.Join(out, "runs")
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	links := map[string]string{}
	for _, r := range suite.Runs {
		if r.row != nil {
			continue // a runs.tsv row: no log, so no curve or molecules to show
		}
		mols := BestMolecules(r, opts.Best)
		if err := Draw(ctx, mols, opts.Draw); err != nil {
			return fmt.Errorf("report: %s: %w", r.Dir, err)
		}
		if err := Check(ctx, mols, opts.Check); err != nil {
			return fmt.Errorf("report: %s: %w", r.Dir, err)
		}
		var page bytes.Buffer
		if err := WriteRunHTML(&page, RunPage{Run: r, Molecules: mols, Suite: "../report.html"}); err != nil {
			return fmt.Errorf("report: %s: %w", r.Dir, err)
		}
		name := RunPageName(r)
		if err := os.WriteFile(filepath.Join(runsDir, name), page.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		links[r.Dir] = "runs/" + name
	}
	var page bytes.Buffer
	if err := WriteSuiteHTML(&page, SuitePage{Title: "nfbo report of " + dir, Runs: suite.Runs, RunLinks: links,
		Warnings: suite.Warnings}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.html"), page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
