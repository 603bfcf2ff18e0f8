package optimize

import (
	"errors"
	"flag"
	"fmt"
	"math"

	"github.com/nfbo/nfbo/bo"
)

// The variants' own flags (bo.Variant): each part defines its flags, checks their values, and sets them on the
// configuration, refusing them under the other variant.

// FrozenEmbeddings reports whether the run fine-tunes its flow with the token embeddings fixed: Args.FreezeEmbed
// if set, else true for the screened variant and false for the reference (whose code trains them). Fine-tuning
// as BO does pulls two tokens' embeddings together until the decoder cannot tell them apart (the shipped model:
// [C] and [Cl] after ~300 steps, a few hundred calls into a pmo run; BENCHMARKS.md), after which the flow
// proposes molecules with one of them as molecules with the other.
func (a Args) FrozenEmbeddings() bool {
	if a.FreezeEmbed != nil {
		return *a.FreezeEmbed
	}
	return a.Variant != bo.Reference.String()
}

// ReferenceArgs are the reference variant's own flags: its surrogate's sampler and training.
type ReferenceArgs struct {
	Sampler, Update string
}

// addFlags defines the reference variant's flags.
func (r *ReferenceArgs) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&r.Sampler, "sampler", "exact", "reference variant: the Thompson sampler, exact (Cholesky, the reference) or pathwise (approximate, faster)")
	fs.StringVar(&r.Update, "update", "once", "reference variant: surrogate training, once (before the loop, the reference code) or every (each iteration, the paper)")
}

// check checks the flags' values.
func (r ReferenceArgs) check() error {
	switch {
	case r.Sampler != "exact" && r.Sampler != "pathwise":
		return argErrorf("-sampler %q: want exact or pathwise", r.Sampler)
	case r.Update != "once" && r.Update != "every":
		return argErrorf("-update %q: want once or every", r.Update)
	}
	return nil
}

// apply sets the flags on cfg, which must then be the reference variant's when they change its defaults.
func (r ReferenceArgs) apply(cfg *bo.Config) error {
	if r.Sampler != "pathwise" && r.Update != "every" {
		return nil
	}
	if cfg.Variant != bo.Reference {
		return errors.New("-sampler and -update set the reference variant's surrogate: they need -variant reference")
	}
	if r.Sampler == "pathwise" {
		cfg.Sampler = bo.SamplerPathwise
	}
	if r.Update == "every" {
		cfg.Update = bo.UpdateEveryIteration
	}
	return nil
}

// ScreenedArgs are the screened variant's own flags: its GA children, decoding, surrogate inputs and the
// ablation without the flow.
type ScreenedArgs struct {
	Offspring int
	// CandidateTarget stops decoding an anchor's candidates once this many are new
	// (bo.ScreenedSettings.CandidateTarget); 0 keeps the preset's, -1 decodes them all.
	CandidateTarget int `json:",omitempty"`
	// NoFlow is the ablation without the flow: the GP screens GA children alone (bo.ScreenedSettings.NoFlow).
	NoFlow bool `json:",omitempty"`
	// Features names the screened surrogate's inputs (bo.SurrogateInputs): "tokens" for token counts, "morgan"
	// for Morgan count fingerprints (Tanimoto kernel), "morgan+tokens" for both (a Tanimoto kernel on the
	// fingerprints plus a Matérn kernel on the token counts, weighed by the marginal likelihood); "" means the
	// preset's.
	Features string `json:",omitempty"`
	// Spread scales the Thompson samples about the posterior mean (bo.ScreenedSettings.Spread); 0 keeps 1.
	Spread float64 `json:",omitempty"`
	// GPTargets is what the surrogate is fitted to: "scores" (or "", the default) or "ranks", the normal scores of
	// their ranks (bo.ScreenedSettings.RankTargets).
	GPTargets string `json:",omitempty"`
}

// addFlags defines the screened variant's flags.
func (s *ScreenedArgs) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.Offspring, "offspring", 0, "screened variant: GA children of the best molecules added to each trust region's candidates; "+
		"0 means the variant's default, -1 none")
	fs.IntVar(&s.CandidateTarget, "candidate-target", 0, "screened variant: decode each trust region's candidates a chunk at a time "+
		"and stop once `N` are new molecules; 0 means the preset's (guacamol-500 and pmo: 100; guacamol-10k decodes all), -1 decodes all of them")
	fs.StringVar(&s.Features, "features", "", "screened variant: the surrogate's inputs, tokens (SELFIES token counts, Matérn kernel) "+
		"morgan (Morgan count fingerprints, Tanimoto kernel) or morgan+tokens (both: Tanimoto plus Matérn kernel, weighed by the data); "+
		"empty means the preset's: morgan+tokens for guacamol-500 and pmo, tokens for guacamol-10k")
	fs.Float64Var(&s.Spread, "ts-spread", 0, "screened variant: scale the Thompson samples' deviations from the GP's posterior mean "+
		"by `A`: 1 (or 0) is Thompson sampling, below 1 greedier, above 1 more exploring")
	fs.StringVar(&s.GPTargets, "gp-targets", "", "screened variant: what the GP is fitted to, scores (the default) or ranks "+
		"(the normal scores of the scores' ranks: the GP learns their order, not their gaps; measured better at 100 + 500 on "+
		"multi-property objectives, worse on rediscoveries of a target, BENCHMARKS.md)")
	fs.BoolVar(&s.NoFlow, "no-flow", false, "ablation: no latent candidates, the GP picks among GA children alone and the flow is "+
		"never decoded nor fine-tuned (what the flow adds is the default's lead over this)")
}

// check checks the flags' values.
func (s ScreenedArgs) check() error {
	if s.Offspring < -1 {
		return argErrorf("-offspring must be -1 or more")
	}
	if !(s.Spread >= 0) || math.IsInf(s.Spread, 1) {
		return argErrorf("-ts-spread %v: want a finite value of 0 or more", s.Spread)
	}
	if s.GPTargets != "" && s.GPTargets != "scores" && s.GPTargets != "ranks" {
		return argErrorf("-gp-targets %q: want scores or ranks", s.GPTargets)
	}
	return nil
}

// apply sets the flags on cfg, which must then be the screened variant's when they are given.
func (s ScreenedArgs) apply(cfg *bo.Config) error {
	screened := cfg.Variant == bo.Screened
	switch {
	case s.Offspring > 0 && !screened:
		return errors.New("-offspring needs -variant screened")
	case s.Offspring > 0:
		cfg.Offspring = s.Offspring
	case s.Offspring == -1:
		cfg.Offspring = 0
	}
	switch {
	case s.CandidateTarget > 0 && !screened:
		return errors.New("-candidate-target needs -variant screened")
	case s.CandidateTarget > 0:
		cfg.CandidateTarget = s.CandidateTarget
	case s.CandidateTarget == -1:
		cfg.CandidateTarget = 0
	case s.CandidateTarget < -1:
		return fmt.Errorf("-candidate-target %d: want N > 0, 0 for the preset's or -1 to decode every candidate", s.CandidateTarget)
	}
	if s.Features != "" {
		in, err := bo.ParseSurrogateInputs(s.Features)
		if err != nil {
			return fmt.Errorf("-features %q: want %s, %s or %s", s.Features, bo.InputsTokens, bo.InputsMorgan, bo.InputsMorganTokens)
		}
		if !screened {
			return fmt.Errorf("-features %s needs -variant screened", s.Features)
		}
		cfg.Inputs = in
	}
	if s.Spread != 0 {
		if !screened {
			return errors.New("-ts-spread needs -variant screened")
		}
		cfg.Spread = s.Spread
	}
	if s.GPTargets != "" {
		if !screened {
			return fmt.Errorf("-gp-targets %s needs -variant screened", s.GPTargets)
		}
		cfg.RankTargets = s.GPTargets == "ranks"
	}
	if s.NoFlow {
		if !screened || cfg.Offspring == 0 {
			return errors.New("-no-flow needs -variant screened and GA children (-offspring not -1): they are its only candidates")
		}
		cfg.NoFlow = true
	}
	return nil
}

// applyChildren sets -crossover and -mutation, how GA children are made, on cfg: only the screened variant has
// GA children, and its crossovers are never ring crossovers (-crossover graph+rings is -method ga's; BENCHMARKS.md,
// "The optimiser's probes: kept or removed").
func (a OptimiserArgs) applyChildren(cfg *bo.Config) error {
	screened := cfg.Variant == bo.Screened
	if a.Crossover != "" {
		graph, rings := crossoverGraph(a.Crossover)
		switch {
		case rings:
			return fmt.Errorf("-crossover %s is -method ga's; NF-BO's GA children take graph or selfies", a.Crossover)
		case graph && !screened:
			return fmt.Errorf("-crossover %s needs -variant screened (the reference proposes no GA children)", a.Crossover)
		}
		cfg.GraphCrossover = graph
	}
	if a.Mutation != "" {
		m, _ := parseMutation(a.Mutation)
		if m.graph && !screened {
			return fmt.Errorf("-mutation %s needs -variant screened (the reference proposes no GA children)", a.Mutation)
		}
		cfg.GraphMutation, cfg.FusedRings, cfg.SymbolMutations = m.graph, m.fused, m.symbols
	}
	return nil
}

// describeProposals returns what the run's first line says of how candidates are decoded and screened, and of
// the GA children: the screened variant's settings, and the anchors' rule.
func describeProposals(cfg bo.Config, in bo.SurrogateInputs) (decoded, kids string) {
	if cfg.CandidateTarget > 0 {
		decoded = fmt.Sprintf(", decoded until %d are new", cfg.CandidateTarget)
	}
	if cfg.DistinctScores {
		decoded += ", anchors and parents one per distinct score"
	}
	switch in {
	case bo.InputsMorgan:
		decoded += ", surrogate on Morgan count fingerprints (Tanimoto kernel)"
	case bo.InputsMorganTokens:
		decoded += ", surrogate on Morgan count fingerprints (Tanimoto kernel) plus token counts (Matérn kernel)"
	default:
		if cfg.Variant == bo.Screened {
			decoded += ", surrogate on token counts"
		}
	}
	if cfg.Offspring > 0 {
		cross, mut := "SELFIES", "SELFIES"
		if cfg.GraphCrossover {
			cross = "graph"
		}
		if cfg.GraphMutation {
			mut = "graph"
		}
		if cfg.FusedRings {
			mut += " (fused ring closures too)"
		}
		if cfg.SymbolMutations > 0 {
			mut += fmt.Sprintf(" (SELFIES for %g %% of the children)", 100*cfg.SymbolMutations)
		}
		kids = fmt.Sprintf(": %s crossover, %s mutation", cross, mut)
	}
	return decoded, kids
}
