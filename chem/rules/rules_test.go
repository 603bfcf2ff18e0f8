package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadNames(t *testing.T) {
	if r, err := Load("default"); err != nil || r.IsZero() || !r.ClosedShell || r.MaxMW != 650 {
		t.Errorf("default: %+v, %v", r, err)
	}
	if r, err := Load(""); err != nil || r.String() != Default().String() {
		t.Errorf("empty spec: %v, %v, want the default", r, err)
	}
	if r, err := Load("none"); err != nil || !r.IsZero() || r.String() != "none" {
		t.Errorf("none: %+v, %v", r, err)
	}
	if got := Default().String(); got != "closed-shell, charges ±1 on N O (net ±1), MW 150-650, PAINS" {
		t.Errorf("Default().String() = %q", got)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"closed_shell": true, "elements": ["C", "N", "O"],
  "charges": {"elements": [], "max_abs_net": 0}, "max_ring_size": 7, "forbidden_smarts": ["[N+](=O)[O-]"],
  "catalogs": ["PAINS", "BRENK"], "max_sa": 5}`)
	r, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != "closed-shell, elements C N O, no formal charges, rings ≤ 7, 1 forbidden SMARTS, PAINS, BRENK, SA ≤ 5" {
		t.Errorf("String() = %q", got)
	}
	back, err := Parse("back", r.JSON())
	if err != nil || string(back.JSON()) != string(r.JSON()) {
		t.Errorf("JSON round trip: %s, %v", back.JSON(), err)
	}
	for name, c := range map[string]struct{ text, want string }{
		"unknown.json":  {"{\n  \"closed_shell\": true,\n  \"max_weight\": 500\n}", "unknown.json:3:"},
		"syntax.json":   {"{\n  \"closed_shell\": true,\n  \"min_mw\": ,\n}", "syntax.json:3:"},
		"type.json":     {"{\n\n  \"min_mw\": \"150\"\n}", "type.json:3:"},
		"trailing.json": {"{}\n{}\n", "data after"},
		"range.json":    {`{"min_mw": 500, "max_mw": 200}`, "min_mw 500 and max_mw 200"},
		"catalog.json":  {`{"catalogs": ["pains"]}`, `unknown "pains"`},
		"ring.json":     {`{"max_ring_size": 2}`, "max_ring_size 2"},
		"sa.json":       {`{"max_sa": 11}`, "max_sa 11"},
	} {
		_, err := Load(write(name, c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), `"default", "none" or a JSON file`) {
		t.Errorf("missing file: %v", err)
	}
}
