package bo

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo/gp"
)

// TestConfigVariantSettings: each variant takes its own settings and refuses the other's, naming them.
func TestConfigVariantSettings(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"reference", Config{Budget: 10, ReferenceSettings: ReferenceSettings{Sampler: SamplerPathwise}}, ""},
		{"screened", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{Offspring: 5}}, ""},
		{"screened with a sampler", Config{Budget: 10, Variant: Screened, ReferenceSettings: ReferenceSettings{Sampler: SamplerPathwise, InitEpochs: 3}}, "Sampler, InitEpochs: settings of the reference variant"},
		{"reference with offspring", Config{Budget: 10, ScreenedSettings: ScreenedSettings{Offspring: 5}}, "Offspring: settings of the screened variant"},
		{"no flow without offspring", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{NoFlow: true}}, "NoFlow needs Offspring"},
		{"symbol mutations", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{GraphMutation: true, SymbolMutations: 0.1}}, ""},
		{"symbol mutations without graphs", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{SymbolMutations: 0.1}}, "SymbolMutations = 0.1 needs GraphMutation"},
		{"fused rings", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{GraphMutation: true, FusedRings: true}}, ""},
		{"fused rings without graphs", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{FusedRings: true}}, "FusedRings needs GraphMutation"},
		{"symbol mutations above 1", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{GraphMutation: true, SymbolMutations: 2}}, "SymbolMutations = 2 outside [0, 1]"},
		{"negative spread", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{Spread: -0.5}}, "Spread = -0.5"},
		{"NaN spread", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{Spread: math.NaN()}}, "Spread = NaN"},
		{"reference with symbol mutations", Config{Budget: 10, ScreenedSettings: ScreenedSettings{SymbolMutations: 0.1}}, "SymbolMutations: settings of the screened variant"},
		{"unknown variant", Config{Budget: 10, Variant: 7}, "Variant = 7"},
		{"unknown inputs", Config{Budget: 10, Variant: Screened, ScreenedSettings: ScreenedSettings{Inputs: "ecfp"}}, `surrogate inputs "ecfp"`},
		{"reference with inputs", Config{Budget: 10, ScreenedSettings: ScreenedSettings{Inputs: InputsMorgan}}, "Inputs: settings of the screened variant"},
	}
	for _, c := range cases {
		r, err := c.cfg.Resolved(16)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		case err == nil && nonZeroFields(r.own()) == nil:
			t.Errorf("%s: nothing resolved", c.name)
		case err == nil && r.own() != r:
			t.Errorf("%s: the resolved configuration holds the other variant's settings: %+v", c.name, r)
		}
	}
}

// TestSameConfigBeforeSplit: a config.json written when Config filled both variants' defaults (InitEpochs 100
// in a screened run) describes the same run as the resolved configuration now.
func TestSameConfigBeforeSplit(t *testing.T) {
	for _, screen := range []Variant{Reference, Screened} {
		cfg, err := Config{Budget: 10, Variant: screen, RunDir: "a"}.Resolved(16)
		if err != nil {
			t.Fatal(err)
		}
		old := cfg
		old.InitEpochs, old.UpdateEpochs, old.BatchSize, old.MaxFitData = 100, 1, 128, 1000
		saved, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameConfig(saved, cfg); err != nil {
			t.Errorf("%v: %v", screen, err)
		}
		other := cfg
		other.Budget++
		if err := sameConfig(saved, other); err == nil {
			t.Errorf("%v: another budget taken for the same run", screen)
		}
	}
}

// TestSurrogateInputs: the inputs name the kernel, and a Problem that does not supply them is refused; the
// screened variant of guacamol-500 and pmo reads fingerprints and token counts, guacamol-10k token counts.
func TestSurrogateInputs(t *testing.T) {
	const v = 20
	tw := TokenFeatureLen(v)
	for _, c := range []struct {
		in     SurrogateInputs
		fw     int // Problem.Features' width; 0: none
		kernel gp.Kernel
		split  int
		bad    bool
	}{
		{"", 0, gp.Matern52, 0, false},
		{"", 64, gp.Matern52, 0, false}, // a caller's own vectors under Exact's kernel
		{InputsTokens, 0, gp.Matern52, 0, false},
		{InputsTokens, 64, 0, 0, true},
		{InputsMorgan, 64, gp.Tanimoto, 0, false},
		{InputsMorgan, 0, 0, 0, true},
		{InputsMorganTokens, 64 + tw, gp.TanimotoMatern, 64, false},
		{InputsMorganTokens, tw, 0, 0, true},
		{InputsMorganTokens, 0, 0, 0, true},
		{"ecfp", 64, 0, 0, true},
	} {
		got, err := c.in.exactConfig(gp.ExactConfig{}, c.fw, v)
		if c.bad {
			if err == nil {
				t.Errorf("inputs %q, features of width %d: accepted", c.in, c.fw)
			}
			continue
		}
		if err != nil || got.Kernel != c.kernel || got.Split != c.split {
			t.Errorf("inputs %q, features of width %d: kernel %v split %d, %v; want %v split %d", c.in, c.fw, got.Kernel, got.Split, err, c.kernel, c.split)
		}
	}
	for name, want := range map[string]SurrogateInputs{"guacamol-500": InputsMorganTokens, "pmo": InputsMorganTokens, "guacamol-10k": ""} {
		p, err := PresetByName(name)
		if err != nil {
			t.Fatal(err)
		}
		screened, err := p.VariantConfig(DefaultVariant)
		if err != nil || screened.Inputs != want {
			t.Errorf("preset %s, screened: inputs %q, %v; want %q", name, screened.Inputs, err, want)
		}
		ref, err := p.VariantConfig("reference")
		if err != nil || ref.Inputs != "" {
			t.Errorf("preset %s, reference: inputs %q, %v", name, ref.Inputs, err)
		}
	}
}

// TestPresetPaidInitial: PMO's 10,000 calls stay 10,000 whichever variant runs; the screened variant pays for 200
// of its 1,000 initial molecules (BENCHMARKS.md, "200 paid initial molecules"), the reference for all of them; the
// other presets' initial sets are the same for both.
func TestPresetPaidInitial(t *testing.T) {
	for _, c := range []struct {
		preset, variant string
		initial, budget int
	}{
		{"pmo", "screened", 200, 9800},
		{"pmo", "reference", 1000, 9000},
		{"guacamol-500", "screened", 100, 500},
		{"guacamol-10k", "screened", 10000, 10000},
	} {
		p, err := PresetByName(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		if n, b := p.PaidInitial(c.variant), p.PaidBudget(c.variant); n != c.initial || b != c.budget || n+b != p.InitialPoints+p.Config.Budget {
			t.Errorf("%s, %s: pays for %d initial molecules and %d calls of its own; want %d and %d", c.preset, c.variant, n, b, c.initial, c.budget)
		}
	}
}

// TestLegacyVariant: a config.json written when the variant was "Screen" (0 the reference, 1 the screened
// variant) reads as the same variant, and an unknown variant name is refused.
func TestLegacyVariant(t *testing.T) {
	for _, v := range []Variant{Reference, Screened} {
		cfg, err := Config{Budget: 10, Variant: v}.Resolved(16)
		if err != nil {
			t.Fatal(err)
		}
		saved, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		old := strings.Replace(string(saved), `"Variant":"`+v.String()+`"`, fmt.Sprintf(`"Screen":%d`, int(v)), 1)
		if old == string(saved) {
			t.Fatalf("%s: no Variant in %s", v, saved)
		}
		if err := sameConfig([]byte(old), cfg); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"Variant":"tokens"}`), &c); err == nil {
		t.Error(`Variant "tokens" was accepted`)
	}
}
