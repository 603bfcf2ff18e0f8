package main

import (
	"context"
	"errors"
	"flag"
	"strconv"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/optimize"
)

// newOptimizeCmd returns "nfbo optimize", which runs NF-BO on a task from initial molecules and a model.
func newOptimizeCmd() *Command {
	fs := flag.NewFlagSet("optimize", flag.ContinueOnError)
	var a optimize.Args
	addRunFlags(fs, &a)
	fs.StringVar(&a.Out, "out", "", "run `directory` (required); it receives the evaluation log and checkpoints")
	fs.BoolVar(&a.Resume, "resume", false, "continue the run in -out (same flags) after an interruption")
	fs.StringVar(&a.Queue, "queue", "", "NATS server `URL` (nats://HOST:4222) whose workers score the molecules (nfbo worker); "+
		"empty means the objective runs here")
	natsFlags := addNATSFlags(fs)
	fs.BoolVar(&a.Restart, "restart", false, "with -resume, when checkpoint.gob is missing or damaged: start the optimiser again from the "+
		"initial molecules (the damaged files are kept as *.damaged, the pending batch of the lost checkpoint as pending.gob.unused); molecules already in the evaluation log are answered "+
		"from it, not paid again, but the run will differ from an uninterrupted one")
	cmd := &Command{
		UsageLine: "optimize -task NAME -init FILE -model DIR -out DIR [-budget N] [-preset NAME] [-seed N] [-resume] [-objective-cmd CMD] [-request-size N] [-queue URL]",
		Short:     "find molecules with high scores by NF-BO",
		Long:      optimizeHelp,
		Flag:      fs,
		Groups:    optimizeFlagGroups,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "optimize: unexpected arguments %q", args)
		}
		switch {
		case a.Out == "":
			return Usagef(cmd, "optimize: -out is required")
		case a.Restart && !a.Resume:
			return Usagef(cmd, "optimize: -restart goes with -resume")
		}
		if a.Queue != "" {
			server, cred, err := natsCredentials(a.Queue, *natsFlags)
			if err != nil {
				return Usagef(cmd, "optimize: -queue: %v", err)
			}
			a.Queue, a.QueueCredentials = server, cred
		}
		return runError(cmd, "optimize", optimize.Run(ctx, optimize.Streams{Stdout: cmd.Stdout, Stderr: cmd.Stderr}, a))
	}
	return cmd
}

// addRunFlags defines the flags that make a run (all of optimize's but -out, -resume and -restart) on a:
// optimize, ask and serve share them.
func addRunFlags(fs *flag.FlagSet, a *optimize.Args) {
	fs.StringVar(&a.Task, "task", "", "task name or alias (see \"nfbo tasks\"); passed through to -objective-cmd (required)")
	fs.StringVar(&a.Init, "init", "", "initial molecules: a CSV (or tab-separated) `file` with a smiles (or smile) column, an SDF, or one SMILES per line (required)")
	fs.StringVar(&a.ScoreColumn, "score-column", "", "the column of -init (or SDF data item) that holds the initial molecules' scores; "+
		"default: the one named like -task. Without scores the initial molecules are scored by the objective and count as calls")
	fs.IntVar(&a.InitCount, "init-count", 0, "use the first `N` initial molecules; 0 means the preset's count (pmo: 1,000, of which NF-BO's screened variant pays for 200 when they have no scores)")
	fs.IntVar(&a.Budget, "budget", 0, "objective calls in all (distinct molecules), the scoring of initial molecules without scores included; 0 means the preset's (guacamol-500: 100 initial + 500 new)")
	fs.StringVar(&a.Preset, "preset", "guacamol-500", "optimiser setting: guacamol-500, guacamol-10k or pmo")
	fs.StringVar(&a.Model, "model", "", "model directory or checkpoint `file` (required)")
	fs.Uint64Var(&a.Seed, "seed", 1, "random seed; a run is reproducible given seed, data, model and flags")
	fs.StringVar(&a.ObjectiveCmd, "objective-cmd", "", "external objective program speaking docs/objective-protocol.md, "+
		"e.g. \"python3 oracle.py\" (split at spaces, no shell)")
	fs.IntVar(&a.Workers, "workers", 1, "objective worker processes")
	fs.IntVar(&a.RequestSize, "request-size", objective.DefaultChunkSize, requestSizeUsage)
	fs.StringVar(&a.Python, "python", objective.DefaultPython, "Python interpreter that can import RDKit")
	fs.DurationVar(&a.Timeout, "timeout", 5*time.Minute, "longest one request to an objective worker may take")
	fs.StringVar(&a.Sampler, "sampler", "exact", "Thompson sampler: exact (Cholesky, the reference) or pathwise (approximate, faster)")
	fs.StringVar(&a.Method, "method", "nfbo", "optimiser: nfbo, or a baseline in the same harness: prior (random samples from the flow's prior), "+
		"ga (a genetic algorithm on SELFIES symbols) or graph-ga (the graph GA with mol_opt's settings: population 120, 70 children a "+
		"generation, parents drawn by score, every child a graph crossover, half of them ring crossovers, mutated with probability "+
		"0.067, of 39.15 ± 3.5 heavy atoms; mol_opt starts it from 120 random ZINC molecules: -init-count 120)")
	fs.StringVar(&a.Crossover, "crossover", "", "how GA children (the screened variant's, and -method ga's) start from two parents: "+
		"graph (a fragment of each molecular graph, cut at a single bond outside rings, joined) or selfies (one-point crossover of "+
		"their SELFIES symbols); empty means the preset's for NF-BO (graph with guacamol-500 and pmo) and selfies for -method ga")
	fs.StringVar(&a.Mutation, "mutation", "", "how GA children (the screened variant's, and -method ga's) mutate: selfies "+
		"(one SELFIES symbol replaced, inserted or deleted) or graph (an atom or bond of the molecular graph inserted, deleted or "+
		"changed, or a ring closed); empty means the preset's for NF-BO (graph with guacamol-500 and pmo) and selfies for -method ga")
	fs.StringVar(&a.Setting, "setting", "", "the setting the report files this run under; empty means INITIAL+CALLS, e.g. 100+500 "+
		"(bench passes 100+500 for guacamol7's valt, whose initial set holds two added molecules)")
	fs.StringVar(&a.Variant, "variant", bo.DefaultVariant, "NF-BO's rules: screened (decode first; an exact GP on Morgan fingerprints and token counts (-features), refitted every iteration, "+
		"picks among decoded candidates and GA offspring) or reference (the official code's rules)")
	fs.IntVar(&a.Offspring, "offspring", 0, "screened variant: GA children of the best molecules added to each trust region's candidates; "+
		"0 means the variant's default, -1 none")
	fs.StringVar(&a.Library, "library", "", "screened variant: a `file` of molecules (as -init reads them), of which each trust region's "+
		"candidates get the -library-draw most similar to one of the best molecules (among "+strconv.Itoa(bo.LibrarySample)+" times as many drawn at random each iteration) "+
		"for the GP to screen beside the flow's and the GA's: scaffolds their moves do not reach")
	fs.IntVar(&a.LibraryDraw, "library-draw", 0, "molecules of -library drawn into each trust region's candidates; 0 means "+
		strconv.Itoa(optimize.DefaultLibraryDraw))
	fs.IntVar(&a.LibraryPicks, "library-picks", 0, "of each trust region's picks, at least `N` are -library's molecules (Thompson sampling among them); "+
		"0 lets them compete with the other candidates")
	fs.IntVar(&a.FineTuneEvery, "finetune-every", 0, "fine-tune the flow every `N` new calls; 0 means the preset's (10 for guacamol-500), -1 never")
	fs.Float64Var(&a.TRInit, "tr-init", 0, "initial trust-region length; 0 means 0.8, the reference's")
	fs.StringVar(&a.TRNovelty, "tr-novelty", "", "the trust region's novelty rule, `SHRINK,GROW`: the box shrinks when fewer than SHRINK of the "+
		"candidates examined are molecules already seen, grows when more than GROW are; empty means the preset's (the guacamol-500 and pmo "+
		"presets' screened variant: 0.4,0.6; otherwise the reference's 0.8,0.95)")
	fs.StringVar(&a.AnchorRule, "anchor-rule", "minmax", "how anchors are drawn: minmax (the official code's softmax of min-max scaled scores) or raw (the paper's softmax of the scores)")
	fs.BoolFunc("distinct-scores", "draw the anchors and the GA children's parents one per distinct score, so that a plateau "+
		"of equal-score variants (stereo, charge, radicals) does not take them all (the default with the guacamol-500 and pmo presets' screened variant; "+
		"-distinct-scores=false draws them as the reference does)", func(s string) error {
		v, err := strconv.ParseBool(s)
		a.DistinctScores = &v
		return err
	})
	fs.BoolVar(&a.SkipVariants, "skip-variants", false, "screened variant: once the objective has scored 90 % of at least 10 paid pairs of stereo, "+
		"charge or radical variants alike, propose no variant of a paid molecule; not yet a default")
	fs.StringVar(&a.Features, "features", "", "screened variant: the surrogate's inputs, tokens (SELFIES token counts, Matérn kernel) "+
		"morgan (Morgan count fingerprints, Tanimoto kernel) or morgan+tokens (both: Tanimoto plus Matérn kernel, weighed by the data); "+
		"empty means the preset's: morgan+tokens for guacamol-500 and pmo, tokens for guacamol-10k")
	fs.Float64Var(&a.AnchorTemp, "anchor-temp", 0, "the anchors' softmax temperature; 0 means the rule's (0.01 for minmax, 0.1 for raw), -1 greedy (the best points)")
	fs.StringVar(&a.Label, "label", "", "the method's name in run.json and reports (bench's -variant sets it); empty means derived from -method, -variant and -no-tacs")
	fs.BoolVar(&a.NoTACS, "no-tacs", false, "perturb every latent dimension with probability 0.1 instead of TACS")
	fs.BoolFunc("freeze-embed", "keep the flow's token embeddings fixed when it is fine-tuned (the default with -variant screened; "+
		"-freeze-embed=false trains them, as the reference does)", func(s string) error {
		v, err := strconv.ParseBool(s)
		a.FreezeEmbed = &v
		return err
	})
	fs.StringVar(&a.Update, "update", "once", "surrogate training: once (before the loop, the reference code) or every (each iteration, the paper)")
	fs.StringVar(&a.Backend, "backend", "auto", "who runs the flow: auto (pure Go on x86-64 with AVX2, else ONNX Runtime when its library is found, else pure Go), go, ort or cuda (the GPU)")
	fs.IntVar(&a.Candidates, "candidates", 0, "candidates per trust region; 0 means 1000 with -variant screened, min(50000, max(2000, 200·D))/anchors with reference")
	fs.IntVar(&a.Anchors, "anchors", 0, "trust regions per iteration; 0 means the preset's")
	fs.IntVar(&a.Queries, "queries", 0, "Thompson-sampled proposals per trust region; 0 means the preset's (the pmo preset's screened variant: 10)")
	fs.IntVar(&a.CandidateTarget, "candidate-target", 0, "screened variant: decode each trust region's candidates a chunk at a time "+
		"and stop once `N` are new molecules; 0 means the preset's (guacamol-500 and pmo: 100; guacamol-10k decodes all), -1 decodes all of them")
	fs.BoolVar(&a.NoFlow, "no-flow", false, "ablation: no latent candidates, the GP picks among GA children alone and the flow is "+
		"never decoded nor fine-tuned (what the flow adds is the default's lead over this)")
	fs.BoolVar(&a.Minimize, "minimize", false, "lower scores are better (a docking energy, the sa task): the optimiser maximises −score, "+
		"the log keeps the objective's scores, and reports rank by −score")
	fs.StringVar(&a.Rules, "rules", rules.DefaultName, "chemistry rules every proposed molecule keeps (never paid for otherwise): "+
		"default (closed-shell, formal charges only on N and O with net charge within ±1, MW 150-650, no PAINS alert, no alert "+
		"rare in real molecules (data/rules/alerts.tsv), no atom environment unseen in ZINC250k and GuacaMol 10k), "+
		"none, or a JSON `file` (see docs/USAGE.md, \"Chemistry rules\"); NF-BO's variants apply them, -method ga and prior do not")
}

// requestSizeUsage is the help of -request-size, one of the run flags.
const requestSizeUsage = "the most molecules in one request to an objective worker (`N` at least 1); a crash or kill -9 " +
	"loses the answers to the requests in flight, at most N per worker, which -resume asks for again: 1 for an expensive objective"

// runError turns optimize's errors into the command's: a setting that cannot work is a usage error (exit 2).
func runError(cmd *Command, name string, err error) error {
	var ae *optimize.ArgError
	if errors.As(err, &ae) {
		return Usagef(cmd, "%s: %v", name, ae.Err)
	}
	return err
}

// optimizeFlagGroups sort optimize's flags for its help: -h shows the everyday ones, "nfbo help optimize" all of
// them, each group once.
var optimizeFlagGroups = []FlagGroup{
	{"Everyday flags", []string{"task", "init", "model", "out", "budget", "preset", "seed", "resume", "objective-cmd",
		"workers", "rules", "minimize", "backend", "queue"}},
	{"Initial molecules", []string{"init-count", "score-column"}},
	{"The objective's workers and the NATS queue", []string{"request-size", "timeout", "python", "nats-user", "nats-password",
		"nats-token", "nats-creds", "nats-nkey", "nats-ca", "nats-cert", "nats-key"}},
	{"Recovery", []string{"restart"}},
	{"The method and its settings (a preset's values unless given)", []string{"method", "variant", "sampler", "update", "crossover",
		"mutation", "offspring", "candidates", "candidate-target", "anchors", "queries", "anchor-rule", "anchor-temp",
		"distinct-scores", "features", "finetune-every", "freeze-embed", "tr-init", "tr-novelty"}},
	{"Ablations (the paper's, and what the flow adds)", []string{"no-tacs", "no-flow"}},
	{"Probes that measurement did not make defaults (BENCHMARKS.md)", []string{"skip-variants", "library", "library-draw",
		"library-picks"}},
	{"Set by nfbo bench", []string{"label", "setting"}},
}

// optimizeHelp is "nfbo help optimize".
const optimizeHelp = `Optimize runs NF-BO: Bayesian optimisation in the latent space of the SeqFlow
in -model, starting from the molecules of -init, until -budget objective
calls are spent.

-budget counts every objective call, each a distinct molecule, the initial
molecules' scoring included when -init has no scores for the task: with
100 unscored initial molecules, -budget 600 is 100 calls to score them and
500 calls the optimiser makes, in batches of (trust regions x proposals,
50 at guacamol-500). A run with fewer than three batches is warned about:
the optimiser learns only from the batches before.

-init is either a CSV file with a header that has a "smiles" or "smile"
column (or such a table separated by tabs), an SDF, or a file with one
SMILES per line (first whitespace-separated field; a name may follow); a
name ending in .gz is read through gzip. When the table also has a column
named like the task (GuacaMol's
data/guacamol/guacamol_train_data_first_100.csv has med1, adip, ...), or the
column -score-column NAME, those scores are used as they are and cost
nothing; a table whose other columns hold no such name is warned about. Otherwise the initial
molecules are scored through the objective first and, as in PMO, count as
calls: they are the first lines of the evaluation log and come out of
-budget (so the pmo preset's default, 1,000 initial + 9,000 calls, is
-budget 10000; there NF-BO's screened variant pays for the first 200 of the
1,000 and makes the other 800 calls itself, which measured better at PMO's
budget). -init-count N takes the first N rows (default: the preset's, 100
for guacamol-500). Molecules that cannot be tokenised with the model's
vocabulary are skipped with a message naming the file and line. The run's
sequence length T is 1 + the longest initial SELFIES (at most the model's
max_seq_len).

-preset picks the paper's setting (guacamol-500: 5 trust regions × 10
proposals, flow fine-tuned every 10 calls; guacamol-10k and pmo: 10 × 100,
every 200); -budget, -anchors, -queries, -candidates, -sampler, -no-tacs and
-update change it. With the screened variant (the default) the guacamol-500
and pmo presets decode until 100 candidates a trust region are new, keep
40-60 % of them already seen (-tr-novelty 0.4,0.6) and draw anchors and
parents one per distinct score, and the pmo preset buys 100 molecules an
iteration (10 × 10): better at PMO's budget, the same scores at a fifth of the
decoding at guacamol-500's (BENCHMARKS.md); -candidate-target -1 -tr-novelty
0.8,0.95 -distinct-scores=false (and at pmo -queries 100) restore the paper's.

-backend chooses who encodes and decodes: auto (the default) is pure Go on
x86-64 with AVX2 and FMA, where nfbo's own kernels decode 1.6-2x as fast as
ONNX Runtime (BENCHMARKS.md), and ONNX Runtime elsewhere when its library is
found ($NFBO_ORT_LIB or third_party/onnxruntime/lib/libonnxruntime.so.1);
go, ort, or cuda (GPU 0, fine-tuning there too; nfbo gpu says whether the
machine can).

The objective is the RDKit worker pool (task names: "nfbo tasks") or, with
-objective-cmd, an external program (docs/objective-protocol.md). Molecules
are identified by RDKit canonical SMILES (by their SELFIES-canonical SMILES
when RDKit is missing), and each is paid for once.

The run directory -out holds evaluations.jsonl (one line per paid call,
synced before the optimiser sees the score), checkpoint.gob (state, flow and
surrogate after the last iteration), pending.gob (the batch being
evaluated), config.json and run.json. After an interruption (Ctrl-C, kill -9,
a crash) run the same command with -resume: the run continues from the last
checkpoint, replays the evaluations already paid for from the log, and ends
as an uninterrupted run with the same seed would. The objective's processes
die with nfbo, kill -9 included, and a crash loses only the answers to the
requests in flight: at most -request-size molecules per worker (64; give an
expensive objective -request-size 1), which the resume sends again. Ctrl-C
stops the run at the next safe point, after waiting up to -timeout for the
answers in flight; a second Ctrl-C stops it at once, at the price of a crash.
The exit status is then 130.

Everything that can be checked without the objective is checked before the
first call and before -out is made: the flags, the model, the initial
molecules (printable ASCII) and their scores (finite), -budget against the
initial molecules it must pay for, the optimiser's settings and the task
name. A resumed run is checked before it pays: a damaged checkpoint.gob or
pending.gob (both carry a CRC-32C), an evaluation log that holds fewer calls
than run.json or the checkpoint records as paid, and an NF-BO run whose
checkpoint is gone while its log holds calls of the optimiser are refused,
with what to do. -restart then goes on without the damaged or lost state: the
optimiser starts again from the initial molecules (from the checkpoint when
only pending.gob is damaged), the molecules in the log are answered from it
and not paid again, but the run differs from an uninterrupted one.

With -queue URL the molecules are scored elsewhere: each is published to the
NATS JetStream server at URL, and "nfbo worker -queue URL -task NAME"
processes, on any machines, score them (docs/USAGE.md, "Many machines"). Every
result is still on disk before the next is taken. A crash or kill -9 of this
process costs nothing: the workers go on, and -resume collects the scores
that arrived meanwhile instead of asking again; Ctrl-C stops at once, for
the same reason. -objective-cmd then only names the objective in run.json
(the workers run it), and -workers, -request-size and -timeout are the
workers' business. The server's credentials come from the -nats-* flags or
the NFBO_NATS_* variables ("nfbo help worker") and are never written to the
run directory; nor is a password given in the URL.

One line per iteration reports the calls used, the best score, the
trust-region length, the new, duplicate and invalid proposals and the seconds
spent per phase. At the end the best molecules and Top-1/10/100 and AUC
Top-10 (PMO) of the evaluation log are printed.`
