package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/internal/buildinfo"
)

// benchLong is "nfbo help bench"'s text.
const benchLong = `Bench runs every (task, method, seed) of a suite as its own process, up to
-procs at a time, each in OUT/TASK/METHOD/seedN. Every method reads the same
initial data and spends the same budget through the same budget-accounting
objective. A finished run is not redone; an interrupted one resumes from its
run directory, so bench can be stopped and started again at will. A finished
run made by another nfbo counts as done too (bench says how many): after a
change of default, give the new runs their own OUT.

Suites:
  guacamol7      adip med2 osmb pdop rano valt zale, 100 initial + 500 calls
                 (the initial data is data/guacamol/guacamol_train_data_first_100.csv
                 with its published scores; for valt, whose score is 0 on all
                 100, the two best-scoring valt molecules of the 10k GuacaMol
                 set are added, as the paper adds two such molecules)
  guacamol7-10k  the same tasks at 10,000 initial + 10,000 calls
  user2          oral_mpo and kinase_hybrid, two objectives of our own through
                 -objective-cmd (examples/objectives/user_objectives.py), from
                 the 100 GuacaMol initial molecules scored by the objective
                 (100 initial + 500 calls)
  pmo20          the 20 RDKit-only PMO tasks under PMO's protocol: each seed's
                 runs start from 1,000 molecules drawn at random from
                 ZINC250k (data/zinc250k/zinc.txt.gz; the draw follows from
                 the seed alone, the same for every method and task, written
                 to OUT/init/zinc250k_seedN.csv), scored through the
                 objective, + 9,000 calls: 10,000 calls, of which each
                 method chooses how many go to initial molecules, the first
                 of the draw (the default NF-BO: 200; graph-ga: 120, its
                 population, as mol_opt); 5 seeds, as PMO reports 5 runs;
                 setting "1000+9000 random"
  pmo20-fixed    the same, every run from the first 1,000 molecules of
                 ZINC250k (setting 1000+9000: the tables before PMO's
                 protocol; never pooled with pmo20's); 3 seeds
  pmo20-zinc     the same tasks from GenMol's and f-RAG's start: all of
                 ZINC250k scored by the task's objective outside the budget
                 (once per task, kept in OUT/init/zinc250k_scores/TASK.txt;
                 5-25 minutes of a core a task), every run given the best
                 1,000 with their scores + 10,000 calls of its own; 5 seeds;
                 setting "1000+10000 ZINC-scored"

Methods: nfbo (default settings), nfbo-reference (the official code's rules:
-variant reference), nfbo-no-tacs, nfbo-no-flow (the GP screens GA children
alone: what the flow adds), prior (random samples from
the flow's prior, decoded), ga (a genetic algorithm on SELFIES symbols) and
graph-ga (the graph GA with mol_opt's settings: population 120, 70 children
a generation, mutation rate 0.067; optimize -method graph-ga).

While it runs, bench keeps OUT/progress.txt (runs done, running, left, the
estimated time left) up to date, and rewrites a partial report OUT/report.md
each time a run finishes; the full
report with plots is "nfbo report OUT". With -rows FILE it also keeps FILE, a
runs.tsv, holding the row of every finished run of its own (not those of
another bench sharing OUT) beside the rows it held: the
figures outlive the run directories ("nfbo report FILE" reads them back), and
a run whose finished row FILE holds is not run again, so that a suite goes on
from its rows on a machine without its run directories.`

// newBenchCmd returns "nfbo bench", which runs a suite's (task, method, seed) runs (package bench).
func newBenchCmd() *Command {
	c := &Command{
		UsageLine: "bench -suite NAME -model DIR -out DIR [-methods LIST] [-seeds LIST] [-procs N] [-rows FILE]",
		Short:     "run a suite of (task, method, seed) runs and report them",
		Long:      benchLong,
		Flag:      flag.NewFlagSet("bench", flag.ContinueOnError),
	}
	fs := c.Flag
	suiteName := fs.String("suite", "", "suite: guacamol7, guacamol7-10k, user2, pmo20, pmo20-fixed or pmo20-zinc (required)")
	modelDir := fs.String("model", "", "model `directory` (required)")
	out := fs.String("out", "", "suite `directory` (required)")
	methods := fs.String("methods", strings.Join(bench.DefaultMethods, ","), "comma-separated methods (nfbo-no-flow and graph-ga too)")
	seeds := fs.String("seeds", "", "comma-separated seeds (default: the suite's: 1,2,3; pmo20's 1,2,3,4,5)")
	tasks := fs.String("tasks", "", "comma-separated subset of the suite's tasks (default: all)")
	procs := fs.Int("procs", 1, "runs at a time")
	rows := fs.String("rows", "", "a runs.tsv `file` kept holding the row of every finished run of the suite, "+
		"beside the rows it holds (benchmarks/*.tsv in the repository): figures that outlive the run directories; a run whose finished row it holds is not run again")
	workers := fs.Int("workers", 1, "objective worker processes per run")
	dataDir := fs.String("data", "data", "the repository's data `directory`")
	dry := fs.Bool("n", false, "print the commands without running them")
	extra := fs.String("args", "", "extra arguments passed to every run, e.g. \"-sampler pathwise\"")
	variants := bench.Variants{}
	fs.Var(variants, "variant", "`NAME=ARGS`: an extra method NAME whose runs are nfbo with ARGS (repeatable), "+
		"e.g. -variant tr04=\"-tr-init 0.4\" -methods nfbo,tr04: ablations side by side, same seeds, data and budget; "+
		"ARGS may give the runs a -setting and budget of their own, not -seed, -task, -label or -out (the bench's)")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) > 0 {
			return Usagef(cmd, "bench: unexpected arguments %q", args)
		}
		s, ok := bench.Suites(*dataDir, objective.DefaultPython)[*suiteName]
		if !ok {
			return Usagef(cmd, "bench: unknown suite %q (want guacamol7, guacamol7-10k, user2, pmo20, pmo20-fixed or pmo20-zinc)", *suiteName)
		}
		if *modelDir == "" || *out == "" {
			return Usagef(cmd, "bench: -model and -out are required")
		}
		p := bench.Plan{Suite: s, Methods: bench.SplitList(*methods), Variants: variants, Model: *modelDir, Out: *out,
			Workers: *workers, Extra: *extra}
		for _, v := range bench.SplitList(*seeds) {
			n, err := strconv.Atoi(v)
			if err != nil {
				return Usagef(cmd, "bench: -seeds: %v", err)
			}
			p.Seeds = append(p.Seeds, n)
		}
		if *tasks != "" {
			p.Tasks = bench.SplitList(*tasks)
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: find own binary: %w", err)
		}
		p.Self, p.Dry, p.Log = self, *dry, cmd.Stderr
		jobs, err := p.Jobs()
		if err != nil {
			var ue *bench.PlanError
			if errors.As(err, &ue) {
				return Usagef(cmd, "bench: %v", err)
			}
			return fmt.Errorf("bench: %w", err)
		}
		if *dry {
			for _, j := range jobs {
				fmt.Fprintln(cmd.Stdout, strings.Join(j.Argv, " "))
			}
			return nil
		}
		return bench.RunJobs(ctx, cmd.Stderr, *out, jobs, bench.RunOptions{Procs: *procs, Rows: *rows, Version: buildinfo.Version()})
	}
	return c
}
