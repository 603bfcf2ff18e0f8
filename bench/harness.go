package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/internal/textfile"
	"github.com/nfbo/nfbo/rundir"
)

// A SuiteSpec is a named set of tasks at one setting, with the initial data
// every method of the suite starts from.
type SuiteSpec struct {
	Name    string
	Tasks   []string
	Setting string // "INITIAL+BUDGET"
	Initial int
	Budget  int // calls after the initial data
	// PaidInit: the initial molecules are scored through the objective and
	// count toward optimize's -budget (PMO's accounting), Initial+Budget
	// calls in all, of which a method may spend fewer on initial molecules
	// (the preset's choice; bo.ScreenedPreset.PaidInitial).
	PaidInit bool
	Preset   string
	// Init returns the initial-data file of a task's runs at a seed, writing it under env.Dir when the suite
	// composes it (pmo20's random draw from ZINC250k, a draw per seed; pmo20-zinc's best of ZINC250k).
	Init func(env InitEnv) (string, error)
	// Seeds are the seeds a bench runs unless told otherwise (pmo20: PMO's 5 runs).
	Seeds []int
	// Args are extra arguments of every run (user2's -objective-cmd).
	Args []string
}

// InitEnv is what a suite's Init is given to compose a run's initial data.
type InitEnv struct {
	Dir  string // where composed initial data is written (the suite directory's init/)
	Task string
	Seed int
	// Tasks are the plan's tasks, whose slow initial data may be made in one pass with Task's.
	Tasks []string
	// Self is the nfbo binary, whose score command scores the molecules of initial data that needs its
	// task's scores (pmo20-zinc).
	Self string
	// Dry asks for the path alone: nothing slow is done (bench -n).
	Dry bool
	// Log takes a line of progress while slow initial data is made.
	Log io.Writer
}

// guacamol7Tasks are the 7 GuacaMol tasks of the NF-BO paper.
var guacamol7Tasks = []string{"adip", "med2", "osmb", "pdop", "rano", "valt", "zale"}

// pmo20Tasks are the PMO tasks that need only RDKit (drd2, gsk3b and jnk3 need
// classifier files that cannot be had here).
var pmo20Tasks = []string{
	"albuterol_similarity", "amlodipine_mpo", "celecoxib_rediscovery", "deco_hop", "fexofenadine_mpo",
	"isomers_c7h8n2o2", "isomers_c9h10n2o2pf2cl", "median1", "median2", "mestranol_similarity",
	"osimertinib_mpo", "perindopril_mpo", "qed", "ranolazine_mpo", "scaffold_hop", "sitagliptin_mpo",
	"thiothixene_rediscovery", "troglitazone_rediscovery", "valsartan_smarts", "zaleplon_mpo",
}

// Suites returns the harness's suites, whose data is under dataDir (the repository's data directory); python is
// the interpreter of user2's objective program.
func Suites(dataDir, python string) map[string]SuiteSpec {
	guacamolInit := func(env InitEnv) (string, error) {
		src := filepath.Join(dataDir, "guacamol", "guacamol_train_data_first_100.csv")
		if env.Task != "valt" {
			return src, nil
		}
		// Valsartan SMARTS scores 0 on all 100 initial molecules; the paper
		// adds two molecules with a non-zero score. We add the two best of
		// the 10k GuacaMol set (data/generated), the only ones we can score.
		return valtInit(env.Dir, src, filepath.Join(dataDir, "generated", "guacamol_10k_selfies_v2.0.0_scores.csv.gz"))
	}
	zinc := filepath.Join(dataDir, "zinc250k", "zinc.txt.gz")
	draws := zincDraws{zincSource: zincSource{src: zinc}, n: 1000}
	best := zincBest{zincSource: zincSource{src: zinc}, n: 1000, shipped: filepath.Join(dataDir, "generated", "zinc250k_pmo20_best1000.csv.gz")}
	three := []int{1, 2, 3}
	return map[string]SuiteSpec{
		"guacamol7": {Name: "guacamol7", Tasks: guacamol7Tasks, Setting: "100+500", Initial: 100, Budget: 500,
			Preset: "guacamol-500", Init: guacamolInit, Seeds: three},
		"guacamol7-10k": {Name: "guacamol7-10k", Tasks: guacamol7Tasks, Setting: "10000+10000", Initial: 10000, Budget: 10000,
			Preset: "guacamol-10k", Seeds: three, Init: func(InitEnv) (string, error) {
				return filepath.Join(dataDir, "generated", "guacamol_10k_selfies_v2.0.0_scores.csv.gz"), nil
			}},
		"user2": {Name: "user2", Tasks: []string{"oral_mpo", "kinase_hybrid"}, Setting: "100+500", Initial: 100, Budget: 500,
			PaidInit: true, Preset: "guacamol-500", Seeds: three,
			Init: func(InitEnv) (string, error) {
				return filepath.Join(dataDir, "guacamol", "guacamol_train_data_first_100.csv"), nil
			},
			Args: []string{"-objective-cmd", python + " " +
				filepath.Join(filepath.Dir(filepath.Clean(dataDir)), "examples", "objectives", "user_objectives.py")}},
		// PMO's protocol: each run starts from 1,000 molecules drawn at random from ZINC250k, a draw per seed
		// (every method and task of a seed gets the same), 5 runs.
		"pmo20": {Name: "pmo20", Tasks: pmo20Tasks, Setting: PMORandomSetting, Initial: 1000, Budget: 9000, PaidInit: true,
			Preset: "pmo", Seeds: []int{1, 2, 3, 4, 5}, Init: func(env InitEnv) (string, error) {
				return draws.write(env.Dir, env.Seed)
			}},
		// GenMol's and f-RAG's start (PublishedPMO20Sums' ZINCScored): all of ZINC250k scored by the task's
		// objective outside the budget, the runs given the best 1,000 with their scores, 10,000 calls their own.
		"pmo20-zinc": {Name: "pmo20-zinc", Tasks: pmo20Tasks, Setting: ZINCScoredSetting, Initial: 1000, Budget: 10000,
			Preset: "pmo", Seeds: []int{1, 2, 3, 4, 5}, Init: best.write},
		// The same tasks, every run from the first 1,000 molecules of ZINC250k (the tables before PMO's
		// protocol came to the harness).
		"pmo20-fixed": {Name: "pmo20-fixed", Tasks: pmo20Tasks, Setting: pmoSetting, Initial: 1000, Budget: 9000, PaidInit: true,
			Preset: "pmo", Seeds: three, Init: func(InitEnv) (string, error) {
				return zinc, nil
			}},
	}
}

// Methods are the harness's built-in methods.
var Methods = []string{"nfbo", "nfbo-reference", "nfbo-no-tacs", "nfbo-no-flow", "prior", "ga", "graph-ga"}

// DefaultMethods are the methods a suite runs unless told otherwise.
var DefaultMethods = []string{"nfbo", "nfbo-reference", "nfbo-no-tacs", "prior", "ga"}

// Variants are named ablations of the optimiser (bench's repeated -variant NAME=ARGS), each a method of the
// harness whose runs get ARGS and report under NAME. It is a flag.Value.
type Variants map[string]string

// String returns the variants as NAME=ARGS words, sorted.
func (v Variants) String() string {
	var b []string
	for k, a := range v {
		b = append(b, k+"="+a)
	}
	slices.Sort(b)
	return strings.Join(b, " ")
}

// Set adds the variant NAME=ARGS.
func (v Variants) Set(s string) error {
	name, args, ok := strings.Cut(s, "=")
	switch {
	case !ok || name == "":
		return fmt.Errorf("want NAME=ARGS, e.g. tr04=\"-tr-init 0.4\"")
	case slices.Contains(Methods, name):
		return fmt.Errorf("%q is a built-in method", name)
	case strings.ContainsAny(name, "/ ,"):
		return fmt.Errorf("variant name %q must not hold '/', ',' or spaces", name)
	}
	if err := checkRunArgs(args); err != nil {
		return fmt.Errorf("variant %s: %w", name, err)
	}
	v[name] = args
	return nil
}

// benchFlags are the optimize flags that the bench sets for each run from its plan: a run given its own would
// file itself under another key than its job's (its row never written) or another directory.
var benchFlags = map[string]string{
	"seed": "-seeds", "task": "-tasks", "label": "the variant's name", "out": "-out",
	"resume": "the bench itself", "restart": "the bench itself",
}

// checkRunArgs refuses extra arguments of a run (a variant's, bench's -args) that hold one of benchFlags.
func checkRunArgs(args string) error {
	for _, f := range strings.Fields(args) {
		if by, ok := benchFlags[flagWord(f)]; ok {
			return fmt.Errorf("%s is the bench's to set (by %s)", f, by)
		}
	}
	return nil
}

// Plan is a suite's runs to make: every task × method × seed, each an "nfbo optimize" in
// Out/TASK/METHOD/seedN.
type Plan struct {
	Suite    SuiteSpec
	Tasks    []string // a subset of Suite.Tasks; nil means all
	Methods  []string // of Methods or Variants
	Variants Variants
	Seeds    []int  // nil means the suite's
	Model    string // model directory
	Out      string // suite directory
	Workers  int    // objective worker processes per run
	Extra    string // extra arguments of every run
	Self     string // the nfbo binary
	Dry      bool   // the commands alone: initial data that is slow to make is not made
	Log      io.Writer
}

// PlanError is a Plan that names a method or task the suite does not have.
type PlanError struct{ Err error }

// Error returns the problem.
func (e *PlanError) Error() string { return e.Err.Error() }

// Unwrap returns the problem.
func (e *PlanError) Unwrap() error { return e.Err }

// Jobs checks the plan and returns its runs, writing the initial data that the suite composes under
// Out/init.
func (p Plan) Jobs() ([]Job, error) {
	if err := checkRunArgs(p.Extra); err != nil {
		return nil, &PlanError{fmt.Errorf("-args: %w", err)}
	}
	for _, m := range p.Methods {
		if _, ok := p.Variants[m]; !ok && !slices.Contains(Methods, m) {
			return nil, &PlanError{fmt.Errorf("unknown method %q (want %s, or a -variant)", m, strings.Join(Methods, ", "))}
		}
	}
	tasks := p.Tasks
	if tasks == nil {
		tasks = p.Suite.Tasks
	}
	for _, t := range tasks {
		if !slices.Contains(p.Suite.Tasks, t) {
			return nil, &PlanError{fmt.Errorf("task %q is not in suite %s", t, p.Suite.Name)}
		}
	}
	if err := os.MkdirAll(filepath.Join(p.Out, "init"), 0o755); err != nil {
		return nil, err
	}
	seeds := p.Seeds
	if seeds == nil {
		seeds = p.Suite.Seeds
	}
	var jobs []Job
	for _, task := range tasks {
		inits := map[int]string{}
		for _, seed := range seeds {
			init, err := p.Suite.Init(InitEnv{Dir: filepath.Join(p.Out, "init"), Task: task, Seed: seed, Tasks: tasks, Self: p.Self,
				Dry: p.Dry, Log: p.Log})
			if err != nil {
				return nil, fmt.Errorf("initial data for %s, seed %d: %w", task, seed, err)
			}
			inits[seed] = init
		}
		for _, m := range p.Methods {
			for _, seed := range seeds {
				dir := filepath.Join(p.Out, task, m, fmt.Sprintf("seed%d", seed))
				argv := runArgv(p.Self, p.Suite, m, task, inits[seed], p.Model, dir, seed, p.Workers, p.Extra, p.Variants)
				jobs = append(jobs, Job{Dir: dir, Argv: argv, Setting: argvSetting(argv, p.Suite.Setting), Task: task, Method: m, Seed: seed})
			}
		}
	}
	return jobs, nil
}

// argvSetting returns the setting a run of argv files itself under, as its flags are read: the last -setting's
// value (a variant's own, "-setting 100+500-zinc" after the suite's), else def. The job must carry the run's own
// setting, or its row, keyed by it, is taken for another bench's and never written.
func argvSetting(argv []string, def string) string {
	for i := len(argv) - 1; i >= 0; i-- {
		if flagWord(argv[i]) != "setting" {
			continue
		}
		if _, value, ok := strings.Cut(argv[i], "="); ok {
			return value
		}
		if i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return def
}

// flagWord returns the flag a command-line word names as the flag package reads it ("-seed", "--seed=4": "seed"),
// or "" for a word that is not a flag.
func flagWord(w string) string {
	if !strings.HasPrefix(w, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return name
}

// Job is one run of a suite: its directory and the command line that makes it.
type Job struct {
	Dir  string
	Argv []string
	// Setting, Task, Method and Seed identify the run as its run.json and a runs.tsv row do (RunOptions.Rows).
	Setting, Task, Method string
	Seed                  int
}

// key identifies the job's run as infoKey identifies a run directory's or a row's: by setting, task, method
// and seed (a suite's jobs have no objective of their own to tell apart).
func (j Job) key() runKey {
	return runKey{setting: j.Setting, task: j.Task, method: j.Method, seed: j.Seed}
}

// infoKey is the key of the run that i describes (Job.key).
func infoKey(i rundir.Info) runKey {
	return runKey{setting: i.Setting, task: i.Task, method: i.Method, seed: i.Seed}
}

// runArgv returns the command line of one run.
func runArgv(self string, s SuiteSpec, method, task, init, modelDir, dir string, seed, workers int, extra string, variants Variants) []string {
	// guacamol7's valt starts from two added molecules (see valtInit).
	valt := task == "valt" && s.Name == "guacamol7"
	argv := []string{self, "optimize", "-task", task, "-init", init}
	if s.PaidInit {
		// The calls in all are the setting's, and how many of them go to the initial molecules is the
		// method's choice (bo.ScreenedPreset.PaidInitial): the run is filed under the suite's setting whatever
		// it chose, and the report says what it chose.
		argv = append(argv, "-budget", strconv.Itoa(s.Initial+s.Budget), "-setting", s.Setting)
	} else {
		argv = append(argv, "-init-count", strconv.Itoa(s.Initial+2*btoi(valt)), "-budget", strconv.Itoa(s.Budget))
		if s.Setting != Setting(s.Initial, s.Budget) {
			argv = append(argv, "-setting", s.Setting) // pmo20-zinc's start is not any 1000+10000's
		}
	}
	argv = append(argv, "-preset", s.Preset, "-model", modelDir, "-out", dir, "-seed", strconv.Itoa(seed),
		"-workers", strconv.Itoa(workers),
		"-rules", "none") // the suites' published settings: every valid molecule may be proposed
	switch method {
	case "nfbo-no-tacs":
		argv = append(argv, "-no-tacs")
	case "nfbo-no-flow":
		argv = append(argv, "-no-flow")
	case "nfbo-reference":
		argv = append(argv, "-variant", "reference")
	case "prior", "ga":
		argv = append(argv, "-method", method)
	case "graph-ga":
		argv = append(argv, "-method", method)
		if s.PaidInit {
			// mol_opt's graph GA starts from as many random ZINC molecules as its population: the first 120 of
			// the seed's draw, the rest of the calls its own.
			argv = append(argv, "-init-count", strconv.Itoa(graphGAPopulation))
		}
	default:
		if args, ok := variants[method]; ok {
			argv = append(append(argv, "-label", method), strings.Fields(args)...)
		}
	}
	if valt {
		// The two added molecules do not make valt a different setting: it is reported beside the other tasks.
		argv = append(argv, "-setting", Setting(s.Initial, s.Budget))
	}
	argv = append(argv, s.Args...)
	return append(argv, strings.Fields(extra)...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RunOptions say how RunJobs runs a suite's jobs.
type RunOptions struct {
	Procs int // runs at a time
	// Rows, if not empty, is a runs.tsv that RunJobs keeps holding the row of every finished run among its jobs
	// (WriteRows) as each finishes (other runs under the same directory, another bench's, are not its rows), so that the figures outlive the run directories (the repository's
	// benchmarks/ files). A job whose finished row it holds is not run again, as one whose directory holds a
	// finished run is not: a suite goes on from its rows on a machine without its run directories.
	Rows string
	// Version, if not empty, is the nfbo version that runs the jobs (buildinfo.Version()). Finished run
	// directories made by another still count as done, as a campaign resumed by a later binary needs; progress
	// says how many and names one, since after a change of default their runs are not the new default's.
	Version string
}

// RunJobs runs the jobs opts.Procs at a time, each as its own process, skipping finished runs and resuming
// interrupted ones (their command with -resume). It keeps out/progress.txt current, writing a line of progress
// to progress at each change and every minute, and rewrites a partial out/report.md and opts.Rows each time a
// run finishes.
func RunJobs(ctx context.Context, progress io.Writer, out string, jobs []Job, opts RunOptions) error {
	procs := opts.Procs
	start := time.Now()
	var mu sync.Mutex
	running, failed := 0, 0
	var durations []float64
	todo, done, unrecorded, err := unfinished(progress, jobs, opts.Rows, opts.Version)
	if err != nil {
		return err
	}
	// progressLine reports the counts; the minute's refresh writes only this, which costs nothing.
	progressLine := func() {
		left := len(todo) - (done + failed - (len(jobs) - len(todo))) - running
		eta := "unknown"
		if len(durations) > 0 {
			var sum float64
			for _, d := range durations {
				sum += d
			}
			mean := sum / float64(len(durations))
			eta = (time.Duration(mean*float64(left+running)/float64(max(procs, 1))) * time.Second).Round(time.Second).String()
		}
		msg := fmt.Sprintf("runs: %d done, %d failed, %d running, %d left; elapsed %s; estimated time left %s\nupdated %s\n",
			done, failed, running, left, time.Since(start).Round(time.Second), eta, time.Now().UTC().Format(time.RFC3339))
		os.WriteFile(filepath.Join(out, "progress.txt"), []byte(msg), 0o644)
		fmt.Fprint(progress, "bench: "+strings.SplitN(msg, "\n", 2)[0]+"\n")
	}
	// results rewrites the partial report and opts.Rows from the run directories. Reading a suite parses every
	// run's log (at pmo20's 60 runs of 10,000 calls, tens of seconds of a core), so it is done when a run ends,
	// never on the minute's refresh.
	results := func() {
		s, err := LoadSuite(out)
		if err != nil {
			fmt.Fprintf(progress, "bench: warning: %v\n", err) // the runs go on; their directories hold everything
			return
		}
		if len(s.Runs) == 0 {
			return
		}
		var md bytes.Buffer
		fmt.Fprintf(&md, "## Partial report of %s\n\n", out)
		if WriteMarkdown(&md, s.Runs) == nil {
			os.WriteFile(filepath.Join(out, "report.md"), md.Bytes(), 0o644)
		}
		if opts.Rows != "" {
			if err := WriteRows(ctx, opts.Rows, jobRuns(s.Runs, jobs)); err != nil {
				fmt.Fprintf(progress, "bench: warning: rows: %v\n", err) // the runs go on; their directories hold everything
			}
		}
	}
	refresh := func() {
		mu.Lock()
		progressLine()
		mu.Unlock()
	}
	refresh()
	if unrecorded > 0 {
		// Runs that finished after their bench could write their rows (it was killed, or an older nfbo could
		// not read the file) get them now, even when nothing is left to run.
		results()
	}
	// Refresh the progress file while long runs go on, so that its elapsed
	// time and estimate stay current for someone watching it.
	defer every(time.Minute, refresh)()
	sem := make(chan struct{}, max(procs, 1))
	var wg sync.WaitGroup
	var errs []error
	for _, j := range todo {
		// Wait for a free slot or the end; a job whose slot frees as ctx ends (an interrupt stops the runs
		// under way) must not start.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(j Job) {
			defer wg.Done()
			defer func() { <-sem }()
			argv := j.Argv
			if _, err := os.Stat(filepath.Join(j.Dir, rundir.InfoFile)); err == nil {
				argv = append(slices.Clone(argv), "-resume")
			}
			mu.Lock()
			running++
			progressLine()
			mu.Unlock()
			t0 := time.Now()
			err := runLogged(ctx, j.Dir, argv)
			mu.Lock()
			running--
			if err != nil {
				failed++
				errs = append(errs, fmt.Errorf("%s: %w (log: %s)", j.Dir, err, filepath.Join(j.Dir, rundir.RunLogFile)))
			} else {
				done++
				durations = append(durations, time.Since(t0).Seconds())
				results()
			}
			progressLine()
			mu.Unlock()
		}(j)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// jobRuns returns the runs among runs that are jobs': a suite directory may hold the runs of several benches
// (a probe's methods beside the campaign's), each keeping its own rows file.
func jobRuns(runs []Run, jobs []Job) []Run {
	want := make(map[runKey]bool, len(jobs))
	for _, j := range jobs {
		want[j.key()] = true
	}
	var out []Run
	for _, r := range runs {
		if want[infoKey(r.Info)] {
			out = append(out, r)
		}
	}
	return out
}

// unfinished returns the jobs still to run and the number of finished ones: a job is finished when its
// directory holds a finished run without error, or when rowsPath (if not empty) holds its finished row, which it
// says on progress. unrecorded counts the finished runs whose rows rowsPath (if not empty) lacks. Finished
// directories made by an nfbo other than version (if not empty) are counted and one is named on progress.
func unfinished(progress io.Writer, jobs []Job, rowsPath, version string) (todo []Job, done, unrecorded int, err error) {
	kept := map[runKey]bool{} // the finished runs rowsPath holds
	if rowsPath != "" {
		rows, err := readRowsFile(rowsPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, 0, 0, err
		}
		for _, r := range rows {
			if r.Info.Finished {
				kept[infoKey(r.Info)] = true
			}
		}
	}
	var other int // finished directories made by another nfbo
	var otherDir, otherVersion string
	for _, j := range jobs {
		key := j.key()
		if r, err := LoadRun(j.Dir); err == nil && r.Info.Finished && r.Info.Error == "" {
			done++
			if rowsPath != "" && !kept[key] {
				unrecorded++
			}
			if version != "" && r.Info.Version != version {
				if other == 0 {
					otherDir, otherVersion = j.Dir, r.Info.Version
				}
				other++
			}
			continue
		}
		if kept[key] {
			fmt.Fprintf(progress, "bench: %s: finished, by its row in %s; not run again\n", j.Dir, rowsPath)
			done++
			continue
		}
		todo = append(todo, j)
	}
	if other > 0 {
		fmt.Fprintf(progress, "bench: %d finished runs were made by another nfbo than this one (%s), %s by %s; they count as done, "+
			"which is right for a campaign resumed by a later binary and wrong after a change of default: give that its own -out\n",
			other, version, otherDir, otherVersion)
	}
	return todo, done, unrecorded, nil
}

// every calls f every period until the returned function is called.
func every(period time.Duration, f func()) (stop func()) {
	tick := time.NewTicker(period)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-tick.C:
				f()
			case <-quit:
				return
			}
		}
	}()
	return func() {
		tick.Stop()
		close(quit)
	}
}

// runLogged runs argv with its output appended to DIR/run.log.
func runLogged(ctx context.Context, dir string, argv []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, rundir.RunLogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "# %s %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "))
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Stdout, c.Stderr = log, log
	return c.Run()
}

// valtInit writes DIR/valt_init.csv: the 100 initial molecules plus the two
// best-scoring valt molecules of the 10k GuacaMol set, with their scores.
func valtInit(dir, first100, scores10k string) (string, error) {
	out := filepath.Join(dir, "valt_init.csv")
	rows, err := readCSV(first100)
	if err != nil {
		return "", err
	}
	extra, err := readCSV(scores10k)
	if err != nil {
		return "", err
	}
	col := func(hdr []string, name string) int { return slices.Index(hdr, name) }
	smi, val := col(rows[0], "smile"), col(rows[0], "valt")
	esmi, eval := col(extra[0], "decoded_smiles"), col(extra[0], "valt")
	if smi < 0 || val < 0 || esmi < 0 || eval < 0 {
		return "", fmt.Errorf("valt initial data: missing smile/valt columns in %s or decoded_smiles/valt in %s", first100, scores10k)
	}
	body := extra[1:]
	slices.SortStableFunc(body, func(a, b []string) int {
		x, _ := strconv.ParseFloat(a[eval], 64)
		y, _ := strconv.ParseFloat(b[eval], 64)
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"smile", "valt"})
	for _, r := range rows[1:] {
		w.Write([]string{r[smi], r[val]})
	}
	for _, r := range body[:2] {
		w.Write([]string{r[esmi], r[eval]})
	}
	w.Flush()
	return out, os.WriteFile(out, b.Bytes(), 0o644)
}

func readCSV(path string) ([][]string, error) {
	r, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("read %s: no rows", path)
	}
	return recs, nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// WriteRows keeps the runs.tsv at path holding the rows of the finished runs among runs beside those it holds
// (one row per run, the one with more calls; rows of other suites kept), written by atomicfile.Write, so
// that a crash leaves the old file or the new one. Unfinished runs and runs without a log are left
// out: their figures are not final. Benches that share the file (two suites, or a method added beside a
// running table) take turns: the read, merge and write hold the lock of path+".lock" (rundir.LockFileWait),
// waiting for it until ctx is done, so that no process writes over rows another has just added.
func WriteRows(ctx context.Context, path string, runs []Run) error {
	unlock, err := rundir.LockFileWait(ctx, path+".lock")
	if err != nil {
		return fmt.Errorf("bench: rows: %w", err)
	}
	defer unlock()
	var all Suite
	rows, err := readRowsFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	all.Runs = rows
	for _, r := range runs {
		if r.Info.Finished && !r.NoLog {
			all.Runs = append(all.Runs, r)
		}
	}
	all.pool()
	var b bytes.Buffer
	if err := WriteRunsTSV(&b, all.Runs); err != nil {
		return err
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("bench: rows: %w", err)
	}
	return nil
}

// readRowsFile reads the runs.tsv at path (ReadRunsTSV); a missing file is an error that wraps fs.ErrNotExist.
func readRowsFile(path string) ([]Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	return ReadRunsTSV(path, f)
}
