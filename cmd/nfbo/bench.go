package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nfbo/nfbo/bo/bench"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// A suite is a named set of tasks at one setting, with the initial data
// every method of the suite starts from.
type suite struct {
	name    string
	tasks   []string
	setting string // "INITIAL+BUDGET"
	initial int
	budget  int // calls after the initial data
	// paidInit: the initial molecules are scored through the objective and
	// count toward optimize's -budget (PMO's accounting).
	paidInit bool
	preset   string
	// init returns the initial-data file for a task, writing it under dir
	// when the suite composes it.
	init func(dir, task string) (string, error)
	// args are extra arguments of every run (user2's -objective-cmd).
	args []string
}

// guacamol7 are the 7 GuacaMol tasks of the NF-BO paper.
var guacamol7Tasks = []string{"adip", "med2", "osmb", "pdop", "rano", "valt", "zale"}

// pmo20 are the PMO tasks that need only RDKit (drd2, gsk3b and jnk3 need
// classifier files that cannot be had here).
var pmo20Tasks = []string{
	"albuterol_similarity", "amlodipine_mpo", "celecoxib_rediscovery", "deco_hop", "fexofenadine_mpo",
	"isomers_c7h8n2o2", "isomers_c9h10n2o2pf2cl", "median1", "median2", "mestranol_similarity",
	"osimertinib_mpo", "perindopril_mpo", "qed", "ranolazine_mpo", "scaffold_hop", "sitagliptin_mpo",
	"thiothixene_rediscovery", "troglitazone_rediscovery", "valsartan_smarts", "zaleplon_mpo",
}

func suites(dataDir string) map[string]suite {
	guacamolInit := func(dir, task string) (string, error) {
		src := filepath.Join(dataDir, "guacamol", "guacamol_train_data_first_100.csv")
		if task != "valt" {
			return src, nil
		}
		// Valsartan SMARTS scores 0 on all 100 initial molecules; the paper
		// adds two molecules with a non-zero score. We add the two best of
		// the 10k GuacaMol set (data/generated), the only ones we can score.
		return valtInit(dir, src, filepath.Join(dataDir, "generated", "guacamol_10k_selfies_v2.0.0_scores.csv.gz"))
	}
	return map[string]suite{
		"guacamol7": {name: "guacamol7", tasks: guacamol7Tasks, setting: "100+500", initial: 100, budget: 500,
			preset: "guacamol-500", init: guacamolInit},
		"guacamol7-10k": {name: "guacamol7-10k", tasks: guacamol7Tasks, setting: "10000+10000", initial: 10000, budget: 10000,
			preset: "guacamol-10k", init: func(dir, task string) (string, error) {
				return filepath.Join(dataDir, "generated", "guacamol_10k_selfies_v2.0.0_scores.csv.gz"), nil
			}},
		"user2": {name: "user2", tasks: []string{"oral_mpo", "kinase_hybrid"}, setting: "100+500", initial: 100, budget: 500,
			paidInit: true, preset: "guacamol-500",
			init: func(dir, task string) (string, error) {
				return filepath.Join(dataDir, "guacamol", "guacamol_train_data_first_100.csv"), nil
			},
			args: []string{"-objective-cmd", objective.DefaultPython + " " +
				filepath.Join(filepath.Dir(filepath.Clean(dataDir)), "examples", "objectives", "user_objectives.py")}},
		"pmo20": {name: "pmo20", tasks: pmo20Tasks, setting: "1000+9000", initial: 1000, budget: 9000, paidInit: true,
			preset: "pmo", init: func(dir, task string) (string, error) {
				return filepath.Join(dataDir, "zinc250k", "zinc.txt.gz"), nil
			}},
	}
}

// Methods of the harness.
var benchMethods = []string{"nfbo", "nfbo-reference", "nfbo-no-tacs", "prior", "ga"}

// variantFlag collects bench's repeated -variant NAME=ARGS: named ablations of the optimiser, each a method of
// the harness whose runs get ARGS and report under NAME.
type variantFlag map[string]string

func (v variantFlag) String() string {
	var b []string
	for k, a := range v {
		b = append(b, k+"="+a)
	}
	slices.Sort(b)
	return strings.Join(b, " ")
}

func (v variantFlag) Set(s string) error {
	name, args, ok := strings.Cut(s, "=")
	switch {
	case !ok || name == "":
		return fmt.Errorf("want NAME=ARGS, e.g. tr04=\"-tr-init 0.4\"")
	case slices.Contains(benchMethods, name):
		return fmt.Errorf("%q is a built-in method", name)
	case strings.ContainsAny(name, "/ ,"):
		return fmt.Errorf("variant name %q must not hold '/', ',' or spaces", name)
	}
	v[name] = args
	return nil
}

func newBenchCmd() *Command {
	c := &Command{
		UsageLine: "bench -suite NAME -model DIR -out DIR [-methods LIST] [-seeds LIST] [-procs N]",
		Short:     "run a suite of (task, method, seed) runs and report them",
		Long: `Bench runs every (task, method, seed) of a suite as its own process, up to
-procs at a time, each in OUT/TASK/METHOD/seedN. Every method reads the same
initial data and spends the same budget through the same budget-accounting
objective. A finished run is not redone; an interrupted one resumes from its
run directory, so bench can be stopped and started again at will.

Suites:
  guacamol7      adip med2 osmb pdop rano valt zale, 100 initial + 500 calls
                 (the initial data is data/guacamol/guacamol_train_data_first_100.csv
                 with its published scores; for valt, whose score is 0 on all
                 100, the two best-scoring valt molecules of the 10k GuacaMol
                 set are added, as the paper adds two such molecules)
  guacamol7-10k  the same tasks at 10,000 initial + 10,000 calls
  user2          oral_mpo and kinase_hybrid, two objectives of our own through
                 -objective-cmd (examples/objectives/user_objectives.py), from
                 the 100 GuacaMol initial molecules scored by the objective
                 (100 initial + 500 calls)
  pmo20          the 20 RDKit-only PMO tasks, 1,000 initial ZINC molecules
                 (scored through the objective) + 9,000 calls

Methods: nfbo (default settings), nfbo-reference (the official code's rules:
-variant reference), nfbo-no-tacs, prior (random samples from
the flow's prior, decoded) and ga (a genetic algorithm on SELFIES symbols).

While it runs, bench keeps OUT/progress.txt (runs done, running, left, the
estimated time left) and a partial report OUT/report.md up to date; the full
report with plots is "nfbo report OUT".`,
		Flag: flag.NewFlagSet("bench", flag.ContinueOnError),
	}
	fs := c.Flag
	suiteName := fs.String("suite", "", "suite: guacamol7, guacamol7-10k, user2 or pmo20 (required)")
	modelDir := fs.String("model", "", "model `directory` (required)")
	out := fs.String("out", "", "suite `directory` (required)")
	methods := fs.String("methods", strings.Join(benchMethods, ","), "comma-separated methods")
	seeds := fs.String("seeds", "1,2,3", "comma-separated seeds")
	tasks := fs.String("tasks", "", "comma-separated subset of the suite's tasks (default: all)")
	procs := fs.Int("procs", 1, "runs at a time")
	workers := fs.Int("workers", 1, "objective worker processes per run")
	dataDir := fs.String("data", "data", "the repository's data `directory`")
	dry := fs.Bool("n", false, "print the commands without running them")
	extra := fs.String("args", "", "extra arguments passed to every run, e.g. \"-sampler pathwise\"")
	variants := variantFlag{}
	fs.Var(variants, "variant", "`NAME=ARGS`: an extra method NAME whose runs are nfbo with ARGS (repeatable), "+
		"e.g. -variant tr04=\"-tr-init 0.4\" -methods nfbo,tr04: ablations side by side, same seeds, data and budget")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) > 0 {
			return Usagef(cmd, "bench: unexpected arguments %q", args)
		}
		s, ok := suites(*dataDir)[*suiteName]
		if !ok {
			return Usagef(cmd, "bench: unknown suite %q (want guacamol7, guacamol7-10k, user2 or pmo20)", *suiteName)
		}
		if *modelDir == "" || *out == "" {
			return Usagef(cmd, "bench: -model and -out are required")
		}
		ms := splitList(*methods)
		for _, m := range ms {
			if _, ok := variants[m]; !ok && !slices.Contains(benchMethods, m) {
				return Usagef(cmd, "bench: unknown method %q (want %s)", m, strings.Join(benchMethods, ", "))
			}
		}
		var seedList []int
		for _, v := range splitList(*seeds) {
			n, err := strconv.Atoi(v)
			if err != nil {
				return Usagef(cmd, "bench: -seeds: %v", err)
			}
			seedList = append(seedList, n)
		}
		taskList := s.tasks
		if *tasks != "" {
			taskList = splitList(*tasks)
			for _, t := range taskList {
				if !slices.Contains(s.tasks, t) {
					return Usagef(cmd, "bench: task %q is not in suite %s", t, s.name)
				}
			}
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: find own binary: %w", err)
		}
		if err := os.MkdirAll(filepath.Join(*out, "init"), 0o755); err != nil {
			return err
		}
		var jobs []benchJob
		for _, task := range taskList {
			init, err := s.init(filepath.Join(*out, "init"), task)
			if err != nil {
				return fmt.Errorf("bench: initial data for %s: %w", task, err)
			}
			for _, m := range ms {
				for _, seed := range seedList {
					dir := filepath.Join(*out, task, m, fmt.Sprintf("seed%d", seed))
					jobs = append(jobs, benchJob{dir: dir, argv: runArgv(self, s, m, task, init, *modelDir, dir, seed, *workers, *extra, variants)})
				}
			}
		}
		if *dry {
			for _, j := range jobs {
				fmt.Fprintln(cmd.Stdout, strings.Join(j.argv, " "))
			}
			return nil
		}
		return runJobs(ctx, cmd, *out, jobs, *procs)
	}
	return c
}

type benchJob struct {
	dir  string
	argv []string
}

// runArgv returns the command line of one run.
func runArgv(self string, s suite, method, task, init, modelDir, dir string, seed, workers int, extra string, variants variantFlag) []string {
	// guacamol7's valt starts from two added molecules (see valtInit).
	valt := task == "valt" && s.name == "guacamol7"
	argv := []string{self, "optimize", "-task", task, "-init", init, "-init-count", strconv.Itoa(s.initial + 2*btoi(valt)),
		"-budget", strconv.Itoa(s.budget + s.initial*btoi(s.paidInit)), "-preset", s.preset, "-model", modelDir, "-out", dir,
		"-seed", strconv.Itoa(seed), "-workers", strconv.Itoa(workers)}
	switch method {
	case "nfbo-no-tacs":
		argv = append(argv, "-no-tacs")
	case "nfbo-reference":
		argv = append(argv, "-variant", "reference")
	case "prior", "ga":
		argv = append(argv, "-method", method)
	default:
		if args, ok := variants[method]; ok {
			argv = append(append(argv, "-label", method), strings.Fields(args)...)
		}
	}
	if valt {
		// The two added molecules do not make valt a different setting: it is reported beside the other tasks.
		argv = append(argv, "-setting", bench.Setting(s.initial, s.budget))
	}
	argv = append(argv, s.args...)
	return append(argv, strings.Fields(extra)...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runJobs runs the jobs procs at a time, skipping finished runs and
// resuming interrupted ones, and keeps progress.txt and report.md current.
func runJobs(ctx context.Context, cmd *Command, out string, jobs []benchJob, procs int) error {
	start := time.Now()
	var mu sync.Mutex
	done, running, failed := 0, 0, 0
	var durations []float64
	var todo []benchJob
	for _, j := range jobs {
		if r, err := bench.LoadRun(j.dir); err == nil && r.Info.Finished && r.Info.Error == "" {
			done++
			continue
		}
		todo = append(todo, j)
	}
	update := func() {
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
		if s, err := bench.LoadSuite(out); err == nil && len(s.Runs) > 0 {
			var md bytes.Buffer
			fmt.Fprintf(&md, "## Partial report of %s\n\n%s\n", out, msg)
			if bench.WriteMarkdown(&md, s.Runs) == nil {
				os.WriteFile(filepath.Join(out, "report.md"), md.Bytes(), 0o644)
			}
		}
		fmt.Fprint(cmd.Stderr, "bench: "+strings.SplitN(msg, "\n", 2)[0]+"\n")
	}
	mu.Lock()
	update()
	mu.Unlock()
	// Refresh the progress file while long runs go on, so that its elapsed
	// time and estimate stay current for someone watching it.
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	stopTick := make(chan struct{})
	defer close(stopTick)
	go func() {
		for {
			select {
			case <-tick.C:
				mu.Lock()
				update()
				mu.Unlock()
			case <-stopTick:
				return
			}
		}
	}()
	sem := make(chan struct{}, max(procs, 1))
	var wg sync.WaitGroup
	var errs []error
	for _, j := range todo {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(j benchJob) {
			defer wg.Done()
			defer func() { <-sem }()
			argv := j.argv
			if _, err := os.Stat(filepath.Join(j.dir, rundir.InfoFile)); err == nil {
				argv = append(slices.Clone(argv), "-resume")
			}
			mu.Lock()
			running++
			update()
			mu.Unlock()
			t0 := time.Now()
			err := runLogged(ctx, j.dir, argv)
			mu.Lock()
			running--
			if err != nil {
				failed++
				errs = append(errs, fmt.Errorf("%s: %w (log: %s)", j.dir, err, filepath.Join(j.dir, "run.log")))
			} else {
				done++
				durations = append(durations, time.Since(t0).Seconds())
			}
			update()
			mu.Unlock()
		}(j)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// runLogged runs argv with its output appended to DIR/run.log.
func runLogged(ctx context.Context, dir string, argv []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, "run.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
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
	r, closer, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closer()
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("read %s: no rows", path)
	}
	return recs, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
