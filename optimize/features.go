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
)

// surrogateFeatures returns the bo.Featurizer of the named inputs, or nil for token counts, which bo computes
// itself. Args.config has checked the name and set the kernel that goes with it.
func surrogateFeatures(name string) bo.Featurizer {
	if name == FeaturesMorgan {
		return fingerprint.NewMorgan(fingerprint.DefaultRadius, fingerprint.DefaultWidth)
	}
	return nil
}
