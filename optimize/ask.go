package optimize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/rundir"
)

// errAwaiting is run's answer in an ask/tell run that stopped for scores not yet told: the molecules
// it asked for are in askSession.batch and the ledger.
var errAwaiting = errors.New("awaiting scores")

// askSession is the ask/tell side of a run (Args.ask): the objective that scores nothing, and the batch
// the run stopped on.
type askSession struct {
	deferred objective.Deferred
	batch    []rundir.Asked    // the molecules awaiting scores, when the run stopped for them
	info     rundir.Info       // run.json as the run stopped
	locked   bool              // the caller holds the run directory's lock (serve)
	max      int               // hand out at most this many molecules (AskOptions.Max); 0: the whole batch
	names    map[string]string // the initial molecules' names, by codec key
}

// stop records the molecules the run asked for in the ledger of dir (whose lock the caller holds) and run.json,
// and returns errAwaiting.
func (s *askSession) stop(dir string, info rundir.Info) error {
	ledger, err := rundir.ReadLedger(dir)
	if err != nil {
		return err
	}
	asked := s.deferred.Asked()
	if s.max > 0 && len(asked) > s.max {
		// Part of the batch: the molecules handed out before come first, so that asking again gives them again.
		var handed, fresh []objective.AskedMolecule
		for _, m := range asked {
			if _, ok := ledger.Lookup(m.SMILES); ok {
				handed = append(handed, m)
			} else {
				fresh = append(fresh, m)
			}
		}
		asked = append(handed, fresh...)[:s.max]
	}
	mols := make([]rundir.Asked, len(asked))
	for i, m := range asked {
		mols[i] = rundir.Asked{SMILES: m.SMILES, Canonical: m.Canonical, Name: s.names[m.SMILES], From: m.From}
	}
	if s.batch, err = ledger.AppendAsked(mols, time.Now()); err != nil {
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
func openDeferred(ctx context.Context, a Args, warnf func(string, ...any)) (objective.Objective, objective.Canonicalizer, func(), error) {
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
// WriteArgs writes the run's settings to a.Out/args.json, once: ask, tell and serve read them back.
func WriteArgs(a Args) error {
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
	return atomicfile.Write(path, append(b, '\n'))
}

// ReadArgs reads the settings a run was made with from dir's args.json.
func ReadArgs(dir string) (Args, error) {
	var a Args
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
	if a.RequestSize == 0 {
		// Written before -request-size was kept: the size it ran with.
		a.RequestSize = objective.DefaultChunkSize
	}
	a.Out = dir
	return a, nil
}

// AskOptions say how Ask hands out a batch.
type AskOptions struct {
	// Locked says that the caller holds the run directory's lock (serve).
	Locked bool
	// Max, if positive, hands out at most Max molecules of the batch (those handed out before first); the rest
	// come with later asks, and the next batch once all of this one is told.
	Max int
}

// command returns the command that runs a, for the lines it writes: nfbo ask (and serve's asks) or nfbo optimize.
func (a Args) command() string {
	if a.ask != nil {
		return "nfbo ask"
	}
	return "nfbo optimize"
}

// Ask runs the ask/tell run until it needs scores not yet told, and returns the molecules awaiting them
// (nil when the run is finished) and run.json as it stopped. The run's progress goes to s.Stderr.
func Ask(ctx context.Context, s Streams, a Args, opts AskOptions) ([]rundir.Asked, rundir.Info, error) {
	if err := a.Check(); err != nil {
		return nil, rundir.Info{}, err
	}
	preset, err := bo.PresetByName(a.Preset)
	if err != nil {
		return nil, rundir.Info{}, &ArgError{err}
	}
	a.ask = &askSession{locked: opts.Locked, max: opts.Max}
	err = run(ctx, Streams{Stdout: s.Stderr, Stderr: s.Stderr}, a, preset)
	switch {
	case errors.Is(err, errAwaiting):
		return a.ask.batch, a.ask.info, nil
	case err != nil:
		return nil, rundir.Info{}, err
	}
	info, err := rundir.ReadInfo(a.Out)
	return nil, info, err
}
