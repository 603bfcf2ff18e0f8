package bo

import (
	"fmt"
)

// PointKind selects the unit-cube points that fill the trust-region box.
type PointKind int

const (
	// PointsSobol uses a scrambled Sobol sequence, freshly scrambled at every iteration (the reference).
	PointsSobol PointKind = iota
	// PointsUniform uses independent uniform points.
	PointsUniform
)

// Config holds the optimiser's settings. Zero fields take the documented defaults, which are the reference's
// settings on its README command lines (10k budget). See Preset for the named settings of the paper.
type Config struct {
	Budget      int        // new objective calls; required
	Anchors     int        // N, trust regions per iteration; if 0, the default is 10
	Queries     int        // q, proposals per anchor; if 0, the default is 100
	Candidates  int        // C, candidates per anchor; if 0, the default is min(50000, max(2000, 200·D))/N
	Temperature float64    // anchor softmax temperature; if 0, AnchorRule's default (0.01 or 0.1); negative: greedy
	AnchorRule  AnchorRule // how anchors are drawn: the code's min-max rule (the zero value) or the paper's raw one
	// DistinctScores draws the anchors, and the GA children's parents, one per distinct score: once a point is
	// drawn, the points of equal score are not. Objectives that cannot tell stereo, charge or radical variants
	// apart score them equal, and a plateau of such variants otherwise takes every anchor and parent (issue
	// #32: a batch of 100 stalled on one on mestranol_similarity). Off (the reference's rule) in a Config; the
	// guacamol-500 and pmo presets' screened variant turns it on (Preset.Screened).
	DistinctScores bool `json:",omitempty"`
	// Ties says which points of equal score DistinctScores draws from (TieRule); the zero value, TiesFirst, takes
	// the first found (the presets' screened variant sets TiesDrawn).
	Ties TieRule `json:",omitempty"`

	PerturbProb float64    // base per-dimension perturbation probability; if 0, the default is 0.1
	TACS        TACSConfig // TACS settings; TACS.Tau 0 turns it off (reference and paper use 400)
	Points      PointKind  // Sobol (default) or uniform points in the box
	TRRule      TRRule     // trust-region rule: novelty (default, reference) or TuRBO
	// NoveltyBand moves TRNovelty's thresholds; the zero value is the reference's (0.8, 0.95).
	NoveltyBand NoveltyBand `json:",omitzero"`

	TrainEvery     int // fine-tune the flow every TrainEvery new calls; if 0, the default is 200; negative: never
	FineTuneNewest int // newest points in the fine-tuning set; if 0, the default is 10
	TopK           int // best points in the fine-tuning (and update) set; if 0, the default is 1000

	Variant Variant // the rules: Reference (the zero value) or Screened (the default of a preset's VariantConfig)
	// Each variant's own settings, the other's left zero (Resolved refuses them). They are embedded so that
	// config.json stays one flat object, as it was before the split.
	ReferenceSettings
	ScreenedSettings

	TRInit float64 // initial trust-region length; if 0, TRLengthInit (0.8, the reference)

	MaxStale int    // stop (StatusConverged) after this many iterations without a new molecule; if 0, 50
	RunDir   string // if not empty, checkpoints go here and an existing checkpoint is resumed
}

// Preset is a named experimental setting of the paper.
type Preset struct {
	Name          string
	InitialPoints int    // initial labelled points (first rows of the data file)
	Config        Config // the paper's setting, which the reference variant runs as it is
	// Screened holds what the screened variant (the default) runs differently from Config at this setting,
	// chosen by measurement (BENCHMARKS.md); its zero fields keep Config's.
	Screened ScreenedPreset
}

// Presets returns the paper's settings: guacamol-500 (100 initial + 500 calls, 5 anchors × 10 queries,
// fine-tune every 10 calls), guacamol-10k (10,000 + 10,000, 10 × 100, every 200) and pmo (1,000 initial from
// ZINC + 9,000 calls, 10 × 100, every 200). The screened variant runs guacamol-500 and pmo with the novelty band
// (0.4, 0.6), decoding until 100 candidates a trust region are new, anchors and parents one per distinct
// score (each score's molecule drawn among its equals, TiesDrawn), a surrogate on Morgan fingerprints plus token
// counts, and GA children crossed and mutated as molecular graphs, and pmo with 10 queries a trust region (100
// calls an iteration, 90 iterations where the paper's makes 9), paying for 200 of the 1,000 random initial
// molecules and making the other 800 calls itself, decoding until 50 candidates a trust region are new and
// fine-tuning the flow on the newest 10 and the best 200: at pmo they raised AUC Top-10 on the pmo20 tasks
// measured, the last two in about three fifths of the CPU time; at guacamol-500 they keep the scores (3 seeds on
// guacamol7 and user2) at a fifth of the decoding, and the fingerprints and the graph GA's operators raise them
// (BENCHMARKS.md, "The pmo preset's screened settings", "One set of screened settings for guacamol-500 and pmo",
// "A surrogate on fingerprints", "GA children crossed as molecular graphs", "GA children mutated as molecular
// graphs", "200 paid initial molecules", "Fine-tuned on the best 200" and "`-ties draw` under PMO's protocol:
// the twenty tasks").
func Presets() []Preset {
	tacs := TACSConfig{Tau: 400}
	lean := ScreenedPreset{NoveltyBand: NoveltyBand{Shrink: 0.4, Grow: 0.6}, CandidateTarget: 100, DistinctScores: true,
		Ties: TiesDrawn, Inputs: InputsMorganTokens, GraphCrossover: true, GraphMutation: true}
	pmo := lean
	pmo.Queries = 10
	pmo.PaidInitial = 200
	pmo.CandidateTarget = 50
	pmo.TopK = 200
	return []Preset{
		{Name: "guacamol-500", InitialPoints: 100, Config: Config{Budget: 500, Anchors: 5, Queries: 10, TrainEvery: 10, TACS: tacs},
			Screened: lean},
		{Name: "guacamol-10k", InitialPoints: 10000, Config: Config{Budget: 10000, Anchors: 10, Queries: 100, TrainEvery: 200, TACS: tacs}},
		{Name: "pmo", InitialPoints: 1000, Config: Config{Budget: 9000, Anchors: 10, Queries: 100, TrainEvery: 200, TACS: tacs},
			Screened: pmo},
	}
}

// VariantConfig returns the preset's configuration under the named variant's rules (Config.WithVariant), with
// what the preset runs differently under that variant (Preset.Screened for the screened one).
func (p Preset) VariantConfig(variant string) (Config, error) {
	c, err := p.Config.WithVariant(variant)
	if err != nil {
		return c, err
	}
	r, err := c.Variant.rules()
	if err != nil {
		return c, err
	}
	r.preset(&c, p)
	return c, nil
}

// PaidInitial returns how many initial molecules a run of NF-BO's named variant pays for when they come without
// scores: the variant's own count (the screened variant's ScreenedPreset.PaidInitial), else InitialPoints.
func (p Preset) PaidInitial(variant string) int {
	v, err := ParseVariant(variant)
	if err != nil {
		return p.InitialPoints
	}
	r, err := v.rules()
	if err != nil {
		return p.InitialPoints
	}
	return r.paidInitial(p)
}

// PaidBudget returns the optimiser's calls in a run of NF-BO's named variant that pays for its initial molecules
// (PaidInitial of them): Config.Budget and the calls its initial set spares of InitialPoints, so that every
// variant pays the preset's calls in all (pmo: PMO's 10,000).
func (p Preset) PaidBudget(variant string) int {
	return p.Config.Budget + p.InitialPoints - p.PaidInitial(variant)
}

// PresetByName returns the preset called name.
func PresetByName(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("bo: unknown preset %q (want guacamol-500, guacamol-10k or pmo)", name)
}

// Resolved returns c with every default filled in for latent size d (what the optimiser will use), or an
// error naming a setting out of range.
func (c Config) Resolved(d int) (Config, error) { return c.resolved(d) }

// resolved fills defaults for latent size d and checks the settings.
func (c Config) resolved(d int) (Config, error) {
	if c.Budget <= 0 {
		return c, fmt.Errorf("bo: config: Budget = %d, want > 0", c.Budget)
	}
	def := func(v *int, x int) {
		if *v == 0 {
			*v = x
		}
	}
	def(&c.Anchors, 10)
	def(&c.Queries, 100)
	def(&c.Candidates, min(50000, max(2000, 200*d))/c.Anchors)
	def(&c.TrainEvery, 200)
	def(&c.FineTuneNewest, 10)
	def(&c.TopK, 1000)
	def(&c.MaxStale, 50)
	if c.Ties != TiesFirst && !c.DistinctScores {
		return c, fmt.Errorf("bo: config: Ties = %v needs DistinctScores: without it every point of a score is drawn already", c.Ties)
	}
	r, err := c.Variant.rules()
	if err != nil {
		return c, err
	}
	if err := r.resolve(&c); err != nil {
		return c, err
	}
	if c.TRInit == 0 {
		c.TRInit = TRLengthInit
	}
	if c.Temperature == 0 {
		c.Temperature = c.AnchorRule.DefaultTemperature()
	}
	if c.PerturbProb == 0 {
		c.PerturbProb = 0.1
	}
	switch {
	case c.Anchors < 0 || c.Queries < 0 || c.Candidates < 0:
		return c, fmt.Errorf("bo: config: negative Anchors, Queries or Candidates")
	case c.Queries > c.Candidates:
		return c, fmt.Errorf("bo: config: Queries = %d > Candidates = %d per anchor", c.Queries, c.Candidates)
	case c.PerturbProb < 0 || c.PerturbProb > 1:
		return c, fmt.Errorf("bo: config: PerturbProb = %v outside [0, 1]", c.PerturbProb)
	case c.TACS.Tau < 0:
		return c, fmt.Errorf("bo: config: TACS.Tau = %v < 0", c.TACS.Tau)
	case c.NoveltyBand != (NoveltyBand{}) && !(0 <= c.NoveltyBand.Shrink && c.NoveltyBand.Shrink < c.NoveltyBand.Grow && c.NoveltyBand.Grow <= 1):
		return c, fmt.Errorf("bo: config: NoveltyBand %v: want 0 ≤ Shrink < Grow ≤ 1", c.NoveltyBand)
	case c.TRInit < 0:
		return c, fmt.Errorf("bo: config: TRInit = %v < 0", c.TRInit)
	}
	return c, nil
}

// WithVariant returns c with the named variant's rules: the variant fills its own settings where c leaves them
// zero. Settings given on purpose go on c after it, not before.
func (c Config) WithVariant(name string) (Config, error) {
	v, err := ParseVariant(name)
	if err != nil {
		return c, err
	}
	r, err := v.rules()
	if err != nil {
		return c, err
	}
	c.Variant = v
	r.withDefaults(&c)
	return c, nil
}

// Check reports the first problem NewOptimizer would find with c for a run from nInitial initial points in a
// latent space of size d = T·F, without a Problem: a command calls it before it pays for anything, so that a bad
// setting stops the run before the initial molecules are scored rather than after.
func (c Config) Check(nInitial, d int) error {
	r, err := c.resolved(d)
	if err != nil {
		return err
	}
	if r.Anchors > nInitial {
		return fmt.Errorf("bo: config: %d anchors but only %d initial points", r.Anchors, nInitial)
	}
	return nil
}

// own returns c with the settings of the variant it does not use set to zero: config.json files written before
// the split hold both variants' resolved defaults (InitEpochs 100 in a screened run, MaxFitData 1000 in a
// reference one), and a resumed run compares them with its own.
func (c Config) own() Config {
	if r, err := c.Variant.rules(); err == nil {
		r.own(&c)
	}
	return c
}
