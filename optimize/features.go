package optimize

import (
	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/fingerprint"
)

// surrogateInputs returns the inputs the run's surrogate reads: those its configuration names, or, for a
// configuration saved before the inputs had a name in it (bo.ScreenedSettings.Inputs ""), those of the run's flag
// (Args.Features), whose kernel that configuration holds already.
func surrogateInputs(cfg bo.Config, a Args) bo.SurrogateInputs {
	if cfg.Inputs == "" {
		return bo.SurrogateInputs(a.Features)
	}
	return cfg.Inputs
}

// surrogateFeatures returns the bo.Featurizer of the inputs in for sequences of length t over a vocabulary of v
// tokens with stop id stop, or nil for token counts, which bo computes itself.
func surrogateFeatures(in bo.SurrogateInputs, t, v, stop int) bo.Featurizer {
	switch in {
	case bo.InputsMorgan:
		return fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth)
	case bo.InputsMorganTokens:
		return &morganTokens{fp: fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth), t: t, v: v, stop: stop}
	}
	return nil
}

// morganTokens is bo.InputsMorganTokens' bo.Featurizer: a molecule's Morgan counts, then its token counts.
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
