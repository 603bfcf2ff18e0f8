package bo

import "math"

// TRRule selects how the trust-region length is updated after an iteration.
type TRRule int

const (
	// TRNovelty is the reference's rule (mlvlab/NFBO BO/optimizer.py): with r the fraction of the N·q proposals
	// that were not new molecules, the length grows ×1.2 when r > 0.95 and shrinks ÷1.2 when r < 0.8; it has
	// no bounds and never restarts. Config.NoveltyBand moves the two thresholds.
	TRNovelty TRRule = iota
	// TRTuRBO is TuRBO-1's success/failure rule (Eriksson et al. 2019, uber-research/TuRBO turbo_1.py).
	TRTuRBO
)

// String returns the rule's name.
func (r TRRule) String() string {
	if r == TRTuRBO {
		return "turbo"
	}
	return "novelty"
}

// Constants of the trust-region rules, each with its source.
const (
	TRLengthInit = 0.8 // initial length (NF-BO initializer.yaml tr_length; TuRBO length_init)

	noveltyGrow      = 1.2  // NF-BO optimizer.py: length *= 1.2 ...
	noveltyHighStale = 0.95 // ... when more than 95% of proposals were not new
	noveltyLowStale  = 0.8  // length /= 1.2 when fewer than 80% were not new

	TuRBOLengthMin = 1.0 / 128 // TuRBO length_min = 0.5^7
	TuRBOLengthMax = 1.6       // TuRBO length_max
	turboSuccTol   = 3         // TuRBO succtol
	turboImprove   = 1e-3      // TuRBO: success when max(y_new) > best + 1e-3·|best|
)

// TrustRegion is the trust-region state shared by all anchors.
type TrustRegion struct {
	Length    float64 // box half-width is 8·Length/2 in every latent dimension
	Successes int     // TuRBO: consecutive successful iterations
	Failures  int     // TuRBO: consecutive failed iterations
	Best      float64 // TuRBO: best value seen by the rule
	Restarts  int     // TuRBO: times the length fell below TuRBOLengthMin and was reset
}

// NewTrustRegion returns the initial state for data whose best value is best.
func NewTrustRegion(best float64) TrustRegion { return TrustRegion{Length: TRLengthInit, Best: best} }

// NoveltyBand holds TRNovelty's thresholds on the stale fraction r of the candidates examined: the length
// shrinks when r < Shrink (the box yields many new molecules: search closer) and grows when r > Grow (it yields
// few). The zero value is the reference's band, 0.8 and 0.95, which keeps most candidates stale: right for the
// reference, which decodes only its picks, wasteful for the screened variant, which decodes every candidate.
type NoveltyBand struct {
	Shrink, Grow float64
}

// Resolved returns the band with the reference's thresholds for a zero band.
func (b NoveltyBand) Resolved() NoveltyBand {
	if b == (NoveltyBand{}) {
		return NoveltyBand{Shrink: noveltyLowStale, Grow: noveltyHighStale}
	}
	return b
}

// Outcome is what an iteration tells the trust-region rule.
type Outcome struct {
	Proposed int     // N·q, the proposals made
	New      int     // proposals that were new, valid molecules (and were evaluated)
	BestNew  float64 // best score among the new ones; ignored when New is 0
	D        int     // latent dimension (TuRBO failure tolerance)
}

// UpdateTrustRegion returns the state after an iteration with outcome o under rule (TRNovelty with the
// thresholds of band). It does not modify s.
func UpdateTrustRegion(s TrustRegion, rule TRRule, band NoveltyBand, o Outcome) TrustRegion {
	if rule == TRTuRBO {
		return updateTuRBO(s, o)
	}
	stale := 1.0
	if o.Proposed > 0 {
		stale = 1 - float64(o.New)/float64(o.Proposed)
	}
	band = band.Resolved()
	switch {
	case stale > band.Grow:
		s.Length *= noveltyGrow
	case stale < band.Shrink:
		s.Length /= noveltyGrow
	}
	return s
}

func updateTuRBO(s TrustRegion, o Outcome) TrustRegion {
	q := float64(max(o.Proposed, 1))
	failTol := int(math.Ceil(max(4/q, float64(o.D)/q))) // TuRBO failtol = ceil(max(4/batch, dim/batch))
	if o.New > 0 && o.BestNew > s.Best+turboImprove*math.Abs(s.Best) {
		s.Successes++
		s.Failures = 0
	} else {
		s.Successes = 0
		s.Failures++
	}
	switch {
	case s.Successes == turboSuccTol:
		s.Length = min(2*s.Length, TuRBOLengthMax)
		s.Successes = 0
	case s.Failures == failTol:
		s.Length /= 2
		s.Failures = 0
	}
	if o.New > 0 && o.BestNew > s.Best {
		s.Best = o.BestNew
	}
	if s.Length < TuRBOLengthMin {
		s.Length = TRLengthInit
		s.Successes, s.Failures = 0, 0
		s.Restarts++
	}
	return s
}
