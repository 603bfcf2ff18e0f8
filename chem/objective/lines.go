package objective

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nfbo/nfbo/chem/smiles"
)

// linesBatch is how many lines ScoreLines reads before scoring them, so that output streams while long inputs
// are read.
const linesBatch = 2048

// TasksFunc scores a batch of SMILES for each of several tasks: one []Result per task, in the tasks' order.
type TasksFunc func(ctx context.Context, batch []string) ([][]Result, error)

// TasksFunc returns the TasksFunc that scores with pl: a single task through ScoreTask (which an external
// program answers too), several through ScoreTasks, which parses each molecule once.
func (pl *Pool) TasksFunc(tasks []string) TasksFunc {
	return func(ctx context.Context, batch []string) ([][]Result, error) {
		if len(tasks) == 1 {
			res, err := pl.ScoreTask(ctx, tasks[0], batch)
			return [][]Result{res}, err
		}
		return pl.ScoreTasks(ctx, tasks, batch)
	}
}

// ScoreLines scores the SMILES of in, the first whitespace-separated field of each line (smiles.FirstField),
// in batches, and writes one line per input line to out: the scores of the tasks, tab-separated, with full
// float64 precision (%.17g). A line that fails (an invalid molecule, a score the objective could not compute,
// a SMILES with a byte that is not printable ASCII) gets 0 and a message "NAME:LINE: reason" on errw. A SMILES
// that is not printable ASCII is not sent to the objective: RDKit would stop reading at the first bad byte and
// score the prefix, another molecule. It returns the number of failed lines.
//
// check, when not nil, is asked about the same molecules (the chemistry rules, Pool.Check): each line then ends
// with one more field, "ok" or the rule the molecule breaks, which is no failure; tasks may then be empty.
func ScoreLines(ctx context.Context, score TasksFunc, tasks []string, check CheckFunc, name string, in io.Reader, out *bufio.Writer, errw io.Writer) (int, error) {
	r := bufio.NewReaderSize(in, 1<<16)
	b := batch{score: score, tasks: tasks, check: check, out: out, errw: errw}
	lineNo := 0
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			lineNo++
			s, _ := smiles.FirstField(line)
			b.add(name+":"+strconv.Itoa(lineNo), s, smiles.CheckText(s))
			if len(b.smiles) == linesBatch {
				if err := b.flush(ctx); err != nil {
					return b.failed, err
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return b.failed, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return b.failed, b.flush(ctx)
}

// Located is a molecule to score and where it was read: "FILE:LINE", a name after it, what a message about it
// begins with. Bad, when not nil, says why it cannot be scored (an SDF record RDKit cannot read).
type Located struct {
	Where  string
	SMILES string
	Bad    error
}

// ScoreLocated scores mols as ScoreLines scores lines: one output line per molecule, in order, 0 and a message
// "WHERE: reason" on errw for one that fails. It returns the number of failed molecules.
func ScoreLocated(ctx context.Context, score TasksFunc, tasks []string, check CheckFunc, mols []Located, out *bufio.Writer, errw io.Writer) (int, error) {
	b := batch{score: score, tasks: tasks, check: check, out: out, errw: errw}
	for _, m := range mols {
		bad := m.Bad
		if bad == nil {
			bad = smiles.CheckText(m.SMILES)
		}
		b.add(m.Where, m.SMILES, bad)
		if len(b.smiles) == linesBatch {
			if err := b.flush(ctx); err != nil {
				return b.failed, err
			}
		}
	}
	return b.failed, b.flush(ctx)
}

// CheckFunc says for each molecule of batch "" when it keeps the chemistry rules, else the rule it breaks.
type CheckFunc func(ctx context.Context, batch []string) ([]string, error)

// batch is the state of ScoreLines and ScoreLocated: the molecules read and not yet scored.
type batch struct {
	score  TasksFunc
	tasks  []string
	check  CheckFunc
	out    *bufio.Writer
	errw   io.Writer
	smiles []string
	where  []string // per molecule of smiles: where it was read
	bad    []error  // per molecule of smiles: why it is not scored, or nil
	failed int
}

// add appends one molecule to the batch.
func (b *batch) add(where, smiles string, bad error) {
	b.where = append(b.where, where)
	b.smiles = append(b.smiles, smiles)
	b.bad = append(b.bad, bad)
}

// flush scores the batch and writes its lines.
func (b *batch) flush(ctx context.Context) error {
	if len(b.smiles) == 0 {
		return nil
	}
	span := b.where[0]
	if n := len(b.where); n > 1 {
		span += " to " + b.where[n-1]
	}
	var good []string
	for i, s := range b.smiles {
		if b.bad[i] == nil {
			good = append(good, s)
		}
	}
	var res [][]Result
	var why []string
	if len(good) > 0 {
		var err error
		if len(b.tasks) > 0 {
			if res, err = b.score(ctx, good); err != nil {
				return fmt.Errorf("%s: %w", span, err)
			}
		}
		if b.check != nil {
			if why, err = b.check(ctx, good); err != nil {
				return fmt.Errorf("%s: %w", span, err)
			}
		}
	}
	k := 0 // index in good
	for i := range b.smiles {
		var msgs []string
		for j := range b.tasks {
			if j > 0 {
				b.out.WriteByte('\t')
			}
			if b.bad[i] != nil {
				b.out.WriteByte('0')
				continue
			}
			if reason := res[j][k].Reason; reason != "" {
				reason = CleanMessage(reason)
				if len(b.tasks) > 1 {
					reason = b.tasks[j] + ": " + reason
				}
				msgs = append(msgs, reason)
			}
			b.out.WriteString(strconv.FormatFloat(res[j][k].Score, 'g', 17, 64))
		}
		if b.check != nil {
			if len(b.tasks) > 0 {
				b.out.WriteByte('\t')
			}
			switch {
			case b.bad[i] != nil:
				b.out.WriteString("not checked")
			case why[k] != "":
				b.out.WriteString(CleanMessage(why[k]))
			default:
				b.out.WriteString("ok")
			}
		}
		b.out.WriteByte('\n')
		if b.bad[i] != nil {
			msgs = append(msgs, b.bad[i].Error())
		} else {
			k++
		}
		if len(msgs) > 0 {
			b.failed++
			b.out.Flush() // keep stdout and stderr in step for a reader of both
			fmt.Fprintf(b.errw, "%s: %s\n", b.where[i], strings.Join(msgs, "; "))
		}
	}
	b.smiles, b.where, b.bad = b.smiles[:0], b.where[:0], b.bad[:0]
	return nil
}

// CleanMessage returns a message from outside (an objective's reason, say) as it is when it is printable and
// short, else quoted and clipped, so that no control byte reaches the terminal and no message runs to megabytes.
func CleanMessage(s string) string {
	if len(s) <= 300 && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return smiles.Quote(s)
}
