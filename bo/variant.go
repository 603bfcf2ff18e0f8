package bo

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Variant names one of the optimiser's rule sets, chosen once per run (Config.Variant). Each is a type of its
// own file that owns its settings, their defaults and checks, what it asks of the Problem, its proposer (steps
// 3-6 of an iteration and the surrogate's fit) and its per-iteration statistics: Reference in reference.go,
// Screened in screened.go.
type Variant int

const (
	// Reference is the official code's rules (ReferenceSettings): a deep-kernel SVGP over latents, Thompson
	// sampling before decoding. The zero value.
	Reference Variant = iota
	// Screened is the default (ScreenedSettings): every candidate decoded first, GA children beside the flow's
	// candidates, an exact GP on the molecules' features picking among the new valid ones.
	Screened
)

// Variants names the variants, the default first: "screened" (BENCHMARKS.md has the measurements behind the
// default) and "reference".
var Variants = []string{Screened.String(), Reference.String()}

// DefaultVariant is the variant used when none is named.
const DefaultVariant = "screened"

// String returns the variant's name: "screened" or "reference".
func (v Variant) String() string {
	switch v {
	case Reference:
		return "reference"
	case Screened:
		return "screened"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant returns the variant called name.
func ParseVariant(name string) (Variant, error) {
	for _, v := range []Variant{Screened, Reference} {
		if v.String() == name {
			return v, nil
		}
	}
	return 0, fmt.Errorf("bo: unknown variant %q (want screened or reference)", name)
}

// MarshalText writes the variant's name (config.json's "Variant").
func (v Variant) MarshalText() ([]byte, error) {
	if _, err := v.rules(); err != nil {
		return nil, err
	}
	return []byte(v.String()), nil
}

// UnmarshalText reads a variant's name.
func (v *Variant) UnmarshalText(b []byte) error {
	p, err := ParseVariant(string(b))
	*v = p
	return err
}

// variantRules is what Config and the Optimizer ask of the run's variant; referenceVariant and
// screenedVariant implement it, each reading and writing only its own settings besides the shared ones.
type variantRules interface {
	// withDefaults fills the variant's own defaults where c leaves them zero (Config.WithVariant).
	withDefaults(c *Config)
	// preset applies what the preset runs differently under this variant (Preset.Screened).
	preset(c *Config, p Preset)
	// paidInitial returns how many of the preset's initial molecules the variant pays for when they come
	// without scores.
	paidInitial(p Preset) int
	// resolve fills the variant's defaults for Config.resolved, checks its own settings, and refuses the other
	// variant's.
	resolve(c *Config) error
	// own sets the other variant's settings to zero.
	own(c *Config)
	// newProposer checks what the variant needs of o's Problem and returns its proposer and the surrogate it uses
	// when Problem.Surrogate is nil.
	newProposer(o *Optimizer) (proposer, Surrogate, error)
}

// rules returns the variant's implementation.
func (v Variant) rules() (variantRules, error) {
	switch v {
	case Reference:
		return referenceVariant{}, nil
	case Screened:
		return screenedVariant{}, nil
	}
	return nil, fmt.Errorf("bo: config: Variant = %d, want Reference or Screened", int(v))
}

// legacyVariant reads the variant of a config.json written before the variant had a name: its "Screen" was 0 for
// the reference and 1 for the screened variant. ok is false when saved has no such key.
func legacyVariant(saved []byte) (v Variant, ok bool) {
	var old struct{ Screen *int }
	if json.Unmarshal(saved, &old) != nil || old.Screen == nil {
		return 0, false
	}
	return Variant(*old.Screen), true
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
