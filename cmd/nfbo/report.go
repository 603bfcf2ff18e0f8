package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
)

func newReportCmd() *Command {
	c := &Command{
		UsageLine: "report [-out DIR] [-plots=false] [-html=false] [-best N] SUITEDIR|RUNS.TSV...",
		Short:     "tables, plots and an HTML report with the best molecules drawn, from a suite's evaluation logs or runs.tsv rows",
		Long: `Report reads every run under SUITEDIR (a directory holding run.json and
evaluations.jsonl; "nfbo bench" and "nfbo optimize" write them) and writes,
from those files alone:

  OUT/report.md        one table per setting: per task and method, the mean and
                       standard deviation over seeds of Top-1, Top-10, Top-100 and
                       AUC Top-1/10/100, with the published NF-BO figure beside
                       ours where one exists, and the sum over tasks;
  OUT/img/*.png, .svg  best score against objective calls per task, one line per
                       method (mean over seeds), shaded by one standard error;
  OUT/runs.tsv         one row per run (setting, task, method, seed, calls,
                       finished, Top-k, AUC Top-k, seconds, nfbo version), for a
                       spreadsheet or for pooling runs made on several machines.

  OUT/report.html      the same tables and curves as one self-contained page
                       (inline CSS and SVG, nothing fetched), linking to
  OUT/runs/*.html      a page per run: its figures, its curve, and its best
                       molecules (-best, 20) drawn as 2D structures by RDKit,
                       with score, canonical SMILES and the call that found each.

Several places may be given, each a suite directory or a runs.tsv that an
earlier report wrote: their runs are pooled into one report, so that runs made
on several machines, or kept as runs.tsv rows after their directories were
removed (BENCHMARKS.md's tables are built so from the files under
benchmarks/), are reported together. A row has figures but no log: it is in
the tables and runs.tsv, not in the plots or run pages.

OUT defaults to SUITEDIR (and must be given for anything else). The Markdown is
also printed on standard output.
Without RDKit the pages show the molecules' SMILES without drawings, with a
warning. A drawn molecule that breaks a rule of the default chemistry rules
(what optimize proposes under unless -rules says otherwise; see nfbo score
-rules default) is marked in red with the rule, so that a run made with
-rules none shows what a chemist would discard. SUITEDIR may also be a single run directory.

A task scored by -objective-cmd is reported apart from the RDKit task of the
same name, as "TASK [program]". A run whose run.json or log cannot be read is
left out, and of two runs with the same setting, task, objective, method and
seed (a copied directory) the one with fewer calls is left out; each is named
in a warning on standard error and in the report's notes, as is a log whose
last line is incomplete. A run without a log is marked "without a log" and,
like an unfinished run, left out of the sums.`,
		Flag: flag.NewFlagSet("report", flag.ContinueOnError),
	}
	out := c.Flag.String("out", "", "output `directory` (default: SUITEDIR)")
	plots := c.Flag.Bool("plots", true, "write PNG and SVG plots")
	html := c.Flag.Bool("html", true, "write OUT/report.html and a page per run in OUT/runs/, with the best molecules drawn")
	best := c.Flag.Int("best", 20, "molecules drawn on each run's page")
	python := c.Flag.String("python", objective.DefaultPython, "Python interpreter that can import RDKit (for the drawings)")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) == 0 {
			return Usagef(cmd, "report: want a suite directory or runs.tsv files")
		}
		for _, a := range args {
			if _, err := os.Stat(a); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("report: %s does not exist (want a run directory, a suite directory or a runs.tsv)", a)
			} else if err != nil {
				return fmt.Errorf("report: %w", err)
			}
		}
		dir := strings.Join(args, ", ")
		if *out == "" {
			if fi, err := os.Stat(args[0]); len(args) > 1 || err != nil || !fi.IsDir() {
				return Usagef(cmd, "report: -out is needed with more than one place or a runs.tsv")
			}
			*out = args[0]
		}
		suite, err := bench.LoadPaths(args)
		if err != nil {
			return err
		}
		for _, w := range suite.Warnings {
			fmt.Fprintf(cmd.Stderr, "nfbo report: %s\n", w)
		}
		opts := bench.ReportOptions{Plots: *plots, HTML: *html, Best: *best}
		if *html {
			draw, closeDraw, err := rdkitDrawer(ctx, *python, cmd.Stderr)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			defer closeDraw()
			opts.Draw = draw
			if draw != nil {
				check, closeCheck, err := defaultRulesChecker(ctx, *python, cmd.Stderr)
				if err != nil {
					return fmt.Errorf("report: %w", err)
				}
				defer closeCheck()
				opts.Check = check
			}
		}
		md, err := bench.WriteReport(ctx, suite, dir, *out, opts)
		if err != nil {
			return err
		}
		if *html {
			pages := 0
			for _, r := range suite.Runs {
				if !r.IsRow() {
					pages++
				}
			}
			fmt.Fprintf(cmd.Stderr, "nfbo report: wrote %s and %d run pages in %s\n", filepath.Join(*out, "report.html"),
				pages, filepath.Join(*out, "runs"))
		}
		_, err = cmd.Stdout.Write(md)
		return err
	}
	return c
}

// defaultRulesChecker returns a CheckFunc that checks molecules against nfbo's default chemistry rules with
// RDKit's worker (the run pages mark those that break one), and the function that stops it.
func defaultRulesChecker(ctx context.Context, python string, stderr io.Writer) (bench.CheckFunc, func(), error) {
	warnf := func(format string, args ...any) { fmt.Fprintf(stderr, "nfbo report: "+format+"\n", args...) }
	pool, err := objective.NewRDKit(objective.RDKitOptions{Python: python, PoolOptions: objective.PoolOptions{Workers: 1, Stderr: stderr, Warnf: warnf}})
	if err != nil {
		return nil, nil, err
	}
	js := rules.Default().JSON()
	check := func(ctx context.Context, smiles []string) ([]string, error) { return pool.Check(ctx, js, smiles) }
	return check, func() { pool.Close() }, nil
}

// rdkitDrawer returns a DrawFunc drawing molecules with RDKit's worker, and the function that stops it. Without
// RDKit it returns a nil DrawFunc (pages then show SMILES only) and says so on stderr.
func rdkitDrawer(ctx context.Context, python string, stderr io.Writer) (bench.DrawFunc, func(), error) {
	warnf := func(format string, args ...any) { fmt.Fprintf(stderr, "nfbo report: "+format+"\n", args...) }
	draw, stop, err := objective.OpenDrawer(ctx, python, 250, 200, stderr, warnf)
	switch {
	case err == nil:
		return bench.DrawFunc(draw), stop, nil
	case errors.Is(err, objective.ErrRDKitMissing):
		warnf("RDKit is missing, so the pages show SMILES without drawings: %v", err)
		return nil, func() {}, nil
	}
	return nil, nil, err
}
