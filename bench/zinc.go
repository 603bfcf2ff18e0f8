package bench

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/internal/textfile"
)

// PMORandomSetting is the setting of pmo20 under PMO's protocol: 1,000 initial molecules drawn at random from
// ZINC250k for each seed + 9,000 calls. Its runs are never pooled with those of pmoSetting, which all start from
// the first 1,000 molecules of ZINC250k.
const PMORandomSetting = "1000+9000 random"

// graphGAPopulation is the population of mol_opt's graph GA (baseline.MolOptGraphGA), which starts from as many
// random ZINC molecules.
const graphGAPopulation = 120

// zincDrawStream is the second word of the PCG seeding a draw ("zinc" in ASCII), so that a draw's stream differs
// from the runs' streams at the same seed.
const zincDrawStream = 0x7a696e63

// zincDraws writes the initial data of pmo20's runs: n molecules of the SMILES file src (ZINC250k, a molecule a
// line) drawn at random without replacement, a draw per seed, the same on every machine. A Plan asks it once per
// task and seed; the file read and the draws are kept.
type zincDraws struct {
	zincSource
	n int

	mu   sync.Mutex
	done map[int]string // seed -> the file written
}

// zincSource is a SMILES file's lines (ZINC250k's), read once, for the suites that compose initial data from it.
type zincSource struct {
	src   string
	lines []string
}

// load reads src unless it was read, and checks that it holds at least n molecules.
func (z *zincSource) load(n int) error {
	if z.lines == nil {
		lines, err := readLines(z.src)
		if err != nil {
			return err
		}
		z.lines = lines
	}
	if len(z.lines) < n {
		return fmt.Errorf("%s: %d molecules, fewer than the %d to take", z.src, len(z.lines), n)
	}
	return nil
}

// write writes DIR/zinc250k_seedSEED.csv, a CSV with the columns smiles and name (zinc250k:LINE, the molecule's
// 1-based line in src, so that every start can be traced), in the order drawn, and returns its path. A file
// already holding the draw is left as it is, so that runs reading it are not disturbed.
func (z *zincDraws) write(dir string, seed int) (string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if p, ok := z.done[seed]; ok {
		return p, nil
	}
	if err := z.load(z.n); err != nil {
		return "", err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"smiles", "name"})
	for _, i := range drawIndices(uint64(seed), len(z.lines), z.n) {
		w.Write([]string{z.lines[i], "zinc250k:" + strconv.Itoa(i+1)})
	}
	w.Flush()
	path := filepath.Join(dir, fmt.Sprintf("zinc250k_seed%d.csv", seed))
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, b.Bytes()) {
		if err := atomicfile.Write(path, b.Bytes()); err != nil {
			return "", fmt.Errorf("initial draw: %w", err)
		}
	}
	if z.done == nil {
		z.done = map[int]string{}
	}
	z.done[seed] = path
	return path, nil
}

// drawIndices returns k distinct indices of [0, n) drawn uniformly at random, in the order drawn, from a PCG
// seeded with seed: a partial Fisher-Yates shuffle whose swaps are kept in a map. It draws with its own
// reduction of the generator's 64-bit words (rejection of the biased tail), so that the draw depends on nothing
// but the PCG, whose output is fixed by its definition.
func drawIndices(seed uint64, n, k int) []int {
	src := rand.NewPCG(seed, zincDrawStream)
	uniform := func(m uint64) uint64 { // uniform in [0, m)
		limit := -m % m // 2^64 mod m: the words below it would favour small results
		for {
			if x := src.Uint64(); x >= limit {
				return x % m
			}
		}
	}
	swapped := map[int]int{}
	at := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, k)
	for i := range k {
		j := i + int(uniform(uint64(n-i)))
		out[i] = at(j)
		swapped[j] = at(i)
	}
	return out
}

// readLines returns the lines of the SMILES file path (through gzip when its name ends in ".gz"), each without
// surrounding space; a line of several fields keeps its first, the SMILES. An empty line is an error.
func readLines(path string) ([]string, error) {
	r, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			return nil, fmt.Errorf("%s:%d: an empty line: the draw would not name ZINC's lines", path, line)
		}
		out = append(out, f[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// ZINCScoredSetting is the setting of pmo20-zinc: the start GenMol and f-RAG take, all of ZINC250k scored by the
// task's objective outside the budget (PublishedPMO20Sums' ZINCScored), here its best 1,000 molecules given with
// their scores + 10,000 calls, every one the method's own. Its runs are never pooled with PMO's protocol's.
const ZINCScoredSetting = "1000+10000 ZINC-scored"

// zincBest writes the initial data of pmo20-zinc's runs: the n molecules of the SMILES file src (ZINC250k) with
// the highest scores for the task, with their scores, which the runs do not pay for: from the shipped file when it
// holds the task, else from scores of all of src that the nfbo binary's score command makes once, for every task
// of the plan in one pass (about 100 minutes of a core for the twenty), kept beside the data.
type zincBest struct {
	zincSource
	n    int
	part int // molecules a "nfbo score" call scores; 0 means zincScorePart
	// shipped is a CSV (task, smiles, name, score) holding the best n of src for tasks already scored
	// (data/generated/zinc250k_pmo20_best1000.csv.gz), read in place of scoring src; "" or a missing file: none.
	shipped string

	mu sync.Mutex
}

// write writes DIR/zinc250k_best_TASK.csv (columns smiles, name as zincDraws names them, and TASK: the score, so
// that optimize takes it free), best first, ties in src's order, and returns its path; the seed changes nothing.
// The scores are DIR/zinc250k_scores/TASK.txt, one line of src each, made first when absent.
func (z *zincBest) write(env InitEnv) (string, error) {
	path := filepath.Join(env.Dir, "zinc250k_best_"+env.Task+".csv")
	if env.Dry {
		return path, nil
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if rows, err := z.shippedRows(env.Task); err != nil {
		return "", err
	} else if rows != nil {
		return path, writeBest(path, env.Task, rows)
	}
	if err := z.load(z.n); err != nil {
		return "", err
	}
	scores, err := z.scores(env)
	if err != nil {
		return "", err
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	rows := make([][3]string, z.n)
	for j, i := range order[:z.n] {
		rows[j] = [3]string{z.lines[i], "zinc250k:" + strconv.Itoa(i+1), strconv.FormatFloat(scores[i], 'g', -1, 64)}
	}
	return path, writeBest(path, env.Task, rows)
}

// writeBest writes a task's initial data: the columns smiles, name and TASK (the score), one row each.
func writeBest(path, task string, rows [][3]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"smiles", "name", task})
	for _, r := range rows {
		w.Write(r[:])
	}
	w.Flush()
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("initial data: %w", err)
	}
	return nil
}

// shippedRows returns the task's n best rows (smiles, name, score) of z.shipped in its order, or nil when the
// file is not there or does not hold the task.
func (z *zincBest) shippedRows(task string) ([][3]string, error) {
	if z.shipped == "" {
		return nil, nil
	}
	r, err := textfile.Open(z.shipped)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer r.Close()
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.shipped, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], []string{"task", "smiles", "name", "score"}) {
		return nil, fmt.Errorf("%s: want the header task,smiles,name,score", z.shipped)
	}
	var rows [][3]string
	for i, rec := range recs[1:] {
		if rec[0] != task {
			continue
		}
		if _, err := strconv.ParseFloat(rec[3], 64); err != nil {
			return nil, fmt.Errorf("%s:%d: score %q is not a number", z.shipped, i+2, rec[3])
		}
		rows = append(rows, [3]string{rec[1], rec[2], rec[3]})
	}
	switch {
	case len(rows) == 0:
		return nil, nil
	case len(rows) < z.n:
		return nil, fmt.Errorf("%s: %d rows for %s, want %d", z.shipped, len(rows), task, z.n)
	}
	return rows[:z.n], nil
}

// scores returns the task's score of every line of src, read from DIR/zinc250k_scores/TASK.txt. When that file
// is missing, "nfbo score" makes it, with those of every other task of env.Tasks still missing in the same pass,
// which parses each molecule once (a line whose molecule fails scores 0, as in a run, and is named in
// zinc250k_scores/score.err).
func (z *zincBest) scores(env InitEnv) ([]float64, error) {
	dir := filepath.Join(env.Dir, "zinc250k_scores")
	file := func(task string) string { return filepath.Join(dir, task+".txt") }
	if _, err := os.Stat(file(env.Task)); err != nil {
		if err := z.score(env, dir, file); err != nil {
			return nil, err
		}
	}
	path := file(env.Task)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != len(z.lines) {
		return nil, fmt.Errorf("%s: %d scores for the %d molecules of %s", path, len(fields), len(z.lines), z.src)
	}
	scores := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) {
			return nil, fmt.Errorf("%s:%d: score %q is not a number", path, i+1, f)
		}
		scores[i] = v
	}
	return scores, nil
}

// zincScorePart is how many molecules of src one "nfbo score" scores, into a part file of its own, so that an
// interrupted scoring goes on from its last part.
const zincScorePart = 10000

// score runs "nfbo score" over src for env.Task and every task of env.Tasks without a score file, a part of
// zincScorePart lines at a time (DIR/part-TASKSHASH-N.tsv, kept until every part is in; failed lines named in
// DIR/score.err), and writes their files.
func (z *zincBest) score(env InitEnv, dir string, file func(string) string) error {
	if env.Self == "" {
		return fmt.Errorf("%s is missing and no nfbo binary was given to make it", file(env.Task))
	}
	tasks := []string{env.Task}
	for _, t := range env.Tasks {
		if _, err := os.Stat(file(t)); err != nil && !slices.Contains(tasks, t) {
			tasks = append(tasks, t)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if env.Log != nil {
		fmt.Fprintf(env.Log, "bench: scoring the %d molecules of %s for %s (once; kept in %s)\n",
			len(z.lines), z.src, strings.Join(tasks, ", "), dir)
	}
	// The parts' names hold the tasks, so that a part is never read back for another set of tasks.
	key := fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(strings.Join(tasks, ","))))
	step := z.part
	if step == 0 {
		step = zincScorePart
	}
	var parts []string
	for lo := 0; lo < len(z.lines); lo += step {
		hi := min(lo+step, len(z.lines))
		part := filepath.Join(dir, fmt.Sprintf("part-%s-%03d.tsv", key, lo/step))
		parts = append(parts, part)
		if _, err := os.Stat(part); err == nil {
			continue
		}
		if err := z.scorePart(env, dir, part, tasks, lo, hi); err != nil {
			return err
		}
		if env.Log != nil {
			fmt.Fprintf(env.Log, "bench: scored %d of %d molecules\n", hi, len(z.lines))
		}
	}
	cols := make([]bytes.Buffer, len(tasks))
	for _, part := range parts {
		data, err := os.ReadFile(part)
		if err != nil {
			return err
		}
		for _, row := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			f := strings.Split(row, "\t")
			for j := range tasks {
				cols[j].WriteString(f[j])
				cols[j].WriteByte('\n')
			}
		}
	}
	for j, t := range tasks {
		if err := atomicfile.Write(file(t), cols[j].Bytes()); err != nil {
			return err
		}
	}
	for _, part := range parts {
		os.Remove(part)
	}
	return nil
}

// scorePart scores lines [lo, hi) of src for the tasks into part, a line of tab-separated scores a molecule.
func (z *zincBest) scorePart(env InitEnv, dir, part string, tasks []string, lo, hi int) error {
	in := part + ".smi"
	if err := atomicfile.Write(in, []byte(strings.Join(z.lines[lo:hi], "\n")+"\n")); err != nil {
		return err
	}
	defer os.Remove(in)
	// Failed lines are named in score.err, one file for every part, kept.
	errPath := filepath.Join(dir, "score.err")
	errf, err := os.OpenFile(errPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.Command(env.Self, "score", "-workers", strconv.Itoa(runtime.NumCPU()), "-task", strings.Join(tasks, ","), in)
	cmd.Stdout, cmd.Stderr = &out, errf
	runErr := cmd.Run()
	errf.Close()
	rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// Exit status 1 with a line for every molecule is failed lines scored 0, which a run would score so too.
	var exit *exec.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1 && len(rows) == hi-lo) {
		return fmt.Errorf("score lines %d-%d of %s for %s: %w (see %s)", lo+1, hi, z.src, strings.Join(tasks, ","), runErr, errPath)
	}
	if len(rows) != hi-lo {
		return fmt.Errorf("score lines %d-%d of %s: %d lines of scores (see %s)", lo+1, hi, z.src, len(rows), errPath)
	}
	for i, row := range rows {
		if n := strings.Count(row, "\t") + 1; n < len(tasks) {
			return fmt.Errorf("score %s: line %d holds %d scores, want %d", z.src, lo+i+1, n, len(tasks))
		}
	}
	return atomicfile.Write(part, out.Bytes())
}
