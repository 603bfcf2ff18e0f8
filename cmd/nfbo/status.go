package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/nfbo/nfbo/chem/objective/metrics"

	"github.com/nfbo/nfbo/labserve"
	"github.com/nfbo/nfbo/rundir"
)

// newStatusCmd returns "nfbo status", which says where a run stands.
func newStatusCmd() *Command {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	dir := fs.String("run", "", "run `directory` (required)")
	asJSON := fs.Bool("json", false, "print the status as JSON (serve's /v1/status)")
	best := fs.Int("best", 10, "show the `N` best molecules")
	cmd := &Command{
		UsageLine: "status -run DIR [-json] [-best N]",
		Short:     "where a run stands: calls paid, molecules awaiting scores, the best found",
		Long: `Status reads the run directory -run DIR (made by optimize or ask) without
changing it, while a run may be going on, and prints its task, method and
seed, the calls paid of the budget, whether it is finished, the molecules
handed out by ask that await scores, and the best molecules found with their
scores and calls (RDKit canonical SMILES).`,
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
		st, err := rundir.ReadStatus(*dir, *best)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("status: %s holds no run (no %s)", *dir, rundir.InfoFile)
		}
		if err != nil {
			return fmt.Errorf("status: %w", err)
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
