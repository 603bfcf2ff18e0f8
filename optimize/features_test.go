package optimize

import (
	"slices"
	"testing"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/fingerprint"
)

// TestMorganTokensFeatures: each row is the molecule's Morgan counts, then its token counts.
func TestMorganTokensFeatures(t *testing.T) {
	const tt, v, stop = 6, 5, 1
	f := surrogateFeatures(bo.InputsMorganTokens, tt, v, stop)
	smiles := []string{"CCO", "c1ccccc1"}
	tokens := []int{2, 2, 3, 1, 1, 1, 4, 4, 4, 4, 0, 1}
	fw := fingerprint.DefaultWidth
	if f.Width() != fw+bo.TokenFeatureLen(v) {
		t.Fatalf("width %d, want %d", f.Width(), fw+bo.TokenFeatureLen(v))
	}
	dst := make([]float64, 2*f.Width())
	if err := f.Features(dst, smiles, tokens); err != nil {
		t.Fatal(err)
	}
	m := fingerprint.NewMorgan(fingerprint.DefaultRadius, fw)
	for i, s := range smiles {
		want := make([]float64, fw)
		if err := m.Counts(want, s); err != nil {
			t.Fatal(err)
		}
		tok := make([]float64, bo.TokenFeatureLen(v))
		bo.TokenFeatures(tok, tokens[i*tt:(i+1)*tt], tt, v, stop)
		want = append(want, tok...)
		if got := dst[i*f.Width() : (i+1)*f.Width()]; !slices.Equal(got, want) {
			t.Errorf("%s: the row is not its Morgan counts and token counts", s)
		}
	}
}
