package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/rundir"
)

// newTellCmd returns "nfbo tell", which gives an ask/tell run the scores of molecules it asked for.
func newTellCmd() *Command {
	fs := flag.NewFlagSet("tell", flag.ContinueOnError)
	dir := fs.String("run", "", "run `directory` (required), made by nfbo ask")
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for another nfbo process (an ask, a serve) to let go of the run directory")
	cmd := &Command{
		UsageLine: "tell -run DIR FILE",
		Short:     "give an ask/tell run the scores of the molecules it asked for",
		Long: `Tell reads scores from FILE ("-" for standard input) and adds them to the
run in -run DIR: each one is paid for, appended to DIR/evaluations.jsonl and
synced before tell reports it.

FILE is CSV with a header that has an "id" and a "score" column (ask's CSV
with a score column added will do: other columns are ignored; a spreadsheet's
tab-delimited export too), or JSON lines such as
{"id": "m12", "score": 0.73}. A molecule that could not be scored (a failed
synthesis) may have an empty score and an "error" saying why: it is paid for
with score 0 and the reason, as an objective's error is.

Partial batches, late results and rows sent again are fine: a molecule told
before with the same answer is counted once. Every row is checked before any
is applied, so a file with an unknown id, a score that is not a finite number,
a malformed row, or a new answer for a molecule already told (a paid answer
cannot be changed) is rejected with FILE:LINE and changes nothing.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		switch {
		case *dir == "":
			return Usagef(cmd, "tell: -run is required")
		case len(args) != 1:
			return Usagef(cmd, "tell: want one FILE of scores (\"-\" for standard input), got %d arguments", len(args))
		}
		name := args[0]
		var r io.Reader = cmd.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("tell: %w", err)
			}
			defer f.Close()
			r = f
		} else {
			name = "standard input"
		}
		rows, err := asktell.Parse(name, r)
		if err != nil {
			return fmt.Errorf("tell: %w; nothing was applied", err)
		}
		info, err := rundir.ReadInfo(*dir)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("tell: %s holds no run (no %s); make one with nfbo ask", *dir, rundir.InfoFile)
		}
		if err != nil {
			return fmt.Errorf("tell: %w", err)
		}
		wctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		unlock, err := rundir.LockWait(wctx, *dir)
		if err != nil {
			return fmt.Errorf("tell: %w", err)
		}
		defer unlock()
		warnf := func(format string, args ...any) { fmt.Fprintf(cmd.Stderr, "nfbo tell: "+format+"\n", args...) }
		sum, err := asktell.TellRun(ctx, *dir, name, rows, info, warnf)
		if err != nil {
			return fmt.Errorf("tell: %w", err)
		}
		fmt.Fprintf(cmd.Stdout, "told %d new scores (%d rows already told); %d calls paid of %d; %d molecules await scores\n",
			sum.New, sum.Repeated, sum.Calls, info.Budget, sum.Awaiting)
		switch {
		case sum.Awaiting == 0 && sum.Calls < info.Budget:
			fmt.Fprintf(cmd.Stderr, "nfbo tell: the batch is complete; the next one: nfbo ask -run %s\n", *dir)
		case sum.Awaiting == 0:
			fmt.Fprintf(cmd.Stderr, "nfbo tell: the run in %s is finished: all %d calls of its budget are paid "+
				"(nfbo report %s draws its best molecules)\n", *dir, info.Budget, *dir)
		}
		return nil
	}
	return cmd
}
