package objective

import (
	"strings"
	"testing"
)

func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"0.5", 0.5}, {"-3", -3}, {"+.25", 0.25}, {"5.", 5}, {"1e-3", 1e-3}, {"2.5E+2", 250}, {"0", 0}, {"1e-400", 0},
	} {
		got, err := ParseScore(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseScore(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"":        `"" is not a number`,
		"abc":     `"abc" is not a number`,
		"1,5":     `"1,5" is not a number`,
		"NaN":     `"NaN" is not a finite number`,
		"-inf":    `"-inf" is not a finite number`,
		"1e400":   `"1e400" is not a finite number`,
		"0x1p-2":  `"0x1p-2" is not a decimal number`,
		"1_000":   `"1_000" is not a decimal number`,
		"1e":      `"1e" is not a number`,
		" 0.5":    `" 0.5" is not a number`,
		".":       `"." is not a number`,
		"0x10":    `"0x10" is not a number`,
		"1.5e+-3": `"1.5e+-3" is not a number`,
	} {
		_, err := ParseScore(in)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseScore(%q): error %v, want one starting %q", in, err, want)
		}
	}
}
