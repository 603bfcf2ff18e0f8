package smiles

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int // -1: no error
		want   string
	}{
		{"CCO", -1, ""},
		{"c1ccccc1[N+](=O)[O-]", -1, ""},
		{"", -1, ""},
		{"CCéN", 2, `non-ASCII character 'é' (U+00E9) at byte offset 2 of "CCéN"`},
		{"C\xff\xfeC", 1, `invalid UTF-8 byte 0xff at byte offset 1 of "C\xff\xfeC"`},
		{"C\x01\x1b[31mC", 1, `control character 0x01 at byte offset 1 of "C\x01\x1b[31mC"`},
		{"CC\x7f", 2, `control character 0x7f at byte offset 2`},
		{"CC\tO", 2, "control character 0x09"},
		{"C\u00a0C", 1, `non-ASCII character '\u00a0' (U+00A0)`},
	} {
		err := CheckText(tc.in)
		if tc.offset < 0 {
			if err != nil {
				t.Errorf("CheckText(%q) = %v, want nil", tc.in, err)
			}
			continue
		}
		var te *TextError
		if !errors.As(err, &te) || te.Offset != tc.offset {
			t.Errorf("CheckText(%q) = %v, want a *TextError at offset %d", tc.in, err, tc.offset)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckText(%q): %q lacks %q", tc.in, err, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("C\x1b[31m"); got != `"C\x1b[31m"` {
		t.Errorf("Quote of a control sequence = %s", got)
	}
	long := strings.Repeat("C", 1_000_000) + "X"
	got := Quote(long)
	if want := `"` + strings.Repeat("C", 80) + `"… (1000001 bytes)`; got != want {
		t.Errorf("Quote of 1 MB = %.120s…, want %s", got, want)
	}
	// A multi-byte character across the cut is kept whole or left out, never split into escapes.
	got = Quote(strings.Repeat("C", 79) + "é" + strings.Repeat("C", 10))
	if strings.Contains(got, `\x`) || !strings.HasSuffix(got, "(91 bytes)") {
		t.Errorf("Quote across a character: %s", got)
	}
	// The syntax error of a long input is one short line.
	_, err := Parse(strings.Repeat("C", 100000) + "X")
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("error of a 100 kB SMILES: %d bytes", len(err.Error()))
	}
}
