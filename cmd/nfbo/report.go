package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nfbo/nfbo/bo/bench"
)

func newReportCmd() *Command {
	c := &Command{
		UsageLine: "report [-out DIR] [-plots=false] SUITEDIR",
		Short:     "tables and plots from the evaluation logs of a suite",
		Long: `Report reads every run under SUITEDIR (a directory holding run.json and
evaluations.jsonl; "nfbo bench" and "nfbo optimize" write them) and writes,
from those files alone:

  OUT/report.md        one table per setting: per task and method, the mean and
                       standard deviation over seeds of Top-1, Top-10, Top-100 and
                       AUC Top-1/10/100, with the published NF-BO figure beside
                       ours where one exists, and the sum over tasks;
  OUT/img/*.png, .svg  best score against objective calls per task, one line per
                       method (mean over seeds), shaded by one standard error.

OUT defaults to SUITEDIR. The Markdown is also printed on standard output.

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
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 1 {
			return Usagef(cmd, "report: want one suite directory, got %d arguments", len(args))
		}
		dir := args[0]
		if *out == "" {
			*out = dir
		}
		suite, err := bench.LoadSuite(dir)
		if err != nil {
			return err
		}
		for _, w := range suite.Warnings {
			fmt.Fprintf(cmd.Stderr, "nfbo report: %s\n", w)
		}
		runs := suite.Runs
		if len(runs) == 0 {
			return fmt.Errorf("report: no runs (run.json) under %s", dir)
		}
		var md bytes.Buffer
		fmt.Fprintf(&md, "## Report of %s (%d runs)\n\n", dir, len(runs))
		if err := bench.WriteMarkdown(&md, runs); err != nil {
			return err
		}
		if len(suite.Warnings) > 0 {
			md.WriteString("Notes on the run directories:\n\n")
			for _, w := range suite.Warnings {
				fmt.Fprintf(&md, "- %s\n", w)
			}
			md.WriteString("\n")
		}
		if *plots {
			files, err := bench.WritePlots(filepath.Join(*out, "img"), runs)
			if err != nil {
				return err
			}
			md.WriteString("Plots:\n\n")
			for _, f := range files {
				if filepath.Ext(f) == ".png" {
					rel, _ := filepath.Rel(*out, f)
					fmt.Fprintf(&md, "![%s](%s)\n", filepath.Base(f), rel)
				}
			}
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "report.md"), md.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		_, err = cmd.Stdout.Write(md.Bytes())
		return err
	}
	return c
}
