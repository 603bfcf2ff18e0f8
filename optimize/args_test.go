package optimize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/fingerprint"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// args.json keeps -request-size, and one written before it was kept reads back with the size that run had.
func TestArgsRequestSize(t *testing.T) {
	dir := t.TempDir()
	a := Args{RunArgs: RunArgs{Init: "init.csv", Model: "model", Out: dir}, ObjectiveArgs: ObjectiveArgs{Task: "demo", Workers: 2, RequestSize: 1, Timeout: time.Minute}}
	if err := WriteArgs(a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != 1 {
		t.Errorf("RequestSize %d read back, want 1", got.RequestSize)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, rundir.ArgsFile), []byte(`{"Task": "demo", "Workers": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = ReadArgs(old)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != objective.DefaultChunkSize {
		t.Errorf("RequestSize %d read from an args.json without it, want %d", got.RequestSize, objective.DefaultChunkSize)
	}
}

// The flags go on the configuration after the variant's rules and the preset's screened settings: what a user
// gives is what the run gets, the preset fills only what the flags leave, and the flags can restore the paper's
// setting.
func TestConfigFlagsAfterVariant(t *testing.T) {
	pmo, err := bo.PresetByName("pmo")
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	band := bo.NoveltyBand{Shrink: 0.4, Grow: 0.6}
	for _, c := range []struct {
		name                 string
		a                    Args
		queries, cands, kids int
		target               int
		band                 bo.NoveltyBand
		distinct             bool
		ties                 bo.TieRule
	}{
		{"screened", Args{OptimiserArgs: OptimiserArgs{Variant: "screened"}}, 10, bo.ScreenedCandidates, bo.DefaultOffspring, 50, band, true, bo.TiesDrawn},
		{"screened, flags", Args{OptimiserArgs: OptimiserArgs{Variant: "screened", Queries: 20, Candidates: 300, TRNovelty: "0.3,0.7", DistinctScores: &yes, ScreenedArgs: ScreenedArgs{Offspring: 50, CandidateTarget: 50}}}, 20, 300, 50, 50, bo.NoveltyBand{Shrink: 0.3, Grow: 0.7}, true, bo.TiesDrawn},
		{"screened, the paper's batch", Args{OptimiserArgs: OptimiserArgs{Variant: "screened", Queries: 100, TRNovelty: "0.8,0.95", DistinctScores: &no, ScreenedArgs: ScreenedArgs{CandidateTarget: -1}}},
			100, bo.ScreenedCandidates, bo.DefaultOffspring, 0, bo.NoveltyBand{Shrink: 0.8, Grow: 0.95}, false, bo.TiesFirst},
		{"reference", Args{OptimiserArgs: OptimiserArgs{Variant: "reference"}}, pmo.Config.Queries, 0, 0, 0, bo.NoveltyBand{}, false, bo.TiesFirst},
		{"reference, distinct", Args{OptimiserArgs: OptimiserArgs{Variant: "reference", DistinctScores: &yes}}, pmo.Config.Queries, 0, 0, 0, bo.NoveltyBand{}, true, bo.TiesFirst},
	} {
		c.a.AnchorRule = "minmax" // the flag's default
		cfg, err := c.a.Config(pmo)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.Queries != c.queries || cfg.Candidates != c.cands || cfg.Offspring != c.kids || cfg.CandidateTarget != c.target ||
			cfg.NoveltyBand != c.band || cfg.DistinctScores != c.distinct || cfg.Ties != c.ties {
			t.Errorf("%s: queries %d, candidates %d, offspring %d, target %d, band %v, distinct %v, ties %v; want %d, %d, %d, %d, %v, %v, %v", c.name,
				cfg.Queries, cfg.Candidates, cfg.Offspring, cfg.CandidateTarget, cfg.NoveltyBand, cfg.DistinctScores, cfg.Ties,
				c.queries, c.cands, c.kids, c.target, c.band, c.distinct, c.ties)
		}
	}
	g500, err := bo.PresetByName("guacamol-500")
	if err != nil {
		t.Fatal(err)
	}
	// guacamol-500 shares the pmo preset's screened settings except its batch: 5 trust regions × 10 queries.
	if cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax"}}).Config(g500); err != nil || cfg.Anchors != 5 || cfg.Queries != 10 ||
		cfg.CandidateTarget != 100 || cfg.NoveltyBand != band || !cfg.DistinctScores {
		t.Errorf("guacamol-500, screened: %+v, %v; want the preset's own settings", cfg, err)
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{CandidateTarget: -2}}}).Config(pmo); err == nil {
		t.Error("-candidate-target -2 accepted")
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "reference", AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{CandidateTarget: 100}}}).Config(pmo); err == nil {
		t.Error("-candidate-target with the reference variant accepted")
	}
	// -features names the surrogate's inputs; "" keeps the preset's, and the featurizer goes with them.
	for _, c := range []struct {
		features string
		want     bo.SurrogateInputs
		fw       int // the featurizer's width; 0: none (bo computes token counts)
	}{{"", bo.InputsMorganTokens, fingerprint.DefaultWidth + bo.TokenFeatureLen(20)}, {"tokens", bo.InputsTokens, 0},
		{"morgan", bo.InputsMorgan, fingerprint.DefaultWidth}, {"morgan+tokens", bo.InputsMorganTokens, fingerprint.DefaultWidth + bo.TokenFeatureLen(20)}} {
		cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{Features: c.features}}}).Config(pmo)
		if err != nil || cfg.Inputs != c.want {
			t.Errorf("-features %q: inputs %q, %v; want %q", c.features, cfg.Inputs, err, c.want)
		}
		f := surrogateFeatures(surrogateInputs(cfg, Args{OptimiserArgs: OptimiserArgs{ScreenedArgs: ScreenedArgs{Features: c.features}}}), 8, 20, 1)
		w := 0
		if f != nil {
			w = f.Width()
		}
		if w != c.fw {
			t.Errorf("-features %q: featurizer %v, want width %d", c.features, f, c.fw)
		}
	}
	// A configuration saved before the inputs had a name keeps its kernel, and the run's flag names its inputs.
	if f := surrogateFeatures(surrogateInputs(bo.Config{}, Args{OptimiserArgs: OptimiserArgs{ScreenedArgs: ScreenedArgs{Features: "morgan"}}}), 8, 20, 1); f == nil || f.Width() != fingerprint.DefaultWidth {
		t.Errorf("a saved configuration without inputs, -features morgan: featurizer %v", f)
	}
	if f := surrogateFeatures(surrogateInputs(bo.Config{}, Args{}), 8, 20, 1); f != nil {
		t.Errorf("a saved configuration without inputs, no -features: featurizer %v, want token counts", f)
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{Features: "ecfp"}}}).Config(pmo); err == nil {
		t.Error("-features ecfp accepted")
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "reference", AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{Features: "morgan"}}}).Config(pmo); err == nil {
		t.Error("-features morgan with the reference variant accepted")
	}
	// -gp-targets: scores (or empty) fits the scores, ranks their normal scores; anything else, or ranks under the
	// reference variant, is refused.
	for _, c := range []struct {
		variant, targets string
		ranks, ok        bool
	}{{"screened", "", false, true}, {"screened", "scores", false, true}, {"screened", "ranks", true, true},
		{"screened", "quantiles", false, false}, {"reference", "ranks", false, false}, {"reference", "scores", false, false}} {
		a := Args{OptimiserArgs: OptimiserArgs{Variant: c.variant, AnchorRule: "minmax", ScreenedArgs: ScreenedArgs{GPTargets: c.targets}}}
		if err := a.ScreenedArgs.check(); err != nil {
			if c.ok {
				t.Errorf("-variant %s -gp-targets %q: %v", c.variant, c.targets, err)
			}
			continue
		}
		cfg, err := a.Config(pmo)
		if (err == nil) != c.ok || err == nil && cfg.RankTargets != c.ranks {
			t.Errorf("-variant %s -gp-targets %q: RankTargets %v, %v; want %v, ok %v", c.variant, c.targets, cfg.RankTargets, err, c.ranks, c.ok)
		}
	}
}

// -finetune-every and -finetune-top set what the flow is fine-tuned on and how often; 0 keeps the preset's,
// and a negative count of best molecules is refused.
func TestConfigFineTuneFlags(t *testing.T) {
	pmo, err := bo.PresetByName("pmo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		every, top       int
		wantEvery, wantK int
	}{{0, 0, 200, 200}, {400, 0, 400, 200}, {0, 1000, 200, 1000}, {-1, 50, -1, 50}} {
		a := Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", FineTuneEvery: c.every, FineTuneTop: c.top}}
		cfg, err := a.Config(pmo)
		if err != nil {
			t.Fatalf("-finetune-every %d -finetune-top %d: %v", c.every, c.top, err)
		}
		if cfg, err = cfg.Resolved(16); err != nil {
			t.Fatal(err)
		}
		if cfg.TrainEvery != c.wantEvery || cfg.TopK != c.wantK {
			t.Errorf("-finetune-every %d -finetune-top %d: TrainEvery %d, TopK %d; want %d, %d", c.every, c.top,
				cfg.TrainEvery, cfg.TopK, c.wantEvery, c.wantK)
		}
	}
	a := Args{RunArgs: RunArgs{Init: "init.csv", Model: "model"}, ObjectiveArgs: ObjectiveArgs{Task: "demo", Workers: 1, RequestSize: 1, Timeout: time.Minute},
		OptimiserArgs: OptimiserArgs{Method: "nfbo", AnchorRule: "minmax", FineTuneTop: -1}}
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "-finetune-top") {
		t.Errorf("-finetune-top -1: %v, want an error naming the flag", err)
	}
}

// GA children's operators: the presets' screened variant crosses and mutates them as graphs, the flags restore the
// symbols' operators, and the reference variant has no GA children.
func TestConfigGAOperators(t *testing.T) {
	pmo, err := bo.PresetByName("pmo")
	if err != nil {
		t.Fatal(err)
	}
	// The presets' screened variant crosses GA children as graphs; -crossover selfies restores the symbols'
	// crossover; the reference has no GA children to cross, and ring crossovers are -method ga's.
	for _, c := range []struct {
		crossover string
		want      bool
	}{{"", true}, {"selfies", false}, {"graph", true}} {
		cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", Crossover: c.crossover}}).Config(pmo)
		if err != nil || cfg.GraphCrossover != c.want {
			t.Errorf("-crossover %q: GraphCrossover %v, %v; want %v", c.crossover, cfg.GraphCrossover, err, c.want)
		}
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", Crossover: "graph+rings"}}).Config(pmo); err == nil || !strings.Contains(err.Error(), "-method ga") {
		t.Errorf("-crossover graph+rings with NF-BO: %v; want an error naming -method ga", err)
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "reference", AnchorRule: "minmax", Crossover: "graph"}}).Config(pmo); err == nil {
		t.Error("-crossover graph with the reference variant accepted")
	}
	ok := Args{RunArgs: RunArgs{Init: "i", Model: "m"}, ObjectiveArgs: ObjectiveArgs{Task: "t", Timeout: time.Minute, Workers: 1, RequestSize: 1}, OptimiserArgs: OptimiserArgs{Method: "nfbo", AnchorRule: "minmax", ReferenceArgs: ReferenceArgs{Sampler: "exact", Update: "once"}}}
	bad := ok
	bad.Crossover = "ring"
	if err := ok.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), `-crossover "ring"`) {
		t.Errorf("-crossover ring: %v, want an error naming it", err)
	}
	// The presets' screened variant mutates GA children as graphs; -mutation selfies restores the symbols'
	// mutation; the reference has no GA children to mutate.
	for _, c := range []struct {
		mutation string
		want     bool
	}{{"", true}, {"selfies", false}, {"graph", true}} {
		cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", Mutation: c.mutation}}).Config(pmo)
		if err != nil || cfg.GraphMutation != c.want {
			t.Errorf("-mutation %q: GraphMutation %v, %v; want %v", c.mutation, cfg.GraphMutation, err, c.want)
		}
	}
	if _, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "reference", AnchorRule: "minmax", Mutation: "graph"}}).Config(pmo); err == nil {
		t.Error("-mutation graph with the reference variant accepted")
	}
	// graph+selfies:P mutates a share P of the screened variant's children as symbols, the rest as graphs.
	cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", Mutation: "graph+selfies:0.1"}}).Config(pmo)
	if err != nil || !cfg.GraphMutation || cfg.SymbolMutations != 0.1 {
		t.Errorf("-mutation graph+selfies:0.1: GraphMutation %v, SymbolMutations %v, %v", cfg.GraphMutation, cfg.SymbolMutations, err)
	}
	// +fused asks for fused ring closures, beside a symbol share or not, in either order.
	for _, m := range []string{"graph+fused", "graph+fused+selfies:0.1", "graph+selfies:0.1+fused"} {
		cfg, err := (Args{OptimiserArgs: OptimiserArgs{Variant: "screened", AnchorRule: "minmax", Mutation: m}}).Config(pmo)
		want := map[bool]float64{false: 0, true: 0.1}[strings.Contains(m, "selfies")]
		if err != nil || !cfg.GraphMutation || !cfg.FusedRings || cfg.SymbolMutations != want {
			t.Errorf("-mutation %s: GraphMutation %v, FusedRings %v, SymbolMutations %v, %v", m, cfg.GraphMutation, cfg.FusedRings, cfg.SymbolMutations, err)
		}
	}
	for _, m := range []string{"atoms", "graph+selfies:0", "graph+selfies:1", "graph+selfies:-0.1", "graph+selfies:x", "graph+selfies",
		"fused", "graph+fused+fused", "graph+selfies:0.1+selfies:0.2", "graph+", "selfies+fused"} {
		bad = ok
		bad.Mutation = m
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("-mutation %q", m)) {
			t.Errorf("-mutation %s: %v, want an error naming it", m, err)
		}
	}
	bad = ok
	bad.Method, bad.Mutation = "ga", "graph+selfies:0.1"
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "-method ga") {
		t.Errorf("-method ga -mutation graph+selfies:0.1: %v, want an error", err)
	}
	bad.Mutation = "graph+fused"
	if err := bad.Check(); err != nil {
		t.Errorf("-method ga -mutation graph+fused: %v", err)
	}
}
