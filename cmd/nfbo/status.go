package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/metrics"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/labserve"
	"github.com/nfbo/nfbo/rundir"
)

// newStatusCmd returns "nfbo status", which says where a run stands.
func newStatusCmd() *Command {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	dir := fs.String("run", "", "run `directory` (required)")
	asJSON := fs.Bool("json", false, "print the status as JSON (serve's /v1/status)")
	best := fs.Int("best", 10, "show the `N` best molecules")
	outFile := fs.String("o", "", "also write every scored molecule, best first, to `FILE.csv` (smiles, the task's score, name \"RUN call N\") "+
		"or FILE.sdf (with RDKit's 2D coordinates): for a spreadsheet or a chemist's tools, and an -init file whose scores cost nothing")
	python := fs.String("python", objective.DefaultPython, "Python interpreter that can import RDKit (for -o FILE.sdf)")
	cmd := &Command{
		UsageLine: "status -run DIR [-json] [-best N] [-o FILE.csv|FILE.sdf]",
		Short:     "where a run stands: calls paid, molecules awaiting scores, the best found",
		Long: `Status reads the run directory -run DIR (made by optimize or ask) without
changing it, while a run may be going on, and prints its task, method and
seed, the calls paid of the budget, whether it is finished, the molecules
handed out by ask that await scores, and the best molecules found with their
scores and calls (RDKit canonical SMILES).

With -o FILE.csv it also writes every molecule the run paid for and scored,
best first, as a CSV table: its RDKit canonical SMILES, its score in a column
named after the task, and "RUN call N" as its name (RUN the run directory's
base name, N the call that paid for it). With -o FILE.sdf (or .sd) it
writes an SDF instead, each record a molfile with RDKit's 2D coordinates
titled "RUN call N", its score in a data item named after the task. Molecules
whose scoring failed are left out (the count is printed). Either file is an
-init file: a new run from it takes the scores from the file, paying nothing
for them.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		switch {
		case *dir == "":
			return Usagef(cmd, "status: -run is required")
		case len(args) != 0:
			return Usagef(cmd, "status: unexpected arguments %q", args)
		case *best < 0:
			return Usagef(cmd, "status: -best must not be negative")
		}
		keep := *best
		if *outFile != "" {
			keep = math.MaxInt
		}
		st, err := rundir.ReadStatus(*dir, keep)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("status: %s holds no run (no %s)", *dir, rundir.InfoFile)
		}
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if *outFile != "" {
			n, unscored, unwritable, err := writeScored(ctx, *outFile, *python, *dir, st)
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			fmt.Fprintf(cmd.Stderr, "nfbo status: wrote %d molecules to %s", n, *outFile)
			if unscored > 0 {
				fmt.Fprintf(cmd.Stderr, "; %d whose scoring failed left out", unscored)
			}
			if unwritable > 0 {
				fmt.Fprintf(cmd.Stderr, "; %d that RDKit cannot write as a molfile left out", unwritable)
			}
			fmt.Fprintln(cmd.Stderr)
			st.Best = st.Best[:min(*best, len(st.Best))]
		}
		if *asJSON {
			enc := json.NewEncoder(cmd.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(labserve.NewStatusReply(st))
		}
		i := st.Info
		state := "not finished"
		switch {
		case st.Finished():
			state = "finished"
		case i.Error != "":
			state = "stopped: " + i.Error
		}
		fmt.Fprintf(cmd.Stdout, "run %s: task %s, method %s, seed %d, setting %s; %d calls paid of %d; %s\n",
			*dir, i.Task, i.Method, i.Seed, i.Setting, st.Calls, i.Budget, state)
		if st.Torn {
			fmt.Fprintf(cmd.Stdout, "the evaluation log ends in an incomplete line (a write in progress, or a crash)\n")
		}
		if len(st.Awaiting) > 0 {
			fmt.Fprintf(cmd.Stdout, "%d molecules await scores (tell them with nfbo tell -run %s FILE):\n", len(st.Awaiting), *dir)
			for _, m := range st.Awaiting {
				if m.Name != "" {
					fmt.Fprintf(cmd.Stdout, "  %s  %s  (%s)\n", m.ID, labserve.DisplaySMILES(m), m.Name)
				} else {
					fmt.Fprintf(cmd.Stdout, "  %s  %s\n", m.ID, labserve.DisplaySMILES(m))
				}
			}
		}
		if len(st.Best) > 0 {
			fmt.Fprintln(cmd.Stdout, "best molecules (score, call, SMILES):")
			for _, r := range st.Best {
				fmt.Fprintf(cmd.Stdout, "  %s  %5d  %s\n", metrics.FormatScore(r.Score, 6), r.Call, r.Canonical)
			}
		}
		return nil
	}
	return cmd
}

// writeScored writes st's best records (all of them, best first) to path, each named "RUN call N" (RUN the run
// directory's base name), leaving out those whose scoring failed:
// an SDF (a name ending in .sdf or .sd) with RDKit's molfile blocks, else molfile.WriteCSV's table. It returns how
// many molecules it wrote, how many it left out without a score, and how many RDKit could not write.
func writeScored(ctx context.Context, path, python, dir string, st rundir.Status) (written, unscored, unwritable int, err error) {
	run := filepath.Base(filepath.Clean(dir))
	rows := make([]molfile.Row, 0, len(st.Best))
	for _, r := range st.Best {
		if r.Error != "" {
			unscored++
			continue
		}
		rows = append(rows, molfile.Row{SMILES: r.Canonical, Score: r.Score, Name: run + " call " + strconv.Itoa(r.Call)})
	}
	write := func(w io.Writer) error { return molfile.WriteCSV(w, st.Info.Task, rows) }
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".sdf" || ext == ".sd" {
		n := len(rows)
		if rows, err = withMolBlocks(ctx, python, rows); err != nil {
			return 0, 0, 0, err
		}
		unwritable = n - len(rows)
		write = func(w io.Writer) error { return molfile.WriteSDF(w, st.Info.Task, rows) }
	}
	return len(rows), unscored, unwritable, atomicfile.WriteFunc(path, write)
}

// withMolBlocks returns the rows that RDKit can write as molfile blocks (with 2D coordinates), each with its block.
func withMolBlocks(ctx context.Context, python string, rows []molfile.Row) ([]molfile.Row, error) {
	pool, err := objective.NewRDKit(objective.RDKitOptions{Python: python})
	if err != nil {
		return nil, fmt.Errorf("an SDF is written with RDKit: %w", err)
	}
	defer pool.Close()
	smiles := make([]string, len(rows))
	for i, r := range rows {
		smiles[i] = r.SMILES
	}
	ds, err := pool.MolBlocks(ctx, smiles)
	if err != nil {
		return nil, err
	}
	kept := rows[:0]
	for i, r := range rows {
		if ds[i].MolBlock != "" {
			r.MolBlock = ds[i].MolBlock
			kept = append(kept, r)
		}
	}
	return kept, nil
}
