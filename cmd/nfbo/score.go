package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/internal/textfile"
)

// newScoreCmd returns "nfbo score", which scores SMILES read line by line (objective.ScoreLines), or the molecules
// of a table or an SDF (objective.ScoreLocated).
func newScoreCmd() *Command {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	task := fs.String("task", "", "task name or alias (see \"nfbo tasks\"), or several separated by commas; "+
		"passed through to -objective-cmd")
	workers := fs.Int("workers", 1, "number of worker processes")
	python := fs.String("python", objective.DefaultPython, "Python interpreter that can import RDKit")
	objCmd := fs.String("objective-cmd", "", "external objective program speaking docs/objective-protocol.md, "+
		"e.g. \"python3 oracle.py\" (split at spaces, no shell)")
	timeout := fs.Duration("timeout", 5*time.Minute, "longest one request to a worker may take before it is restarted")
	requestSize := fs.Int("request-size", objective.DefaultChunkSize, "the most molecules in one request to a worker (`N` at least 1)")
	ruleSpec := fs.String("rules", "", "also check each molecule against chemistry `rules` (default, none or a JSON file, as optimize's -rules): "+
		"each line ends with \"ok\" or the rule the molecule breaks")
	cmd := &Command{
		UsageLine: "score [-workers N] [-request-size N] [-objective-cmd CMD] [-rules RULES] -task NAME[,NAME...] [file...]",
		Short:     "score SMILES, one per line, or a table's or an SDF's molecules, for a task",
		Long: `Score reads SMILES one per line from the named files, or from standard input
when there are none, and writes one line per input line to standard output:
the score printed with full float64 precision (%.17g). Only the first
whitespace-separated field of a line is read, so .smi files with names work.
A CSV or tab-separated table whose header names a smiles column, and an SDF,
are read as optimize's -init reads them, and give one line per molecule, in
the file's order (an SDF's records are read by RDKit, which reduces a salt to
its parent molecule and says so on standard error).
With several comma-separated tasks (RDKit only), each output line holds one
score per task, separated by tabs; the worker then parses each molecule once.

A molecule that fails gets 0, the score an invalid molecule gets during
optimisation, so that every output line stays a number, and a message on
standard error naming its file and line number; the exit status is then 1.
A molecule fails when it is invalid, when its score was negative,
non-finite or could not be computed, or when its SMILES holds a byte that is
not printable ASCII (the message names the byte and its offset; such a line
is not sent to the objective, which would score the part before the byte; in
a table or an SDF such a byte refuses the whole file).

By default the RDKit worker computes the task; -objective-cmd runs an external
program that speaks the same protocol instead (docs/objective-protocol.md).

-rules default checks each molecule against the rules optimize proposes
under by default, and says which rule a molecule breaks in a last
tab-separated field ("ok" when it breaks none), e.g. "alert
NIH:alpha_halo_amine" or "unseen environment at C4 (radius 1)"; without
-task only that field is printed. A molecule that breaks a rule is no failed
line.`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if *task == "" && *objCmd == "" && *ruleSpec == "" {
			return Usagef(cmd, "-task is required (or -rules alone)")
		}
		if *workers < 1 {
			return Usagef(cmd, "-workers must be at least 1, not %d", *workers)
		}
		if *requestSize < 1 {
			return Usagef(cmd, "-request-size must be at least 1, not %d", *requestSize)
		}
		if *timeout <= 0 {
			return Usagef(cmd, "-timeout must be positive, not %v (a hung worker would block the run for ever)", *timeout)
		}
		var tasks []string
		if *task != "" || *objCmd != "" {
			tasks = strings.Split(*task, ",")
		}
		if len(tasks) > 1 && *objCmd != "" {
			return Usagef(cmd, "-objective-cmd takes a single -task")
		}
		// The workers' log output and our messages share stderr from
		// several goroutines.
		stderr := &objective.LockedWriter{W: cmd.Stderr}
		popts := objective.PoolOptions{Workers: *workers, Timeout: *timeout, ChunkSize: *requestSize, Stderr: stderr,
			Warnf: func(format string, a ...any) { fmt.Fprintf(stderr, "nfbo score: "+format+"\n", a...) }}
		pool, err := openScorePool(ctx, cmd, tasks, *objCmd, *python, popts)
		if pool != nil {
			defer pool.Close()
		}
		if err != nil {
			return err
		}
		check, closeCheck, err := ruleCheck(ctx, *ruleSpec, *python, pool, *objCmd != "", popts)
		if err != nil {
			return Usagef(cmd, "%v", err)
		}
		defer closeCheck()
		molBlocks, closeBlocks := sdfReader(pool, *objCmd != "", *python, popts)
		defer closeBlocks()
		failed, err := scoreFiles(ctx, cmd, pool.TasksFunc(tasks), tasks, check, molBlocks, args, stderr)
		if err != nil {
			return err
		}
		if failed > 0 {
			fmt.Fprintf(stderr, "nfbo score: %d molecule(s) scored 0 with an error\n", failed)
			return &ExitError{Code: 1}
		}
		return nil
	}
	return cmd
}

// ruleCheck returns the check of "nfbo score -rules SPEC" (nil without -rules), by pool's RDKit worker or, when
// pool is an external program's, by an RDKit worker of its own; the rules are checked before any line is read.
// The function returned closes what it started.
func ruleCheck(ctx context.Context, spec, python string, pool *objective.Pool, external bool, popts objective.PoolOptions) (objective.CheckFunc, func(), error) {
	if spec == "" {
		return nil, func() {}, nil
	}
	r, err := rules.Load(spec)
	if err != nil {
		return nil, func() {}, err
	}
	closer := func() {}
	if external {
		if pool, err = objective.NewRDKit(objective.RDKitOptions{PoolOptions: popts, Python: python}); err != nil {
			return nil, closer, fmt.Errorf("-rules needs RDKit: %w", err)
		}
		closer = func() { pool.Close() }
	}
	js := r.JSON()
	if _, err := pool.Check(ctx, js, nil); err != nil {
		closer()
		return nil, func() {}, err
	}
	return func(ctx context.Context, batch []string) ([]string, error) { return pool.Check(ctx, js, batch) }, closer, nil
}

// sdfReader returns the standardizer of "nfbo score"'s SDF records: pool's when it is RDKit's, else an RDKit
// worker of its own, started at the first SDF. The function returned closes what it started.
func sdfReader(pool *objective.Pool, external bool, python string, popts objective.PoolOptions) (standardizer, func()) {
	rdkit := pool
	if external {
		rdkit = nil
	}
	read := func(ctx context.Context, blocks []string) ([]objective.Standardized, error) {
		if rdkit == nil {
			p, err := objective.NewRDKit(objective.RDKitOptions{PoolOptions: popts, Python: python})
			if err != nil {
				return nil, fmt.Errorf("an SDF is read with RDKit: %w", err)
			}
			rdkit = p
		}
		return rdkit.Standardize(ctx, blocks, true)
	}
	return read, func() {
		if external && rdkit != nil {
			rdkit.Close()
		}
	}
}

// openScorePool starts the objective of "nfbo score": the program objCmd when given, else RDKit's worker,
// which must know every task (an unknown one is a usage error). The pool is returned, to be closed, even with
// an error.
func openScorePool(ctx context.Context, cmd *Command, tasks []string, objCmd, python string, popts objective.PoolOptions) (*objective.Pool, error) {
	if objCmd != "" {
		argv := objective.SplitCommand(objCmd)
		if len(argv) == 0 {
			return nil, Usagef(cmd, "-objective-cmd is empty")
		}
		return objective.NewCommand(argv, popts)
	}
	pool, err := objective.NewRDKit(objective.RDKitOptions{PoolOptions: popts, Python: python})
	if err == nil {
		err = pool.CheckTasks(ctx, tasks)
		var ut *objective.UnknownTaskError
		if errors.As(err, &ut) {
			err = Usagef(cmd, "%v", err)
		}
	}
	return pool, err
}

// scoreFiles scores the molecules of the named files, or of standard input when there are none, writing the
// scores to standard output, a line a molecule, and a message per failed molecule to stderr; it returns the
// number of failed molecules. One SMILES a line is streamed (objective.ScoreLines); a table with a SMILES column
// or an SDF (molfile.Tabular) is read whole (molfile.Parse), its records made SMILES by molBlocks.
func scoreFiles(ctx context.Context, cmd *Command, score objective.TasksFunc, tasks []string, check objective.CheckFunc, molBlocks standardizer, files []string, stderr io.Writer) (int, error) {
	out := bufio.NewWriter(cmd.Stdout)
	defer out.Flush()
	failed := 0
	each := func(name string, in io.Reader) error {
		r := bufio.NewReaderSize(in, 1<<16)
		var n int
		var err error
		if molfile.Tabular(peekLines(r, 4)) {
			n, err = scoreTable(ctx, score, tasks, check, molBlocks, name, r, out, stderr)
		} else {
			n, err = objective.ScoreLines(ctx, score, tasks, check, name, r, out, stderr)
		}
		failed += n
		return err
	}
	if len(files) == 0 {
		if err := each("stdin", cmd.Stdin); err != nil {
			return failed, err
		}
	}
	for _, name := range files {
		f, err := textfile.Open(name)
		if err != nil {
			return failed, err
		}
		err = each(name, f)
		f.Close()
		if err != nil {
			return failed, err
		}
	}
	if err := out.Flush(); err != nil {
		return failed, fmt.Errorf("writing scores: %w", err)
	}
	return failed, nil
}

// peekLines returns the first n lines of r (fewer at the end of its data or of its buffer) without reading them.
func peekLines(r *bufio.Reader, n int) []byte {
	for size := 512; ; size *= 2 {
		b, err := r.Peek(min(size, r.Size()))
		if bytes.Count(b, []byte{'\n'}) >= n || err != nil || size >= r.Size() {
			return b
		}
	}
}

// A standardizer turns SDF records (molfile blocks) into SMILES (objective.Pool.Standardize).
type standardizer func(ctx context.Context, blocks []string) ([]objective.Standardized, error)

// scoreTable scores the molecules of a table or an SDF read whole from r, a line of scores each, in the file's
// order; an SDF record RDKit cannot read scores 0 with its reason, one it reduces (a salt to its parent) is
// scored as reduced, said on stderr.
func scoreTable(ctx context.Context, score objective.TasksFunc, tasks []string, check objective.CheckFunc, molBlocks standardizer, name string, r io.Reader, out *bufio.Writer, stderr io.Writer) (int, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", name, err)
	}
	rows, _, err := molfile.Parse(name, data, "", math.MaxInt)
	if err != nil {
		return 0, err
	}
	mols := make([]objective.Located, len(rows))
	var blocks []string
	for i, row := range rows {
		mols[i] = objective.Located{Where: row.Where(name), SMILES: row.SMILES}
		if row.MolBlock != "" {
			blocks = append(blocks, row.MolBlock)
		}
	}
	if len(blocks) > 0 {
		std, err := molBlocks(ctx, blocks)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		k := 0
		for i, row := range rows {
			if row.MolBlock == "" {
				continue
			}
			m, s := &mols[i], std[k]
			k++
			m.SMILES = s.SMILES
			switch {
			case s.SMILES == "":
				m.Bad = errors.New(objective.CleanMessage(s.Reason))
			case s.Note != "":
				fmt.Fprintf(stderr, "nfbo score: %s: %s: %s\n", m.Where, objective.CleanMessage(s.Note), s.SMILES)
			}
		}
	}
	return objective.ScoreLocated(ctx, score, tasks, check, mols, out, stderr)
}
