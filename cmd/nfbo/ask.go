package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/optimize"
	"github.com/nfbo/nfbo/rundir"
)

// runFlags are the flags of ask that may change from one ask to the next: how, not what, is computed.
var runFlags = map[string]bool{"run": true, "o": true, "n": true, "python": true, "backend": true, "timeout": true, "workers": true,
	"request-size": true, "addr": true, "token-file": true}

// newAskCmd returns "nfbo ask", which proposes the next batch of an ask/tell run.
func newAskCmd() *Command {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	var a optimize.Args
	addRunFlags(fs, &a)
	fs.StringVar(&a.Out, "run", "", "run `directory` (required); the first ask creates it")
	outFile := fs.String("o", "", "write the batch to `file` (CSV) instead of standard output")
	max := fs.Int("n", 0, "hand out at most `N` molecules of the batch (0: all of it); the rest come with later asks")
	cmd := &Command{
		UsageLine: "ask -run DIR [-o FILE] [-n N] [-task NAME -init FILE -model DIR [optimize's flags]]",
		Short:     "propose the next molecules of an ask/tell run, for scoring elsewhere",
		Long: `Ask proposes the next batch of molecules of an ask/tell run and writes them
as CSV, one "id,smiles" row each (RDKit canonical SMILES), for scoring
elsewhere: a lab, a queue, a spreadsheet. "nfbo tell" gives the scores back.

The first ask creates the run in -run DIR and takes optimize's flags (-task,
-init, -model, -budget, -preset, -seed, ...; see "nfbo help optimize"); they
are kept in DIR/args.json and later asks need only -run (the first command
repeated as it was is fine; another value of one of the run's flags is
refused). When -init has no scores for -task, the first batch is the initial
molecules themselves.

-o writes the batch whole or not at all, and never to one of the run's own
files (the evaluation log, the ledger, ...): such an -o is refused.

Asking again before the batch is told gives the same molecules with the same
ids (those already told are left out), so a client that lost an answer can
ask again. -n N hands out at most N molecules of the batch, those handed out
before first: a lab with room for N syntheses takes the batch N at a time.
Once every molecule of the batch is told, the next ask fine-tunes the flow,
refits the surrogate and proposes the next batch; when the budget is spent
it writes only the header and says so. A run can switch between ask/tell and
"nfbo optimize -resume" with the same flags.

ids are m1, m2, ... in the order molecules are first handed out; the ledger
of them is DIR/asked.jsonl.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "ask: unexpected arguments %q", args)
		}
		if a.Out == "" {
			return Usagef(cmd, "ask: -run is required")
		}
		if *outFile != "" && rundir.IsRunFile(a.Out, *outFile) {
			return Usagef(cmd, "ask: -o %s is a file of the run in %s: writing the batch there would destroy it; "+
				"write the batch outside the run's files", *outFile, a.Out)
		}
		run, switched, err := resolveRunArgs(cmd, fs, a, "ask")
		if err != nil {
			return err
		}
		if *max < 0 {
			return Usagef(cmd, "ask: -n %d: want 0 (the whole batch) or more", *max)
		}
		// A run whose budget is spent is closed by this ask (run.json marked finished) without its banner and
		// summary: the one line below says it, as status does.
		streams := optimize.Streams{Stdout: cmd.Stdout, Stderr: cmd.Stderr}
		var quiet bytes.Buffer
		if st, err := rundir.ReadStatus(a.Out, 0); err == nil && st.Finished() {
			streams = optimize.Streams{Stdout: &quiet, Stderr: &quiet}
		}
		batch, info, err := optimize.Ask(ctx, streams, run, optimize.AskOptions{Max: *max})
		if err != nil {
			cmd.Stderr.Write(quiet.Bytes())
			return runError(cmd, "ask", err)
		}
		if switched != "" { // said only now: a refused ask switches nothing
			fmt.Fprintln(cmd.Stderr, switched)
		}
		if batch == nil {
			fmt.Fprintf(cmd.Stderr, "nfbo ask: the run in %s is finished: all %d calls of its budget are paid; nothing to ask "+
				"(nfbo report %s draws its best molecules)\n", a.Out, info.Budget, a.Out)
		}
		if *outFile == "" {
			if err := writeBatch(cmd.Stdout, batch); err != nil {
				return fmt.Errorf("ask: %w", err)
			}
		} else {
			// Whole or not at all: a crash never leaves half a batch in the user's file.
			var buf bytes.Buffer
			if err := writeBatch(&buf, batch); err != nil {
				return fmt.Errorf("ask: %w", err)
			}
			if err := atomicfile.Write(*outFile, buf.Bytes()); err != nil {
				return fmt.Errorf("ask: the batch is in the run's ledger, but %w", err)
			}
		}
		if len(batch) > 0 {
			fmt.Fprintf(cmd.Stderr, "nfbo ask: %d molecules (%s to %s) await scores; %d calls paid of %d; tell them with: nfbo tell -run %s FILE\n",
				len(batch), batch[0].ID, batch[len(batch)-1].ID, info.Calls, info.Budget, a.Out)
		}
		return nil
	}
	return cmd
}

// resolveRunArgs returns the flags of the ask/tell run in a.Out for the command name (ask or serve): those of
// its args.json when it has one (then only the flags in runFlags may be given), else the flags given, which
// make the run or, for a run made by an nfbo that kept no args.json, must be the ones it was made with. For a run
// made with an objective program or a queue, switched is the line to print once the command has taken the run
// over: its scores come from nfbo tell from then on.
func resolveRunArgs(cmd *Command, fs *flag.FlagSet, a optimize.Args, name string) (run optimize.Args, switched string, err error) {
	run = a
	switch {
	case rundir.Exists(filepath.Join(a.Out, rundir.ArgsFile)):
		saved, err := optimize.ReadArgs(a.Out)
		if err != nil {
			return run, "", fmt.Errorf("%s: %w", name, err)
		}
		// The run's flags given again with the values it was made with (a client repeating its first command)
		// are the run's own; another value is refused.
		if differ := changedRunFlags(fs, a, saved); len(differ) > 0 {
			return run, "", Usagef(cmd, "%s: %s holds a run already, made with other flags (they are in %s): %s; give only -run "+
				"(and -python, -backend, -timeout, -workers, -request-size), or the run's own flags", name, a.Out,
				filepath.Join(a.Out, rundir.ArgsFile), strings.Join(differ, ", "))
		}
		saved.Python, saved.Backend, saved.Timeout, saved.Workers = a.Python, a.Backend, a.Timeout, a.Workers
		saved.RequestSize = a.RequestSize
		run = saved
		run.Resume = true
	case rundir.Exists(filepath.Join(a.Out, rundir.InfoFile)):
		// A run made by an nfbo that kept no args.json: the flags it was made with are needed, as with
		// optimize -resume, and are kept from now on.
		run.Resume = true
	}
	if run.ObjectiveCmd != "" {
		// A run made by optimize with a program switches to ask/tell: its scores come from tell from now on.
		switched = fmt.Sprintf("nfbo %s: %s was made with -objective-cmd %q; from now on its scores come from nfbo tell",
			name, a.Out, run.ObjectiveCmd)
		run.ObjectiveCmd = ""
	}
	if run.Queue != "" {
		// Likewise a run whose workers scored its molecules through a NATS queue.
		switched = fmt.Sprintf("nfbo %s: %s was made with -queue %s; from now on its scores come from nfbo tell",
			name, a.Out, run.Queue)
		run.Queue = ""
	}
	if err := run.Check(); err != nil {
		return run, "", runError(cmd, name, err)
	}
	if _, err := bo.PresetByName(run.Preset); err != nil {
		return run, "", Usagef(cmd, "%s: %v", name, err)
	}
	return run, switched, nil
}

// changedRunFlags returns, for each flag given in fs (other than runFlags) whose value differs from the one the
// run in saved was made with, "-name given (the run's: value)"; a holds the flags given.
func changedRunFlags(fs *flag.FlagSet, a, saved optimize.Args) []string {
	var was optimize.Args
	ref := flag.NewFlagSet("", flag.ContinueOnError)
	addRunFlags(ref, &was)
	was = saved // after addRunFlags, which writes the defaults: ref's values now read the saved flags
	var differ []string
	fs.Visit(func(f *flag.Flag) {
		r := ref.Lookup(f.Name)
		if runFlags[f.Name] || r == nil { // not a setting of the run (serve's -queue, -addr, the NATS flags)
			return
		}
		given, own := f.Value.String(), r.Value.String()
		switch f.Name {
		case "model", "init": // kept absolute in args.json
			if abs, err := filepath.Abs(given); err == nil {
				given = abs
			}
		case "freeze-embed": // a BoolFunc, whose Value has no String to read back
			given, own = fmt.Sprint(a.FrozenEmbeddings()), fmt.Sprint(saved.FrozenEmbeddings())
		}
		if given != own {
			differ = append(differ, fmt.Sprintf("-%s %s (the run's: %s)", f.Name, given, own))
		}
	})
	return differ
}

// writeBatch writes the molecules as CSV: id, then the canonical SMILES (the proposed one when there is none),
// and a name column when a molecule of the batch has a name (an initial molecule named in the user's file).
func writeBatch(w io.Writer, batch []rundir.Asked) error {
	named := slices.ContainsFunc(batch, func(m rundir.Asked) bool { return m.Name != "" })
	cw := csv.NewWriter(w)
	if named {
		cw.Write([]string{"id", "smiles", "name"})
	} else {
		cw.Write([]string{"id", "smiles"})
	}
	for _, m := range batch {
		s := m.Canonical
		if s == "" {
			s = m.SMILES
		}
		if named {
			cw.Write([]string{m.ID, s, m.Name})
		} else {
			cw.Write([]string{m.ID, s})
		}
	}
	cw.Flush()
	return cw.Error()
}
