package bo

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/nfbo/nfbo/bo/gp"
)

// SurrogateUpdate says when the surrogate is trained.
type SurrogateUpdate int

const (
	// UpdateOnce trains the surrogate once, before the loop, as the reference code does.
	UpdateOnce SurrogateUpdate = iota
	// UpdateEveryIteration also trains it for UpdateEpochs after every iteration on the newest batch plus the
	// top TopK points, re-encoded with the current flow (the paper's Algorithm 1).
	UpdateEveryIteration
)

// ScreenKind says what the surrogate sees and when candidates are decoded.
type ScreenKind int

const (
	// ScreenLatent is the reference: the surrogate (LatentSettings.GP's deep-kernel SVGP) models the objective over
	// latents, Thompson sampling picks q of each anchor's C latent candidates, and only the picks are decoded;
	// picks that decode to invalid or already-seen molecules (by key) are dropped.
	ScreenLatent ScreenKind = iota
	// ScreenTokens decodes every latent candidate first, drops the invalid ones and those already seen (by key
	// and, with a Codec that is an Identifier, by identity: a molecule in another atom order is seen), adds
	// TokenSettings.Offspring children of the best molecules (Breeder), and lets an exact GP on token counts
	// (TokenFeatures), refitted on the data after every iteration, pick q new molecules per anchor by Thompson
	// sampling of the latent function. Every pick is a new valid molecule, and the surrogate never needs
	// re-encoding after a fine-tune, since its inputs do not depend on the flow.
	ScreenTokens
)

// String returns the kind's name.
func (k ScreenKind) String() string {
	if k == ScreenTokens {
		return "tokens"
	}
	return "latent"
}

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

	PerturbProb float64    // base per-dimension perturbation probability; if 0, the default is 0.1
	TACS        TACSConfig // TACS settings; TACS.Tau 0 turns it off (reference and paper use 400)
	Points      PointKind  // Sobol (default) or uniform points in the box
	TRRule      TRRule     // trust-region rule: novelty (default, reference) or TuRBO
	// NoveltyBand moves TRNovelty's thresholds; the zero value is the reference's (0.8, 0.95).
	NoveltyBand NoveltyBand `json:",omitzero"`

	TrainEvery     int // fine-tune the flow every TrainEvery new calls; if 0, the default is 200; negative: never
	FineTuneNewest int // newest points in the fine-tuning set; if 0, the default is 10
	TopK           int // best points in the fine-tuning (and update) set; if 0, the default is 1000

	Screen ScreenKind // the variant: ScreenLatent (reference) or ScreenTokens (screened), chosen once
	// Each variant's own settings, the other's left zero (Resolved refuses them). They are embedded so that
	// config.json stays one flat object, as it was before the split.
	LatentSettings
	TokenSettings

	TRInit float64 // initial trust-region length; if 0, TRLengthInit (0.8, the reference)

	MaxStale int    // stop (StatusConverged) after this many iterations without a new molecule; if 0, 50
	RunDir   string // if not empty, checkpoints go here and an existing checkpoint is resumed
}

// LatentSettings are the reference variant's (ScreenLatent) own settings: a deep-kernel SVGP over latents,
// trained before the loop and optionally after every iteration.
type LatentSettings struct {
	GP           gp.Config       // surrogate model settings
	Sampler      SamplerKind     // Thompson sampler: exact (default) or pathwise
	Update       SurrogateUpdate // UpdateOnce (default, reference code) or UpdateEveryIteration (paper)
	InitEpochs   int             // epochs of the initial surrogate fit; if 0, the default is 100
	UpdateEpochs int             // epochs per iteration with UpdateEveryIteration; if 0, the default is 1
	BatchSize    int             // surrogate minibatch; if 0, the default is 128
}

// TokenSettings are the screened variant's (ScreenTokens) own settings: an exact GP on token counts, refitted
// after every iteration, choosing among decoded candidates and GA children.
type TokenSettings struct {
	Offspring int // children of the best molecules added to each anchor's candidates
	// Library, if positive, adds to each anchor's candidates this many molecules of Problem.Library (a file of
	// molecules the user could buy or make): of LibrarySample×Library drawn at random each iteration, those most
	// similar to one of the best molecules (a different one per anchor). Scaffolds for the GP to screen that
	// neither the GA's children of the best molecules nor the flow's moves around them reach. A lever, not a
	// default.
	Library int `json:",omitempty"`
	// LibraryPicks (with Library) reserves this many of each anchor's picks for library molecules, chosen by
	// Thompson sampling among them, where the GP, which rates the GA's near copies of the best molecules higher,
	// would pick none: a share of the calls spent on other scaffolds. A lever, not a default.
	LibraryPicks int `json:",omitempty"`
	// NoFlow (with Offspring) proposes no latent candidates: the GP picks among the GA children alone, and the
	// flow is neither encoded, decoded nor fine-tuned. An ablation: what the flow adds.
	NoFlow bool `json:",omitempty"`
	// CandidateTarget, if positive, decodes each anchor's candidates a chunk at a time and stops once this many
	// were new molecules; 0 decodes all Candidates. A lever against decoding thousands of molecules already
	// seen (issue #32); the guacamol-500 and pmo presets' screened variant decodes until 100 are new (Preset.Screened).
	CandidateTarget int `json:",omitempty"`
	// SkipVariants drops a candidate whose variant key (VariantKeyer) is a paid molecule's once the objective has
	// shown itself blind to such variants: at least 10 paid pairs of variants, 90 % of them scored exactly alike.
	// Fingerprint objectives cannot tell stereo, charge or radical variants apart, and a run otherwise pays for
	// them by the thousand (issue #32: 63 % of a pmo run's calls on mestranol_similarity). A lever, not a default.
	SkipVariants bool `json:",omitempty"`
	// GraphCrossover makes the GA children's crossovers join fragments of the two parent molecules' graphs
	// (Crosser, which the Codec must implement: chem/graphga's cut at a single bond outside rings) rather than
	// cut and join their token sequences, whose tails change meaning in another context. The guacamol-500 and
	// pmo presets set it (Preset.Screened).
	GraphCrossover bool `json:",omitempty"`
	// CrossoverRings (with GraphCrossover) makes half the graph crossovers ring crossovers where both parents
	// have a ring to cut: two ring bonds cut in each, the parts joined at both cuts. Not a default.
	CrossoverRings bool `json:",omitempty"`
	// GraphMutation makes the GA children's mutations edits of the molecular graph (Mutator, which the Codec must
	// implement: chem/graphga's insert, delete or change an atom or bond, or close a ring) rather than one token
	// replaced, inserted or deleted; a child no graph edit can change takes the token mutation. The guacamol-500
	// and pmo presets set it (Preset.Screened).
	GraphMutation bool           `json:",omitempty"`
	MaxFitData    int            // the GP learns from at most this many points (best half, newest half); if 0, 1000
	Exact         gp.ExactConfig // the GP's settings; its kernel is the one Inputs names, where they name one
	// Inputs names what the GP reads (token counts, Morgan fingerprints, or both) and so its kernel; the
	// guacamol-500 and pmo presets read both (Preset.Screened).
	Inputs SurrogateInputs `json:",omitempty"`
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

// ScreenedPreset is a preset's own settings for the screened variant (Preset.Screened).
type ScreenedPreset struct {
	// PaidInitial is how many of the preset's initial molecules the screened variant pays for when they come
	// without scores (pmo's random ZINC molecules): the first PaidInitial, the calls they spare going to the
	// optimiser (Preset.PaidBudget). 0 keeps InitialPoints.
	PaidInitial     int
	Queries         int             // Config.Queries
	NoveltyBand     NoveltyBand     // Config.NoveltyBand
	CandidateTarget int             // TokenSettings.CandidateTarget
	DistinctScores  bool            // Config.DistinctScores
	Inputs          SurrogateInputs // TokenSettings.Inputs
	GraphCrossover  bool            // TokenSettings.GraphCrossover
	GraphMutation   bool            // TokenSettings.GraphMutation
}

// Presets returns the paper's settings: guacamol-500 (100 initial + 500 calls, 5 anchors × 10 queries,
// fine-tune every 10 calls), guacamol-10k (10,000 + 10,000, 10 × 100, every 200) and pmo (1,000 initial from
// ZINC + 9,000 calls, 10 × 100, every 200). The screened variant runs guacamol-500 and pmo with the novelty band
// (0.4, 0.6), decoding until 100 candidates a trust region are new, anchors and parents one per distinct
// score, a surrogate on Morgan fingerprints plus token counts, and GA children crossed and mutated as molecular
// graphs, and pmo with 10 queries a trust region (100 calls an iteration, 90 iterations where the paper's makes
// 9), paying for 200 of the 1,000 random initial molecules and making the other 800 calls itself: at pmo they
// raised AUC Top-10 on the pmo20 tasks measured; at guacamol-500 they keep the scores (3 seeds on guacamol7 and
// user2) at a fifth of the decoding, and the fingerprints and the graph GA's operators raise them (BENCHMARKS.md,
// "The pmo preset's screened settings", "One set of screened settings for guacamol-500 and pmo", "A surrogate on
// fingerprints", "GA children crossed as molecular graphs", "GA children mutated as molecular graphs" and "200
// paid initial molecules").
func Presets() []Preset {
	tacs := TACSConfig{Tau: 400}
	lean := ScreenedPreset{NoveltyBand: NoveltyBand{Shrink: 0.4, Grow: 0.6}, CandidateTarget: 100, DistinctScores: true,
		Inputs: InputsMorganTokens, GraphCrossover: true, GraphMutation: true}
	pmo := lean
	pmo.Queries = 10
	pmo.PaidInitial = 200
	return []Preset{
		{Name: "guacamol-500", InitialPoints: 100, Config: Config{Budget: 500, Anchors: 5, Queries: 10, TrainEvery: 10, TACS: tacs},
			Screened: lean},
		{Name: "guacamol-10k", InitialPoints: 10000, Config: Config{Budget: 10000, Anchors: 10, Queries: 100, TrainEvery: 200, TACS: tacs}},
		{Name: "pmo", InitialPoints: 1000, Config: Config{Budget: 9000, Anchors: 10, Queries: 100, TrainEvery: 200, TACS: tacs},
			Screened: pmo},
	}
}

// VariantConfig returns the preset's configuration under the named variant's rules (Config.WithVariant), with
// the preset's screened settings when the variant is the screened one.
func (p Preset) VariantConfig(variant string) (Config, error) {
	c, err := p.Config.WithVariant(variant)
	if err != nil || c.Screen != ScreenTokens {
		return c, err
	}
	sp := p.Screened
	if sp.Queries != 0 {
		c.Queries = sp.Queries
	}
	if sp.NoveltyBand != (NoveltyBand{}) {
		c.NoveltyBand = sp.NoveltyBand
	}
	if sp.CandidateTarget != 0 {
		c.CandidateTarget = sp.CandidateTarget
	}
	if sp.DistinctScores {
		c.DistinctScores = true
	}
	if sp.Inputs != "" {
		c.Inputs = sp.Inputs
	}
	if sp.GraphCrossover {
		c.GraphCrossover = true
	}
	if sp.GraphMutation {
		c.GraphMutation = true
	}
	return c, nil
}

// PaidInitial returns how many initial molecules a run of NF-BO's named variant pays for when they come without
// scores: the screened variant's own count (ScreenedPreset.PaidInitial), else InitialPoints.
func (p Preset) PaidInitial(variant string) int {
	if variant == "screened" && p.Screened.PaidInitial > 0 {
		return p.Screened.PaidInitial
	}
	return p.InitialPoints
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
	switch c.Screen {
	case ScreenLatent:
		if set := nonZeroFields(c.TokenSettings); len(set) > 0 {
			return c, fmt.Errorf("bo: config: %s: settings of the screened variant (ScreenTokens), given to the reference one", strings.Join(set, ", "))
		}
		def(&c.InitEpochs, 100)
		def(&c.UpdateEpochs, 1)
		def(&c.BatchSize, 128)
	case ScreenTokens:
		if set := nonZeroFields(c.LatentSettings); len(set) > 0 {
			return c, fmt.Errorf("bo: config: %s: settings of the reference variant (ScreenLatent), given to the screened one", strings.Join(set, ", "))
		}
		def(&c.MaxFitData, 1000)
		if _, err := ParseSurrogateInputs(string(c.Inputs)); err != nil {
			return c, fmt.Errorf("bo: config: %w", err)
		}
	default:
		return c, fmt.Errorf("bo: config: Screen = %d, want ScreenLatent or ScreenTokens", c.Screen)
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
	case c.Offspring < 0:
		return c, fmt.Errorf("bo: config: Offspring = %d < 0", c.Offspring)
	case c.Library < 0 || c.LibraryPicks < 0:
		return c, fmt.Errorf("bo: config: Library = %d or LibraryPicks = %d < 0", c.Library, c.LibraryPicks)
	case c.LibraryPicks > 0 && c.Library == 0:
		return c, fmt.Errorf("bo: config: LibraryPicks needs Library")
	case c.CandidateTarget < 0:
		return c, fmt.Errorf("bo: config: CandidateTarget = %d < 0", c.CandidateTarget)
	case c.CrossoverRings && !c.GraphCrossover:
		return c, fmt.Errorf("bo: config: CrossoverRings needs GraphCrossover")
	case c.NoFlow && c.Offspring <= 0:
		return c, fmt.Errorf("bo: config: NoFlow needs Offspring > 0: the GA children are then the only candidates")
	case c.NoveltyBand != (NoveltyBand{}) && !(0 <= c.NoveltyBand.Shrink && c.NoveltyBand.Shrink < c.NoveltyBand.Grow && c.NoveltyBand.Grow <= 1):
		return c, fmt.Errorf("bo: config: NoveltyBand %v: want 0 ≤ Shrink < Grow ≤ 1", c.NoveltyBand)
	case c.TRInit < 0:
		return c, fmt.Errorf("bo: config: TRInit = %v < 0", c.TRInit)
	}
	return c, nil
}

// Variants names the optimiser's rule sets, applied on top of a Preset by WithVariant: "reference" keeps the
// official code's rules (latent-space deep-kernel SVGP trained once, Thompson sampling before decoding), and
// "screened", the default, decodes first and lets an exact GP on token counts, refitted every iteration,
// choose among the decoded candidates and GA offspring of the best molecules (see ScreenTokens). BENCHMARKS.md
// has the measurements behind the default.
var Variants = []string{"screened", "reference"}

// DefaultVariant is the variant used when none is named.
const DefaultVariant = "screened"

// DefaultOffspring is the screened variant's number of GA children added to each anchor's candidates.
const DefaultOffspring = 200

// ScreenedCandidates is the screened variant's default number of latent candidates per trust region.
const ScreenedCandidates = 1000

// WithVariant returns c with the named variant's rules: the screened one fills its own settings where c leaves
// them zero. Settings given on purpose go on c after it, not before.
func (c Config) WithVariant(name string) (Config, error) {
	switch name {
	case "reference":
		c.Screen = ScreenLatent
	case "screened":
		c.Screen = ScreenTokens
		if c.Offspring == 0 {
			c.Offspring = DefaultOffspring
		}
		if c.Candidates == 0 {
			// Every candidate is decoded before selection: the reference's 10,000 per region would cost
			// minutes of decoding per iteration on a CPU, and most of them decode to molecules already seen.
			c.Candidates = ScreenedCandidates
		}
	default:
		return c, fmt.Errorf("bo: unknown variant %q (want screened or reference)", name)
	}
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

// nonZeroFields returns the names of the fields of the struct v that are not their zero value.
func nonZeroFields(v any) []string {
	rv := reflect.ValueOf(v)
	var set []string
	for i := range rv.NumField() {
		if !rv.Field(i).IsZero() {
			set = append(set, rv.Type().Field(i).Name)
		}
	}
	return set
}

// own returns c with the settings of the variant it does not use set to zero: config.json files written before
// the split hold both variants' resolved defaults (InitEpochs 100 in a screened run, MaxFitData 1000 in a
// reference one), and a resumed run compares them with its own.
func (c Config) own() Config {
	switch c.Screen {
	case ScreenLatent:
		c.TokenSettings = TokenSettings{}
	case ScreenTokens:
		c.LatentSettings = LatentSettings{}
	}
	return c
}
