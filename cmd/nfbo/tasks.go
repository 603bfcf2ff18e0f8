package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/nfbo/nfbo/chem/objective"
)

// newTasksCmd returns "nfbo tasks", which lists the RDKit worker's tasks.
func newTasksCmd() *Command {
	fs := flag.NewFlagSet("tasks", flag.ContinueOnError)
	python := fs.String("python", objective.DefaultPython, "Python interpreter that can import RDKit")
	asJSON := fs.Bool("json", false, "print the task list as JSON")
	cmd := &Command{
		UsageLine: "tasks [-json] [-python path]",
		Short:     "list the objective tasks (GuacaMol, PMO, qed, logp, sa)",
		Long: `Tasks lists the objectives the RDKit worker implements: the 20 GuacaMol v2
goal-directed tasks under their GuacaMol names (with NF-BO's short ids, e.g.
adip, med2, osmb, pdop, rano, valt, zale), the 20 PMO tasks that need only
RDKit under their TDC names, and qed, logp (LOL-BO's penalised logP), sa and
crippen_logp. Any name or alias is accepted by "nfbo score -task".

The worker runs under /usr/bin/python3, which sees Debian's python3-rdkit
(install: sudo apt-get install python3-rdkit rdkit-data python3-numpy).`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "tasks takes no arguments")
		}
		pool, err := objective.NewRDKit(objective.RDKitOptions{Python: *python})
		if err != nil {
			return err
		}
		defer pool.Close()
		tasks, err := pool.Tasks(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(cmd.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(tasks)
		}
		tw := tabwriter.NewWriter(cmd.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tALIASES\tSUITE\tDESCRIPTION")
		for _, t := range tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, strings.Join(t.Aliases, ","), t.Suite, t.Description)
		}
		return tw.Flush()
	}
	return cmd
}
