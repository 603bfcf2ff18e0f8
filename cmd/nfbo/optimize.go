package main

import (
	"context"
	"errors"
	"flag"

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
	connectWait := addConnectWait(fs)
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
		case *connectWait < 0:
			return Usagef(cmd, "optimize: -connect-wait must not be negative, not %v", *connectWait)
		}
		if a.Queue != "" {
			server, cred, err := natsCredentials(a.Queue, *natsFlags)
			if err != nil {
				return Usagef(cmd, "optimize: -queue: %v", err)
			}
			a.Queue, a.QueueCredentials, a.QueueWait = server, cred, *connectWait
		}
		return runError(cmd, "optimize", optimize.Run(ctx, optimize.Streams{Stdout: cmd.Stdout, Stderr: cmd.Stderr}, a))
	}
	return cmd
}

// addRunFlags defines the flags that make a run (optimize.Args.AddFlags) on a: optimize, ask and serve share them.
func addRunFlags(fs *flag.FlagSet, a *optimize.Args) { a.AddFlags(fs) }

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
	{"The objective's workers and the NATS queue", []string{"request-size", "timeout", "python", "connect-wait", "nats-user", "nats-password",
		"nats-token", "nats-creds", "nats-nkey", "nats-ca", "nats-cert", "nats-key"}},
	{"Recovery", []string{"restart"}},
	{"The method and its settings (a preset's values unless given)", []string{"method", "variant", "sampler", "update", "crossover",
		"mutation", "offspring", "candidates", "candidate-target", "anchors", "queries", "anchor-rule", "anchor-temp",
		"distinct-scores", "ties", "features", "ts-spread", "gp-targets", "finetune-every", "finetune-top", "freeze-embed", "tr-init", "tr-novelty"}},
	{"Ablations (the paper's, and what the flow adds)", []string{"no-tacs", "no-flow"}},
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
and pmo presets decode until 100 candidates a trust region are new (pmo:
50), keep 40-60 % of them already seen (-tr-novelty 0.4,0.6) and draw
anchors and parents one per distinct score, and the pmo preset buys 100
molecules an iteration (10 × 10) and fine-tunes the flow on the newest 10
and the best 200 molecules (-finetune-top 200): better at PMO's budget, the
same scores at a fifth of the decoding at guacamol-500's (BENCHMARKS.md);
-candidate-target -1 -tr-novelty 0.8,0.95 -distinct-scores=false (and at
pmo -queries 100 -finetune-top 1000) restore the paper's.

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
