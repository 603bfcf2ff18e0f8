package bo

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConfigVariantSettings: each variant takes its own settings and refuses the other's, naming them.
func TestConfigVariantSettings(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"reference", Config{Budget: 10, LatentSettings: LatentSettings{Sampler: SamplerPathwise}}, ""},
		{"screened", Config{Budget: 10, Screen: ScreenTokens, TokenSettings: TokenSettings{Offspring: 5}}, ""},
		{"screened with a sampler", Config{Budget: 10, Screen: ScreenTokens, LatentSettings: LatentSettings{Sampler: SamplerPathwise, InitEpochs: 3}}, "Sampler, InitEpochs: settings of the reference variant"},
		{"reference with offspring", Config{Budget: 10, TokenSettings: TokenSettings{Offspring: 5}}, "Offspring: settings of the screened variant"},
		{"no flow without offspring", Config{Budget: 10, Screen: ScreenTokens, TokenSettings: TokenSettings{NoFlow: true}}, "NoFlow needs Offspring"},
		{"unknown screen", Config{Budget: 10, Screen: 7}, "Screen = 7"},
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
	for _, screen := range []ScreenKind{ScreenLatent, ScreenTokens} {
		cfg, err := Config{Budget: 10, Screen: screen, RunDir: "a"}.Resolved(16)
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
