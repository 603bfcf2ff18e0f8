package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/pretrain"
)

// newCurveCmd returns "nfbo curve": a pretraining log (engine/train.ParseLog) drawn by pretrain.WriteCurves and
// tabulated by pretrain.WriteValTable.
func newCurveCmd() *Command {
	c := &Command{
		UsageLine: "curve [-out PREFIX] [-from STEP] LOG",
		Short:     "loss curves and validation table of a pretraining log",
		Long: `Curve reads LOG, what "nfbo pretrain" printed (standard output and standard
error together, over any number of resumed runs), and writes PREFIX.png and
PREFIX.svg: two stacked panels against the optimiser step, the NLL per token
(nats) above and the similarity loss per token below, each with the training
value of every logged step (thin line) and the validation value (points and
line). It prints a Markdown table of the validation rows on standard output.

A resumed run appends a header line ("pretrain: ... steps K → N, batch B")
and restarts from its checkpoint at step K: lines of earlier runs after step
K are dropped (that training was lost), and where a step is logged twice the
later line wins. Lines other than step lines and header lines (messages,
errors) are ignored; a malformed step line is an error naming LOG and its line.
A last line without its newline (pretraining still writing it) is left out,
with a note.

-from leaves the steps before STEP out of the plots (not the table), so that
the first steps, whose NLL falls by tens of nats, do not flatten the rest.

PREFIX defaults to LOG without its extension.`,
		Flag: flag.NewFlagSet("curve", flag.ContinueOnError),
	}
	out := c.Flag.String("out", "", "output file `prefix`: PREFIX.png and PREFIX.svg (default: LOG without extension)")
	from := c.Flag.Int64("from", 0, "plot only steps ≥ `STEP` (the table keeps every validation row)")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 1 {
			return Usagef(cmd, "curve: want one log file, got %d arguments", len(args))
		}
		name := args[0]
		prefix := *out
		if prefix == "" {
			prefix = strings.TrimSuffix(name, filepath.Ext(name))
		}
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("curve: %w", err)
		}
		lg, err := train.ParseLog(name, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("curve: %w", err)
		}
		if dir := filepath.Dir(prefix); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("curve: %w", err)
			}
		}
		files, err := pretrain.WriteCurves(prefix, filepath.Base(name), lg, *from)
		if err != nil {
			return fmt.Errorf("curve: %w", err)
		}
		if err := pretrain.WriteValTable(cmd.Stdout, lg); err != nil {
			return err
		}
		if lg.TornLine > 0 {
			fmt.Fprintf(cmd.Stderr, "curve: %s:%d: the last line has no newline yet (%d bytes; pretraining still writing it?): left out\n",
				name, lg.TornLine, lg.TornBytes)
		}
		fmt.Fprintf(cmd.Stderr, "curve: %d steps (%d validated) from %s; wrote %s\n",
			len(lg.Points), lg.NumVal(), name, strings.Join(files, ", "))
		return nil
	}
	return c
}
