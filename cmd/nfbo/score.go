package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/smiles"
)

// scoreBatch is how many lines "nfbo score" reads before scoring them, so
// that output streams while long inputs are read.
const scoreBatch = 2048

// newScoreCmd returns "nfbo score", which scores SMILES read line by line.
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
	cmd := &Command{
		UsageLine: "score [-workers N] [-request-size N] [-objective-cmd CMD] -task NAME[,NAME...] [file...]",
		Short:     "score SMILES, one per line, for a task",
		Long: `Score reads SMILES one per line from the named files, or from standard input
when there are none, and writes one line per input line to standard output:
the score printed with full float64 precision (%.17g). Only the first
whitespace-separated field of a line is read, so .smi files with names work.
With several comma-separated tasks (RDKit only), each output line holds one
score per task, separated by tabs; the worker then parses each molecule once.

A line that fails gets 0, the score an invalid molecule gets during
optimisation, so that every output line stays a number, and a message on
standard error naming its file and line number; the exit status is then 1.
A line fails when its molecule is invalid, when its score was negative,
non-finite or could not be computed, or when its SMILES holds a byte that is
not printable ASCII (the message names the byte and its offset; such a line
is not sent to the objective, which would score the part before the byte).

By default the RDKit worker computes the task; -objective-cmd runs an external
program that speaks the same protocol instead (docs/objective-protocol.md).`,
		Flag: fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if *task == "" && *objCmd == "" {
			return Usagef(cmd, "-task is required")
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
		tasks := strings.Split(*task, ",")
		if len(tasks) > 1 && *objCmd != "" {
			return Usagef(cmd, "-objective-cmd takes a single -task")
		}
		// The workers' log output and our messages share stderr from
		// several goroutines.
		stderr := &objective.LockedWriter{W: cmd.Stderr}
		popts := objective.PoolOptions{Workers: *workers, Timeout: *timeout, ChunkSize: *requestSize, Stderr: stderr,
			Warnf: func(format string, a ...any) { fmt.Fprintf(stderr, "nfbo score: "+format+"\n", a...) }}
		var (
			pool *objective.Pool
			err  error
		)
		if *objCmd != "" {
			argv := objective.SplitCommand(*objCmd)
			if len(argv) == 0 {
				return Usagef(cmd, "-objective-cmd is empty")
			}
			pool, err = objective.NewCommand(argv, popts)
		} else {
			pool, err = objective.NewRDKit(objective.RDKitOptions{PoolOptions: popts, Python: *python})
			if err == nil {
				err = pool.CheckTasks(ctx, tasks)
				var ut *objective.UnknownTaskError
				if errors.As(err, &ut) {
					err = Usagef(cmd, "%v", err)
				}
			}
		}
		if pool != nil {
			defer pool.Close()
		}
		if err != nil {
			return err
		}
		score := func(ctx context.Context, batch []string) ([][]objective.Result, error) {
			if len(tasks) == 1 {
				res, err := pool.ScoreTask(ctx, tasks[0], batch)
				return [][]objective.Result{res}, err
			}
			return pool.ScoreTasks(ctx, tasks, batch)
		}

		out := bufio.NewWriter(cmd.Stdout)
		defer out.Flush()
		failed := 0
		run := func(name string, r io.Reader) error {
			n, err := scoreStream(ctx, score, tasks, name, r, out, stderr)
			failed += n
			return err
		}
		if len(args) == 0 {
			if err := run("stdin", cmd.Stdin); err != nil {
				return err
			}
		}
		for _, name := range args {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			err = run(name, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("writing scores: %w", err)
		}
		if failed > 0 {
			fmt.Fprintf(stderr, "nfbo score: %d line(s) scored 0 with an error\n", failed)
			return &ExitError{Code: 1}
		}
		return nil
	}
	return cmd
}

// scoreFunc scores a batch for every task: one []Result per task.
type scoreFunc func(ctx context.Context, batch []string) ([][]objective.Result, error)

// scoreStream scores the lines of in (called name in messages) in batches,
// writing one line of scores per input line to out and one message per
// failed line to errw. A line whose SMILES is not printable ASCII is not sent
// to the objective: RDKit would stop reading at the first bad byte and score
// the prefix, another molecule. It returns the number of failed lines.
func scoreStream(ctx context.Context, score scoreFunc, tasks []string, name string, in io.Reader,
	out *bufio.Writer, errw io.Writer) (int, error) {
	r := bufio.NewReaderSize(in, 1<<16)
	failed, lineNo := 0, 0
	var batch []string
	var bad []error // per line of batch: why it is not scored, or nil
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		first := lineNo - len(batch) + 1
		var good []string
		for i, s := range batch {
			if bad[i] == nil {
				good = append(good, s)
			}
		}
		var res [][]objective.Result
		if len(good) > 0 {
			var err error
			if res, err = score(ctx, good); err != nil {
				return fmt.Errorf("%s: lines %d-%d: %w", name, first, lineNo, err)
			}
		}
		k := 0 // index in good
		for i := range batch {
			var msgs []string
			for j := range tasks {
				if j > 0 {
					out.WriteByte('\t')
				}
				if bad[i] != nil {
					out.WriteByte('0')
					continue
				}
				if reason := res[j][k].Reason; reason != "" {
					reason = cleanMessage(reason)
					if len(tasks) > 1 {
						reason = tasks[j] + ": " + reason
					}
					msgs = append(msgs, reason)
				}
				out.WriteString(strconv.FormatFloat(res[j][k].Score, 'g', 17, 64))
			}
			out.WriteByte('\n')
			if bad[i] != nil {
				msgs = append(msgs, bad[i].Error())
			} else {
				k++
			}
			if len(msgs) > 0 {
				failed++
				out.Flush() // keep stdout and stderr in step for a reader of both
				fmt.Fprintf(errw, "%s:%d: %s\n", name, first+i, strings.Join(msgs, "; "))
			}
		}
		batch, bad = batch[:0], bad[:0]
		return nil
	}
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			lineNo++
			s, _ := smiles.FirstField(line)
			batch = append(batch, s)
			bad = append(bad, smiles.CheckText(s))
			if len(batch) == scoreBatch {
				if err := flush(); err != nil {
					return failed, err
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return failed, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return failed, flush()
}

// isSpace reports whether c is ASCII white space. Fields are split at ASCII
// white space only: splitting at Unicode spaces as well (strings.Fields does)
// would turn "C\u00a0C" into "C", another molecule.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// cleanMessage returns a message from outside (an objective's reason, say)
// as it is when it is printable and short, else quoted and clipped, so that
// no control byte reaches the terminal and no message runs to megabytes.
func cleanMessage(s string) string {
	if len(s) <= 300 && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return smiles.Quote(s)
}
