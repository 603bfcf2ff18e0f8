package objective

import (
	"context"
	"strings"
	"testing"
)

// TestCheckRules: the worker's "check" op against the rules it is given, molecule by molecule, and a rule set
// it cannot use refused before any molecule.
func TestCheckRules(t *testing.T) {
	pool := newTestRDKit(t, RDKitOptions{})
	rules := []byte(`{"closed_shell": true, "charges": {"elements": ["N", "O"], "max_abs_net": 1}, "min_mw": 150,
		"max_mw": 650, "catalogs": ["PAINS"], "forbidden_smarts": ["[N+](=O)[O-]"], "max_ring_size": 8}`)
	cases := []struct{ smiles, why string }{
		{"CC(C)Cc1ccc(cc1)C(C)C(=O)O", ""},     // ibuprofen
		{"C[N+](C)(C)CCCCCCCCCCCC", ""},        // a quaternary ammonium: +1 on N
		{"CCO", "molecular weight 46.1"},       // too small
		{"CCCCCCCCCCC[CH2]", "radical on C12"}, // a radical
		{"CCCCCCCCCCCC(=O)[O-].[Na+]", "formal charge +1 on Na"},
		{"CCCCCCCCCCCC[N+](C)(C)CCCCCC[N+](C)(C)C", "net charge +2"},
		{"c1ccccc1N=Nc1ccccc1", "alert: azo_A"}, // PAINS
		{"CCCCCCCCCCc1ccc(cc1)[N+](=O)[O-]", "forbidden SMARTS"},
		{"C1CCCCCCCCC1CCCCCC", "ring of 10 atoms"},
		{"C1CC", "invalid SMILES"},
	}
	smiles := make([]string, len(cases))
	for i, c := range cases {
		smiles[i] = c.smiles
	}
	why, err := pool.Check(context.Background(), rules, smiles)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if (c.why == "") != (why[i] == "") || !strings.Contains(why[i], c.why) {
			t.Errorf("%s: %q, want %q", c.smiles, why[i], c.why)
		}
	}
	if _, err := pool.Check(context.Background(), []byte(`{"forbidden_smarts": ["[C"]}`), nil); err == nil ||
		!strings.Contains(err.Error(), "invalid SMARTS") {
		t.Errorf("a bad SMARTS: %v", err)
	}
	if _, err := pool.Check(context.Background(), rules, nil); err != nil {
		t.Errorf("good rules, no molecules: %v", err)
	}
}
