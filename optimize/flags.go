package optimize

import (
	"flag"
	"strconv"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/rules"
)

// AddFlags defines on fs the flags that make a run, each part its own (RunArgs, ObjectiveArgs, OptimiserArgs and
// in it the variants'): all of "nfbo optimize"'s but -out, -resume, -restart and -queue, which are the command's;
// optimize, ask and serve share them.
func (a *Args) AddFlags(fs *flag.FlagSet) {
	a.RunArgs.addFlags(fs)
	a.ObjectiveArgs.addFlags(fs)
	a.OptimiserArgs.addFlags(fs)
}

// addFlags defines the run's flags.
func (r *RunArgs) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&r.Init, "init", "", "initial molecules: a CSV (or tab-separated) `file` with a smiles (or smile) column, an SDF, or one SMILES per line (required)")
	fs.StringVar(&r.ScoreColumn, "score-column", "", "the column of -init (or SDF data item) that holds the initial molecules' scores; "+
		"default: the one named like -task. Without scores the initial molecules are scored by the objective and count as calls")
	fs.IntVar(&r.InitCount, "init-count", 0, "use the first `N` initial molecules; 0 means the preset's count (pmo: 1,000, of which NF-BO's screened variant pays for 200 when they have no scores)")
	fs.IntVar(&r.Budget, "budget", 0, "objective calls in all (distinct molecules), the scoring of initial molecules without scores included; 0 means the preset's (guacamol-500: 100 initial + 500 new)")
	fs.StringVar(&r.Model, "model", "", "model directory or checkpoint `file` (required)")
	fs.Uint64Var(&r.Seed, "seed", 1, "random seed; a run is reproducible given seed, data, model, flags and kernels (run.json's kernels: on other "+
		"BLAS kernels a run with the flow buys other molecules; OPENBLAS_CORETYPE chooses OpenBLAS's)")
	fs.StringVar(&r.Backend, "backend", "auto", "who runs the flow: auto (pure Go on x86-64 with AVX2, else ONNX Runtime when its library is found, else pure Go), go, ort or cuda (the GPU)")
	fs.StringVar(&r.Label, "label", "", "the method's name in run.json and reports (bench's -variant sets it); empty means derived from -method, -variant and -no-tacs")
	fs.StringVar(&r.Setting, "setting", "", "the setting the report files this run under; empty means INITIAL+CALLS, e.g. 100+500 "+
		"(bench passes 100+500 for guacamol7's valt, whose initial set holds two added molecules)")
}

// addFlags defines the objective's flags.
func (o *ObjectiveArgs) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Task, "task", "", "task name or alias (see \"nfbo tasks\"); passed through to -objective-cmd (required)")
	fs.StringVar(&o.ObjectiveCmd, "objective-cmd", "", "external objective program speaking docs/objective-protocol.md, "+
		"e.g. \"python3 oracle.py\" (split at spaces, no shell)")
	fs.IntVar(&o.Workers, "workers", 1, "objective worker processes")
	fs.IntVar(&o.RequestSize, "request-size", objective.DefaultChunkSize, requestSizeUsage)
	fs.StringVar(&o.Python, "python", objective.DefaultPython, "Python interpreter that can import RDKit")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "longest one request to an objective worker may take")
	fs.BoolVar(&o.Minimize, "minimize", false, "lower scores are better (a docking energy, the sa task): the optimiser maximises −score, "+
		"the log keeps the objective's scores, and reports rank by −score")
}

// requestSizeUsage is the help of -request-size, one of the objective's flags.
const requestSizeUsage = "the most molecules in one request to an objective worker (`N` at least 1); a crash or kill -9 " +
	"loses the answers to the requests in flight, at most N per worker, which -resume asks for again: 1 for an expensive objective"

// addFlags defines the optimiser's flags, the variants' among them.
func (o *OptimiserArgs) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Preset, "preset", "guacamol-500", "optimiser setting: guacamol-500, guacamol-10k or pmo")
	fs.StringVar(&o.Method, "method", "nfbo", "optimiser: nfbo, or a baseline in the same harness: prior (random samples from the flow's prior), "+
		"ga (a genetic algorithm on SELFIES symbols) or graph-ga (the graph GA with mol_opt's settings: population 120, 70 children a "+
		"generation, parents drawn by score, every child a graph crossover, half of them ring crossovers, mutated with probability "+
		"0.067, of 39.15 ± 3.5 heavy atoms; mol_opt starts it from 120 random ZINC molecules: -init-count 120)")
	fs.StringVar(&o.Variant, "variant", bo.DefaultVariant, "NF-BO's rules: screened (decode first; an exact GP on Morgan fingerprints and token counts (-features), refitted every iteration, "+
		"picks among decoded candidates and GA offspring) or reference (the official code's rules)")
	fs.StringVar(&o.Crossover, "crossover", "", "how GA children (the screened variant's, and -method ga's) start from two parents: "+
		"graph (a fragment of each molecular graph, cut at a single bond outside rings, joined), selfies (one-point crossover of "+
		"their SELFIES symbols) or, for -method ga only, graph+rings (half of them ring crossovers); empty means the preset's for NF-BO (graph with guacamol-500 and pmo) and selfies for -method ga")
	fs.StringVar(&o.Mutation, "mutation", "", "how GA children (the screened variant's, and -method ga's) mutate: selfies "+
		"(one SELFIES symbol replaced, inserted or deleted), graph (an atom or bond of the molecular graph inserted, deleted or "+
		"changed, or a ring closed), followed by any of +fused (ring closures onto the molecule's rings too: fused ring systems) and, "+
		"for NF-BO only, +selfies:P (a share P of the children mutated as SELFIES, whose alphabet reaches elements the graph edits "+
		"do not, such as phosphorus), e.g. graph+fused+selfies:0.1; empty means the preset's for NF-BO (graph with guacamol-500 and pmo) and selfies for -method ga")
	fs.IntVar(&o.FineTuneEvery, "finetune-every", 0, "fine-tune the flow every `N` new calls; 0 means the preset's (10 for guacamol-500), -1 never")
	fs.IntVar(&o.FineTuneTop, "finetune-top", 0, "fine-tune the flow on the newest 10 and the best `N` molecules (with -variant reference, its surrogate's update set too); 0 means the preset's (the pmo preset's screened variant: 200; otherwise 1,000)")
	fs.Float64Var(&o.TRInit, "tr-init", 0, "initial trust-region length; 0 means 0.8, the reference's")
	fs.StringVar(&o.TRNovelty, "tr-novelty", "", "the trust region's novelty rule, `SHRINK,GROW`: the box shrinks when fewer than SHRINK of the "+
		"candidates examined are molecules already seen, grows when more than GROW are; empty means the preset's (the guacamol-500 and pmo "+
		"presets' screened variant: 0.4,0.6; otherwise the reference's 0.8,0.95)")
	fs.StringVar(&o.AnchorRule, "anchor-rule", "minmax", "how anchors are drawn: minmax (the official code's softmax of min-max scaled scores) or raw (the paper's softmax of the scores)")
	fs.BoolFunc("distinct-scores", "draw the anchors and the GA children's parents one per distinct score, so that a plateau "+
		"of equal-score variants (stereo, charge, radicals) does not take them all (the default with the guacamol-500 and pmo presets' screened variant; "+
		"-distinct-scores=false draws them as the reference does)", func(s string) error {
		v, err := strconv.ParseBool(s)
		o.DistinctScores = &v
		return err
	})
	fs.StringVar(&o.Ties, "ties", "", "with -distinct-scores, which molecule of each score anchors and parents: first (the first found) "+
		"or draw (one drawn among them at every iteration, so that a family the objective scores equal is walked); empty means draw with the guacamol-500 and pmo presets' screened variant, first otherwise")
	fs.Float64Var(&o.AnchorTemp, "anchor-temp", 0, "the anchors' softmax temperature; 0 means the rule's (0.01 for minmax, 0.1 for raw), -1 greedy (the best points)")
	fs.BoolVar(&o.NoTACS, "no-tacs", false, "perturb every latent dimension with probability 0.1 instead of TACS")
	fs.BoolFunc("freeze-embed", "keep the flow's token embeddings fixed when it is fine-tuned (the default with -variant screened; "+
		"-freeze-embed=false trains them, as the reference does)", func(s string) error {
		v, err := strconv.ParseBool(s)
		o.FreezeEmbed = &v
		return err
	})
	fs.IntVar(&o.Candidates, "candidates", 0, "candidates per trust region; 0 means 1000 with -variant screened, min(50000, max(2000, 200·D))/anchors with reference")
	fs.IntVar(&o.Anchors, "anchors", 0, "trust regions per iteration; 0 means the preset's")
	fs.IntVar(&o.Queries, "queries", 0, "Thompson-sampled proposals per trust region; 0 means the preset's (the pmo preset's screened variant: 10)")
	fs.StringVar(&o.Rules, "rules", rules.DefaultName, "chemistry rules every proposed molecule keeps (never paid for otherwise): "+
		"default (closed-shell, formal charges only on N and O with net charge within ±1, MW 150-650, no PAINS alert, no alert "+
		"rare in real molecules or reactive (data/rules/alerts.tsv), no atom environment unseen in ZINC250k and GuacaMol 10k), "+
		"none, or a JSON `file` (see docs/USAGE.md, \"Chemistry rules\"); NF-BO's variants apply them, -method ga and prior do not")
	o.ReferenceArgs.addFlags(fs)
	o.ScreenedArgs.addFlags(fs)
}
