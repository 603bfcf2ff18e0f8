package objective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/rundir"
)

// Status says how a molecule in a batch was answered by a Budget.
type Status int

const (
	// NotScored: the molecule was not evaluated, because the budget ran
	// out or the objective failed first. It has no score.
	NotScored Status = iota
	// Paid: the objective evaluated the molecule now, for one call of the
	// budget, and the evaluation is in the log.
	Paid
	// Cached: the molecule (by canonical SMILES) was evaluated before, in
	// this run, an earlier one or earlier in the same batch; the answer
	// is free.
	Cached
	// Invalid: RDKit cannot parse the SMILES, so it has no canonical form.
	// It scores 0 and costs nothing (PMO's rule).
	Invalid
	// Failed: the objective gave no answer for this molecule alone (see
	// Result.Failed), now or earlier in this Budget's life. It scores 0
	// with the reason, costs nothing and is not logged, so a Budget opened
	// again on the same log (a resumed run) asks the objective for it
	// once more.
	Failed
)

// String returns the status in words, e.g. "cached".
func (s Status) String() string {
	switch s {
	case NotScored:
		return "not scored"
	case Paid:
		return "paid"
	case Cached:
		return "cached"
	case Invalid:
		return "invalid"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Evaluation is a Budget's answer for one molecule.
type Evaluation struct {
	// SMILES is the input.
	SMILES string
	// Canonical is its RDKit canonical SMILES; empty when Invalid.
	Canonical string
	// Score is the objective value; 0 when Reason is set or not scored.
	Score float64
	// Reason says why Score is 0 (invalid SMILES, objective's reason).
	Reason string
	// Status says whether the molecule was paid for, cached, invalid or
	// not scored.
	Status Status
	// Call is the 1-based index of the paid call that produced the score
	// (for Paid and Cached); 0 otherwise.
	Call int
}

// A StreamObjective is an Objective that hands over its results as they
// arrive, rather than at the end of the batch. Budget uses it, when the
// objective has it, to put every answer on disk before the objective is
// asked for more: a batch that the objective splits into several requests
// (a worker pool) then loses at most the requests in flight to a crash,
// not the answers of the requests that came back before it.
type StreamObjective interface {
	Objective
	// ScoreStream scores smiles as Score does, and calls deliver with the
	// results of smiles[lo:hi] as soon as they are settled (every entry
	// Done; Failed ones included). The calls cover each molecule at most
	// once, are serialised, and no further request is sent on behalf of
	// the answered ones before deliver returns. When deliver returns an
	// error, ScoreStream sends nothing more and returns an error wrapping
	// it; the molecules never delivered were not scored.
	ScoreStream(ctx context.Context, smiles []string, deliver func(lo, hi int, res []Result) error) error
}

// ErrBudgetExhausted is returned (wrapped) by Evaluate when the budget ran
// out before every new molecule of the batch was evaluated; those
// molecules have Status NotScored.
var ErrBudgetExhausted = errors.New("objective: evaluation budget exhausted")

// ErrErrorStreak is returned (wrapped) by Budget.Evaluate when the objective
// has answered BudgetOptions.MaxErrorStreak molecules in a row with an error
// instead of a score: a program that answers but cannot score is broken, and
// going on would spend the budget on zeros.
var ErrErrorStreak = errors.New("objective: the objective answered only errors")

// DefaultMaxErrorStreak is BudgetOptions.MaxErrorStreak's default: one full
// request of the worker protocol.
const DefaultMaxErrorStreak = 64

// BudgetOptions configures OpenBudget. The zero value means no limit and
// no task check.
type BudgetOptions struct {
	// Limit is the number of paid calls allowed, counting those already in
	// the log. If 0, there is no limit.
	Limit int
	// Task names the objective. It is written in every record, and
	// OpenBudget refuses a log whose records name another task.
	Task string
	// Warnf is told about a torn last line dropped from the log. If nil,
	// warnings go to os.Stderr.
	Warnf func(format string, args ...any)
	// MaxErrorStreak is how many paid answers in a row may be errors (no
	// score) before Evaluate stops with ErrErrorStreak. Those answers stay
	// paid and logged: the objective did answer. The streak starts at 0
	// when the log is opened. If 0, the default is DefaultMaxErrorStreak;
	// negative means no limit.
	MaxErrorStreak int
}

// Budget is an Objective's evaluation budget with PMO's accounting: a
// molecule is identified by its canonical SMILES; a molecule seen before
// is answered from the cache for free; every paid evaluation is appended
// to a JSON-lines log (see Record) and synced to disk before its score is
// returned, so that no evaluation is ever lost or paid for twice.
// Reopening the log with OpenBudget restores the cache and the call count
// exactly. A Budget is safe for concurrent use; evaluations are serialised.
//
// Only answers are paid for and logged. A molecule the objective gave no
// answer for (Result.Failed; Status Failed) scores 0 for free and stays
// out of the log, and so do the molecules left unscored when the objective
// fails as a whole (a *ProgramError; Status NotScored): the log never
// holds a zero that stands for "no answer", so a resumed run asks for
// those molecules again.
type Budget struct {
	obj   Objective
	canon Canonicalizer
	opts  BudgetOptions
	path  string

	mu     sync.Mutex
	f      *os.File
	recs   []rundir.Record
	cache  map[string]int    // canonical SMILES -> index in recs
	failed map[string]string // canonical SMILES -> reason, for molecules not answered in this Budget's life
	err    error             // sticky: set when the log could not be written
	errRun int               // paid answers in a row that were errors
}

// OpenBudget opens the evaluation log at path, creating it if needed, and
// replays it: every complete record becomes a cache entry and a paid call.
// A torn last line (a record cut short by a crash, without its newline) is
// truncated away with a warning; any other damage is a *LogError. obj
// scores new molecules and canon canonicalises them (an RDKit pool is
// both).
func OpenBudget(path string, obj Objective, canon Canonicalizer, opts BudgetOptions) (*Budget, error) {
	if obj == nil || canon == nil {
		return nil, errors.New("objective: OpenBudget needs an objective and a canonicalizer")
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("objective: opening evaluation log: %w", err)
	}
	b := &Budget{obj: obj, canon: canon, opts: opts, path: path, f: f, cache: make(map[string]int), failed: make(map[string]string)}
	if err := b.replay(created); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func (b *Budget) warnf(format string, args ...any) {
	if b.opts.Warnf != nil {
		b.opts.Warnf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (b *Budget) replay(created bool) error {
	recs, end, torn, unchecked, err := rundir.ReadLogChecked(b.path)
	if err != nil {
		return err
	}
	if unchecked > 0 {
		b.warnf("objective: evaluation log %s: its first %d records were written by an earlier nfbo without a check (crc), "+
			"so damage to them cannot be detected; the records written from now on carry one", b.path, unchecked)
	}
	if torn > 0 {
		b.warnf("objective: evaluation log %s: dropping a torn last line (%d bytes after record %d, cut short by a crash)",
			b.path, torn, len(recs))
		if err := b.f.Truncate(end); err != nil {
			return fmt.Errorf("objective: truncating the torn line of %s: %w", b.path, err)
		}
		if err := b.f.Sync(); err != nil {
			return fmt.Errorf("objective: syncing %s: %w", b.path, err)
		}
	}
	for i, r := range recs {
		if b.opts.Task != "" && r.Task != "" && r.Task != b.opts.Task {
			return &rundir.LogError{Path: b.path, Line: i + 1,
				Err: fmt.Errorf("record is for task %q, not %q", r.Task, b.opts.Task)}
		}
		if _, dup := b.cache[r.Canonical]; dup {
			return &rundir.LogError{Path: b.path, Line: i + 1, Err: fmt.Errorf("molecule %s paid for twice", r.Canonical)}
		}
		b.cache[r.Canonical] = i
	}
	if n := countNoAnswer(recs); n > 0 {
		kept, size, backup, err := b.dropNoAnswer(recs)
		if err != nil {
			return err
		}
		b.warnf("objective: evaluation log %s: dropped %d of its %d records, written by an earlier nfbo for molecules "+
			"its objective never answered (%q): they are not paid for, and are scored again when the run asks for them; "+
			"the log as it was is kept in %s", b.path, n, len(recs), rundir.NoAnswerPrefix, backup)
		recs, end = kept, size
		clear(b.cache)
		for i, r := range recs {
			b.cache[r.Canonical] = i
		}
	}
	b.recs = recs
	if _, err := b.f.Seek(end, 0); err != nil {
		return fmt.Errorf("objective: seeking in %s: %w", b.path, err)
	}
	if created {
		// The new file's directory entry must survive a crash too.
		_ = atomicfile.SyncDir(filepath.Dir(b.path)) // best effort: some file systems cannot sync a directory
	}
	return nil
}

// unwritten is what pay does with paid answers it could not append to the log at offset at (a full disk): it cuts
// the log back to its whole records, and prints the records, each a checked line, so that the answers paid for
// need not be paid again: appended to the log by hand once there is room, -resume reads them as its own.
func (b *Budget) unwritten(at int64, seekErr error, lines []byte, err error) {
	if seekErr == nil && b.f.Truncate(at) == nil {
		b.f.Seek(at, io.SeekStart)
	}
	b.warnf("objective: paid answers that could not be written to %s (%v), one record a line; once there is room, "+
		"append them to the log as they are, before -resume, or -resume pays for them again:\n%s",
		b.path, err, bytes.TrimSuffix(lines, []byte("\n")))
}

func countNoAnswer(recs []rundir.Record) int {
	n := 0
	for _, r := range recs {
		if r.NoAnswer() {
			n++
		}
	}
	return n
}

// dropNoAnswer rewrites the log without its NoAnswer records, the others
// renumbered in order, and reopens it. The log as it was is first copied
// to backup (PATH.orig, or PATH.orig.N when that exists); the new one
// replaces it by an atomic rename, so that a crash leaves one or the
// other. It returns the records kept and the log's new size.
func (b *Budget) dropNoAnswer(recs []rundir.Record) (kept []rundir.Record, size int64, backup string, err error) {
	var buf bytes.Buffer
	for _, r := range recs {
		if r.NoAnswer() {
			continue
		}
		r.Call = len(kept) + 1
		line, err := rundir.AppendRecord(nil, r)
		if err != nil {
			return nil, 0, "", fmt.Errorf("objective: %s: %w", b.path, err)
		}
		buf.Write(line)
		kept = append(kept, r)
	}
	old, err := os.ReadFile(b.path)
	if err != nil {
		return nil, 0, "", fmt.Errorf("objective: reading %s: %w", b.path, err)
	}
	backup = b.path + ".orig"
	for i := 1; ; i++ {
		if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) {
			break
		}
		backup = fmt.Sprintf("%s.orig.%d", b.path, i)
	}
	if err := writeSynced(backup, old); err != nil {
		return nil, 0, "", fmt.Errorf("objective: keeping a copy of %s before dropping its records of unanswered molecules: %w", b.path, err)
	}
	if err := atomicfile.Write(b.path, buf.Bytes()); err != nil {
		return nil, 0, "", fmt.Errorf("objective: rewriting %s: %w", b.path, err)
	}
	f, err := os.OpenFile(b.path, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, "", fmt.Errorf("objective: reopening %s: %w", b.path, err)
	}
	b.f.Close()
	b.f = f
	return kept, int64(buf.Len()), backup, nil
}

// writeSynced writes data to a new file at path and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// Calls returns the number of paid calls so far, those replayed from the
// log included.
func (b *Budget) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.recs)
}

// Remaining returns the number of paid calls left, or -1 with no limit.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opts.Limit <= 0 {
		return -1
	}
	return max(b.opts.Limit-len(b.recs), 0)
}

// Records returns a copy of the log's records in call order.
func (b *Budget) Records() []rundir.Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]rundir.Record(nil), b.recs...)
}

// Lookup returns the record of a canonical SMILES, if it was paid for.
func (b *Budget) Lookup(canonical string) (rundir.Record, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.cache[canonical]
	if !ok {
		return rundir.Record{}, false
	}
	return b.recs[i], true
}

// Evaluate answers a batch. Each molecule is canonicalised; an invalid one
// scores 0 for free, one seen before is answered from the cache for free,
// and the new ones are scored by the objective, in order, while the budget
// lasts. Each paid evaluation is written to the log and synced before
// Evaluate returns, and, with a StreamObjective, before the objective is
// asked for more. The result has one Evaluation per input, in order.
//
// A molecule the objective gave no answer for (Result.Failed) scores 0
// with the reason, Status Failed, for free and without a record; it is not
// sent again while this Budget is open.
//
// When the budget runs out the remaining new molecules are NotScored and
// the error wraps ErrBudgetExhausted. When the objective fails, the
// molecules it did score are still paid, logged and returned, the others
// are NotScored, and the error is the objective's (a *ProgramError when
// its program is broken). A failure to write the log is permanent: every
// later call returns it.
func (b *Budget) Evaluate(ctx context.Context, smiles []string) ([]Evaluation, error) {
	return b.EvaluateFrom(ctx, smiles, nil)
}

// EvaluateFrom is Evaluate that keeps in each paid record where its molecule came from: from[i] (rundir.Record's
// From) for smiles[i], when from is not nil and from[i].By is set. A molecule paid once already keeps the
// origin of its first record.
func (b *Budget) EvaluateFrom(ctx context.Context, smiles []string, from []rundir.Origin) ([]Evaluation, error) {
	if from != nil && len(from) != len(smiles) {
		return nil, fmt.Errorf("objective: budget: %d origins for %d molecules", len(from), len(smiles))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	canon, err := b.canon.Canonicalize(ctx, smiles, true)
	if err != nil {
		return nil, fmt.Errorf("objective: budget: %w", err)
	}
	if len(canon) != len(smiles) {
		return nil, fmt.Errorf("objective: budget: canonicaliser returned %d results for %d molecules", len(canon), len(smiles))
	}
	out := make([]Evaluation, len(smiles))
	var (
		newIdx    []int              // inputs to score, in order
		firstOf   = map[string]int{} // canonical -> first input index this batch
		exhausted bool
	)
	for i, s := range smiles {
		c := canon[i]
		out[i] = Evaluation{SMILES: s, Canonical: c.SMILES}
		switch {
		case c.SMILES == "":
			out[i].Status = Invalid
			out[i].Reason = c.Reason
		case b.hit(c.SMILES, &out[i]):
		default:
			if _, seen := firstOf[c.SMILES]; seen {
				continue // filled from the first occurrence below
			}
			if b.opts.Limit > 0 && len(b.recs)+len(newIdx) >= b.opts.Limit {
				exhausted = true
				continue
			}
			firstOf[c.SMILES] = i
			newIdx = append(newIdx, i)
		}
	}

	var objErr error
	if len(newIdx) > 0 {
		batch := make([]string, len(newIdx))
		for j, i := range newIdx {
			batch[j] = smiles[i]
		}
		if t, ok := b.obj.(originTaker); ok && from != nil {
			batchFrom := make([]rundir.Origin, len(newIdx))
			for j, i := range newIdx {
				batchFrom[j] = from[i]
			}
			t.takeOrigins(batch, batchFrom)
		}
		if so, ok := b.obj.(StreamObjective); ok {
			objErr = so.ScoreStream(ctx, batch, func(lo, hi int, res []Result) error {
				if len(res) != hi-lo {
					return fmt.Errorf("objective delivered %d results for molecules %d to %d", len(res), lo, hi-1)
				}
				return b.pay(newIdx[lo:hi], res, out, from)
			})
		} else {
			res, err := b.obj.Score(ctx, batch)
			objErr = err
			if err == nil && len(res) != len(batch) {
				objErr = fmt.Errorf("objective returned %d results for %d molecules", len(res), len(batch))
				res = nil
			}
			if res != nil && len(res) != len(batch) {
				res = nil // a partial answer of the wrong length cannot be matched to the molecules
			}
			if res != nil {
				if err := b.pay(newIdx, res, out, from); err != nil {
					if b.err != nil {
						return nil, err
					}
					objErr = err // an error streak: what was paid is in out
				}
			}
		}
		if b.err != nil {
			return nil, b.err
		}
	}
	// Later duplicates within the batch share the first occurrence's answer.
	for i := range out {
		if out[i].Status != NotScored || out[i].Canonical == "" {
			continue
		}
		if j, ok := firstOf[out[i].Canonical]; ok && j != i && (out[j].Status == Paid || out[j].Status == Failed) {
			out[i].Score, out[i].Reason, out[i].Call = out[j].Score, out[j].Reason, out[j].Call
			out[i].Status = Cached
			if out[j].Status == Failed {
				out[i].Status = Failed
			}
		}
	}
	switch {
	case objErr != nil:
		return out, fmt.Errorf("objective: budget: %w", objErr)
	case exhausted:
		return out, fmt.Errorf("%w after %d calls", ErrBudgetExhausted, len(b.recs))
	}
	return out, nil
}

// hit fills ev from the cache, or from the molecules that got no answer in
// this Budget's life, and reports whether the molecule was there.
func (b *Budget) hit(canonical string, ev *Evaluation) bool {
	if j, ok := b.cache[canonical]; ok {
		r := b.recs[j]
		ev.Score, ev.Reason, ev.Call, ev.Status = r.Score, r.Error, r.Call, Cached
		return true
	}
	if why, ok := b.failed[canonical]; ok {
		// Not sent again in this session: each attempt may cost the user
		// money and it failed on every one. A new session (a resumed run)
		// tries once more.
		ev.Reason, ev.Status = why, Failed
		return true
	}
	return false
}

// pay appends the done results res of the inputs idx (with their origins from, if not nil) to the log, syncs it,
// and only then updates the cache, the count and out. A Failed result is
// no answer: it is neither logged nor counted, and its molecule is
// remembered as failed (see hit).
//
// An isolated failure is not paid for, although the program was called for
// it (Retries+1 times): the budget counts answers, as PMO counts oracle
// calls that return a value, and a record would replay a 0 that is no
// score on every resume, where the molecule can never be scored again.
// Pool.MaxFailures bounds what such molecules can cost.
func (b *Budget) pay(idx []int, res []Result, out []Evaluation, from []rundir.Origin) error {
	var buf bytes.Buffer
	var recs []rundir.Record
	now := time.Now().UTC()
	for j, i := range idx {
		if !res[j].Done || res[j].Failed {
			continue
		}
		r := rundir.Record{
			Call:      len(b.recs) + len(recs) + 1,
			SMILES:    out[i].SMILES,
			Canonical: out[i].Canonical,
			Score:     res[j].Score,
			Error:     res[j].Reason,
			Time:      now,
			Task:      b.opts.Task,
		}
		if r.Error != "" {
			r.Score = 0
		}
		if from != nil && from[i].By != "" {
			o := from[i] // a copy: the log's records outlive the caller's slice
			o.Parents = slices.Clone(o.Parents)
			r.From = &o
		}
		line, err := rundir.AppendRecord(nil, r)
		if err != nil {
			b.err = fmt.Errorf("objective: %w", err)
			return b.err
		}
		buf.Write(line)
		recs = append(recs, r)
	}
	if len(recs) > 0 {
		at, seekErr := b.f.Seek(0, io.SeekCurrent)
		if _, err := b.f.Write(buf.Bytes()); err != nil {
			b.unwritten(at, seekErr, buf.Bytes(), err)
			b.err = fmt.Errorf("objective: appending to evaluation log %s: %w", b.path, err)
			return b.err
		}
		if err := b.f.Sync(); err != nil {
			b.err = fmt.Errorf("objective: syncing evaluation log %s: %w", b.path, err)
			return b.err
		}
	}
	k := 0
	for j, i := range idx {
		switch {
		case !res[j].Done:
		case res[j].Failed:
			b.failed[out[i].Canonical] = res[j].Reason
			out[i].Score, out[i].Reason, out[i].Status = 0, res[j].Reason, Failed
		default:
			r := recs[k]
			k++
			b.cache[r.Canonical] = len(b.recs)
			b.recs = append(b.recs, r)
			out[i].Score, out[i].Reason, out[i].Call, out[i].Status = r.Score, r.Error, r.Call, Paid
			if r.Error == "" {
				b.errRun = 0
			} else {
				b.errRun++
			}
		}
	}
	if limit := b.maxErrorStreak(); limit > 0 && b.errRun >= limit {
		last := b.recs[len(b.recs)-1]
		return fmt.Errorf("%w: %d molecules in a row got an error instead of a score (the last, call %d: %q); "+
			"they were answered, so they are paid and in the log; stopping so as not to spend the budget on zeros",
			ErrErrorStreak, b.errRun, last.Call, last.Error)
	}
	return nil
}

func (b *Budget) maxErrorStreak() int {
	if b.opts.MaxErrorStreak == 0 {
		return DefaultMaxErrorStreak
	}
	return b.opts.MaxErrorStreak
}

// Close closes the log. Every paid evaluation is already synced.
func (b *Budget) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	if b.err == nil {
		b.err = errors.New("objective: budget is closed")
	}
	if err != nil {
		return fmt.Errorf("objective: closing evaluation log: %w", err)
	}
	return nil
}

// Scores returns the scores of the paid calls in call order, the input of
// the metrics package.
func (b *Budget) Scores() []float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return rundir.RecordScores(b.recs)
}
