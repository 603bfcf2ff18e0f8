package optimize

import (
	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/fingerprint"
)

// The screened surrogate's inputs (Args.Features, -features).
const (
	// FeaturesTokens are SELFIES token and hashed bigram counts under a Matérn-5/2 kernel (bo.TokenFeatures).
	FeaturesTokens = "tokens"
	// FeaturesMorgan are Morgan count fingerprints (radius 2, 2048 buckets) under the Tanimoto kernel.
	FeaturesMorgan = "morgan"
	// FeaturesMorganTokens are both, one after the other, under the sum of a Tanimoto kernel on the fingerprints and
	// a Matérn-5/2 kernel on the token counts (gp.TanimotoMatern), weighed by the marginal likelihood: the
	// fingerprints' substructures with the token counts' atoms and rings (an isomer's formula, a ring count).
	FeaturesMorganTokens = "morgan+tokens"
)

// surrogateFeatures returns the bo.Featurizer of the named inputs for sequences of length t over a vocabulary of
// v tokens with stop id stop, or nil for token counts, which bo computes itself. Args.Config has checked the name
// and set the kernel that goes with it.
func surrogateFeatures(name string, t, v, stop int) bo.Featurizer {
	switch name {
	case FeaturesMorgan:
		return fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth)
	case FeaturesMorganTokens:
		return &morganTokens{fp: fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth), t: t, v: v, stop: stop}
	}
	return nil
}

// morganTokens is FeaturesMorganTokens' bo.Featurizer: a molecule's Morgan counts, then its token counts.
type morganTokens struct {
	fp         *fingerprint.Morgan
	t, v, stop int
}

func (m *morganTokens) Width() int { return m.fp.Width() + bo.TokenFeatureLen(m.v) }

func (m *morganTokens) Features(dst []float64, smiles []string, tokens []int) error {
	w, fw := m.Width(), m.fp.Width()
	for i, s := range smiles {
		row := dst[i*w : (i+1)*w]
		if err := m.fp.Counts(row[:fw], s); err != nil {
			return err
		}
		bo.TokenFeatures(row[fw:], tokens[i*m.t:(i+1)*m.t], m.t, m.v, m.stop)
	}
	return nil
}
