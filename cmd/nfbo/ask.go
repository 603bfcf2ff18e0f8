package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// errAwaiting is runOptimize's answer in an ask/tell run that stopped for scores not yet told: the molecules
// it asked for are in askSession.batch and the ledger.
var errAwaiting = errors.New("awaiting scores")

// askSession is the ask/tell side of a run (optimizeArgs.ask): the objective that scores nothing, and the batch
// the run stopped on.
type askSession struct {
	deferred objective.Deferred
	batch    []rundir.Asked // the molecules awaiting scores, when the run stopped for them
	info     rundir.Info    // run.json as the run stopped
	locked   bool           // the caller holds the run directory's lock (serve)
}

// stop records the molecules the run asked for in the ledger of dir (whose lock the caller holds) and run.json,
// and returns errAwaiting.
func (s *askSession) stop(dir string, info rundir.Info) error {
	asked := s.deferred.Asked()
	smiles, canon := make([]string, len(asked)), make([]string, len(asked))
	for i, m := range asked {
		smiles[i], canon[i] = m.SMILES, m.Canonical
	}
	ledger, err := rundir.ReadLedger(dir)
	if err != nil {
		return err
	}
	if s.batch, err = ledger.Append(smiles, canon, time.Now()); err != nil {
		return err
	}
	s.info = info
	if err := rundir.WriteInfo(dir, info); err != nil {
		return err
	}
	return errAwaiting
}

// openDeferred returns the objective of an ask/tell run and the canonicaliser of its budget: RDKit's when it
// is there, else the codec's keys.
func openDeferred(ctx context.Context, a optimizeArgs, warnf func(string, ...any)) (objective.Objective, objective.Canonicalizer, func(), error) {
	ropts := objective.RDKitOptions{PoolOptions: objective.PoolOptions{Workers: 1, Timeout: a.Timeout, Warnf: warnf}, Python: a.Python}
	rd, err := objective.NewRDKit(ropts)
	if err == nil {
		err = rd.Start(ctx)
	}
	switch {
	case err == nil:
		a.ask.deferred.Canon = rd
		return &a.ask.deferred, rd, func() { rd.Close() }, nil
	case errors.Is(err, objective.ErrRDKitMissing):
		if rd != nil {
			rd.Close()
		}
		warnf("RDKit is missing: molecules are identified and shown by their SELFIES-canonical SMILES")
		return &a.ask.deferred, keyCanonicalizer{}, func() {}, nil
	default:
		if rd != nil {
			rd.Close()
		}
		return nil, nil, nil, err
	}
}

// writeArgs writes the run's flags to args.json, once: ask, tell and serve read them back from the directory.
func writeArgs(a optimizeArgs) error {
	path := filepath.Join(a.Out, rundir.ArgsFile)
	if rundir.Exists(path) {
		return nil
	}
	a.Out, a.Resume, a.Restart = "", false, false
	// Absolute, so that a later ask or serve started elsewhere finds them.
	for _, p := range []*string{&a.Model, &a.Init} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(path, append(b, '\n'))
}

// readArgs reads the flags a run was made with from dir's args.json.
func readArgs(dir string) (optimizeArgs, error) {
	var a optimizeArgs
	path := filepath.Join(dir, rundir.ArgsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return a, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("%s: %w", path, err)
	}
	a.Out = dir
	return a, nil
}

// runFlags are the flags of ask that may change from one ask to the next: how, not what, is computed.
var runFlags = map[string]bool{"run": true, "o": true, "python": true, "backend": true, "timeout": true, "workers": true,
	"addr": true, "token-file": true}

// newAskCmd returns "nfbo ask", which proposes the next batch of an ask/tell run.
func newAskCmd() *Command {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	var a optimizeArgs
	a.addFlags(fs)
	fs.StringVar(&a.Out, "run", "", "run `directory` (required); the first ask creates it")
	outFile := fs.String("o", "", "write the batch to `file` (CSV) instead of standard output")
	cmd := &Command{
		UsageLine: "ask -run DIR [-o FILE] [-task NAME -init FILE -model DIR [optimize's flags]]",
		Short:     "propose the next molecules of an ask/tell run, for scoring elsewhere",
		Long: `Ask proposes the next batch of molecules of an ask/tell run and writes them
as CSV, one "id,smiles" row each (RDKit canonical SMILES), for scoring
elsewhere: a lab, a queue, a spreadsheet. "nfbo tell" gives the scores back.

The first ask creates the run in -run DIR and takes optimize's flags (-task,
-init, -model, -budget, -preset, -seed, ...; see "nfbo help optimize"); they
are kept in DIR/args.json and later asks need only -run. When -init has no
scores for -task, the first batch is the initial molecules themselves.

Asking again before the batch is told gives the same molecules with the same
ids (those already told are left out), so a client that lost an answer can
ask again. Once every molecule of the batch is told, the next ask fine-tunes
the flow, refits the surrogate and proposes the next batch; when the budget
is spent it writes only the header and says so. A run can switch between
ask/tell and "nfbo optimize -resume" with the same flags.

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
		run, err := resolveRunArgs(cmd, fs, a, "ask")
		if err != nil {
			return err
		}
		batch, info, err := askNext(ctx, cmd, run, false)
		if err != nil {
			return err
		}
		if batch == nil {
			fmt.Fprintf(cmd.Stderr, "nfbo ask: the run in %s is finished: its budget is spent; nothing to ask\n", a.Out)
		}
		w := cmd.Stdout
		if *outFile != "" {
			f, err := os.Create(*outFile)
			if err != nil {
				return fmt.Errorf("ask: %w", err)
			}
			defer f.Close()
			w = f
		}
		if err := writeBatch(w, batch); err != nil {
			return fmt.Errorf("ask: %w", err)
		}
		if *outFile != "" {
			if err := w.(*os.File).Close(); err != nil {
				return fmt.Errorf("ask: %w", err)
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
// make the run or, for a run made by an nfbo that kept no args.json, must be the ones it was made with.
func resolveRunArgs(cmd *Command, fs *flag.FlagSet, a optimizeArgs, name string) (optimizeArgs, error) {
	run := a
	switch {
	case rundir.Exists(filepath.Join(a.Out, rundir.ArgsFile)):
		var fixed []string
		fs.Visit(func(f *flag.Flag) {
			if !runFlags[f.Name] {
				fixed = append(fixed, "-"+f.Name)
			}
		})
		if len(fixed) > 0 {
			return run, Usagef(cmd, "%s: %s holds a run already: its flags are in %s; give only -run (and -python, -backend, -timeout, -workers), not %s",
				name, a.Out, filepath.Join(a.Out, rundir.ArgsFile), strings.Join(fixed, " "))
		}
		saved, err := readArgs(a.Out)
		if err != nil {
			return run, fmt.Errorf("%s: %w", name, err)
		}
		saved.Python, saved.Backend, saved.Timeout, saved.Workers = a.Python, a.Backend, a.Timeout, a.Workers
		run = saved
		run.Resume = true
	case rundir.Exists(filepath.Join(a.Out, rundir.InfoFile)):
		// A run made by an nfbo that kept no args.json: the flags it was made with are needed, as with
		// optimize -resume, and are kept from now on.
		run.Resume = true
	}
	if run.ObjectiveCmd != "" {
		// A run made by optimize with a program switches to ask/tell: its scores come from tell from now on.
		fmt.Fprintf(cmd.Stderr, "nfbo %s: %s was made with -objective-cmd %q; from now on its scores come from nfbo tell\n",
			name, a.Out, run.ObjectiveCmd)
		run.ObjectiveCmd = ""
	}
	if err := run.check(cmd, name); err != nil {
		return run, err
	}
	if _, err := bo.PresetByName(run.Preset); err != nil {
		return run, Usagef(cmd, "%s: %v", name, err)
	}
	return run, nil
}

// askNext runs the ask/tell run until it needs scores not yet told, and returns the molecules awaiting them
// (nil when the run is finished) and run.json as it stopped. locked says that the caller holds the run
// directory's lock (serve). The run's progress goes to cmd's standard error.
func askNext(ctx context.Context, cmd *Command, run optimizeArgs, locked bool) ([]rundir.Asked, rundir.Info, error) {
	preset, err := bo.PresetByName(run.Preset)
	if err != nil {
		return nil, rundir.Info{}, err
	}
	run.ask = &askSession{locked: locked}
	inner := *cmd
	inner.Stdout = cmd.Stderr
	err = runOptimize(ctx, &inner, run, preset)
	switch {
	case errors.Is(err, errAwaiting):
		return run.ask.batch, run.ask.info, nil
	case err != nil:
		return nil, rundir.Info{}, err
	}
	info, err := rundir.ReadInfo(run.Out)
	return nil, info, err
}

// writeBatch writes the molecules as CSV: id, then the canonical SMILES (the proposed one when there is none).
func writeBatch(w io.Writer, batch []rundir.Asked) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "smiles"})
	for _, m := range batch {
		s := m.Canonical
		if s == "" {
			s = m.SMILES
		}
		cw.Write([]string{m.ID, s})
	}
	cw.Flush()
	return cw.Error()
}
