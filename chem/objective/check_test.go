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

// TestCheckGeneratedRules: the default rules' data-driven checks, on molecules an optimiser paid for under the
// former default rules (issue #57) and on molecules of ZINC250k and GuacaMol 10k, which hold no alert of the list
// and no unseen environment by construction; each check switched on alone.
func TestCheckGeneratedRules(t *testing.T) {
	pool := newTestRDKit(t, RDKitOptions{})
	ctx := context.Background()
	both := []byte(`{"alerts": true, "seen_environments": true}`)
	alerts := []byte(`{"alerts": true}`)
	// why is the verdict under both checks, which tries the environments first (the cheaper check); alert the one
	// under the alerts alone.
	unseen := "unseen environment at "
	paid := []struct{ smiles, why, alert string }{
		{"CCC1C(Br)N1CCOC(=O)C(=O)COC(=O)c1oc2ccccc2c1C", "alert NIH:alpha_halo_amine", "alert NIH:alpha_halo_amine"}, // a 2-bromoaziridine
		{"CCCCc1ccc(cc1)C(=O)Br", unseen, "alert NIH:carbonyl_halide"},                                                // an acyl bromide
		{"ClNCCCC1=CC(NC2CCCC2)[NH2+]CC=C1", unseen, "alert BRENK:N-halo"},
		{"CCOC(=O)c1ccc(cc1)C(=O)OCl", unseen, "alert NIH:halogen_heteroatom"}, // an acyl hypochlorite
		{"CC(C)(C)c1ccc2occ(CC(=O)Nc3ccccc3[Se]F)c2c1", unseen, "alert"},
	}
	real := []string{ // the first lines of ZINC250k and GuacaMol 10k
		"CC(C)(C)c1ccc2occ(CC(=O)Nc3ccccc3F)c2c1",
		"C[C@@H]1CC(Nc2cncc(-c3nncn3C)c2)C[C@@H](C)C1",
		"CCCN(CCc1cccc(-c2ccccc2)c1)C(=O)C1OC(C(=O)O)=CC(N)C1NC(C)=O",
		"Oc1ccc(C2CC(c3ccccc3)=NN2C(=S)Nc2ccccc2)cc1",
	}
	var smiles []string
	for _, c := range paid {
		smiles = append(smiles, c.smiles)
	}
	smiles = append(smiles, real...)
	why, err := pool.Check(ctx, both, smiles)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range paid {
		if !strings.HasPrefix(why[i], c.why) {
			t.Errorf("%s: %q, want %q", c.smiles, why[i], c.why)
		}
	}
	byAlert, err := pool.Check(ctx, alerts, smiles[:len(paid)])
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range paid {
		if !strings.HasPrefix(byAlert[i], c.alert) {
			t.Errorf("%s under the alerts alone: %q, want %q", c.smiles, byAlert[i], c.alert)
		}
	}
	for i, s := range real {
		if w := why[len(paid)+i]; w != "" {
			t.Errorf("%s (a molecule of the sets): %q, want none", s, w)
		}
	}
	// Each check alone, and an alert of the list allowed.
	for _, c := range []struct{ rules, smiles, want string }{
		{`{"seen_environments": true}`, "FS(F)C(SF)(SF)SF", "unseen environment at "}, // no real molecule has such a carbon
		{`{"seen_environments": true}`, paid[0].smiles, ""},                           // its atoms' environments are common: the alert catches it
		{`{"alerts": true}`, "FS(F)C(SF)(SF)SF", "alert NIH:halogen_heteroatom"},
		{`{"alerts": true}`, "O=C1OC(=O)c2ccccc21", "alert NIH:anhydride"}, // phthalic anhydride
		// nfbo's own alerts, on molecules the quick start paid for before they were rules: a cyclopentadiene fused
		// to a furan, and a dihydrobenzene; an aromatic ring and a steroid's cross-conjugated dienone are not alerts.
		{`{"alerts": true}`, "CCC1=C(COCCNS(=O)(=O)c2ccccc2Cl)OC2C=CC=C12", "alert NFBO:cyclopentadiene"},
		{`{"alerts": true}`, "CCC(=O)C1=CC(Nc2cc(F)cc(Br)c2)=CC1", "alert NFBO:cyclopentadiene"},
		{`{"alerts": true}`, "CC1=CC=CC(C(=O)NCc2ccccc2)C1", "alert NFBO:dihydrobenzene"},
		{`{"alerts": true}`, "Cc1cccc(C(=O)NCc2ccccc2)c1", ""},
		{`{"alerts": true}`, "CC12C=CC(=O)C=C1CCC1C2C(O)CC2(C)C1CCC2(O)C(=O)CO", ""}, // prednisolone
		{`{"alerts": true, "allow_alerts": ["NIH:anhydride", "ZINC:Acid_anhydrides"]}`, "O=C1OC(=O)c2ccccc21", ""},
		// Alerts of the hand-made list, frequent in the two sets, on molecules adip's runs paid for under the
		// rare alerts alone: a hydrazine, a hydroperoxide, a secondary alkyl chloride; osimertinib's acrylamide, a
		// covalent drug's warhead, is not one of them.
		{`{"alerts": true}`, "CC1=C(CC(=O)OC2CC(=O)N(C)C2)CNN1c1ccccc1Cl", "alert NIH:hydrazine"},
		{`{"alerts": true}`, "C=C(c1c(C)nn(-c2ccccc2Cl)c1CCC)C(OO)OC1CC(=O)N(C)C1", "alert NIH:peroxide"},
		{`{"alerts": true}`, "Cc1nn(-c2ccccc2Cl)c(C)c1CC(=O)OC1CN(C)C(=O)C1Cl", "alert NIH:alpha_halo_carbonyl"},
		{`{"alerts": true}`, "COc1cc(N(C)CCN(C)C)c(NC(=O)C=C)cc1Nc1nccc(-c2cn(C)c3ccccc23)n1", ""},
		// Nor momelotinib's N-cyanomethyl amide (NIH's cyanohydrin matches it), nor esomeprazole's sulfoxide
		// written with separated charges (BRENK's charged oxygen or sulfur matches it).
		{`{"alerts": true}`, "N#CCNC(=O)c1ccc(-c2ccnc(Nc3ccc(N4CCOCC4)cc3)n2)cc1", ""},
		{`{"alerts": true}`, "COc1ccc2[nH]c([S@@+]([O-])Cc3ncc(C)c(OC)c3C)nc2c1", ""},
		// An aryl dimethylphosphine oxide (brigatinib's group): unseen in the two sets, seen once a molecule
		// that holds it is given.
		{`{"seen_environments": true}`, "CNC(=O)c1ccc(P(C)(C)=O)cc1", "unseen environment at P"},
		{`{"seen_environments": true, "seen_molecules": ["CP(C)(=O)c1ccccc1"]}`, "CNC(=O)c1ccc(P(C)(C)=O)cc1", ""},
		{`{"seen_environments": true, "seen_molecules": ["CP(C)(=O)c1ccccc1"]}`, "FS(F)C(SF)(SF)SF", "unseen environment at "},
	} {
		why, err := pool.Check(ctx, []byte(c.rules), []string{c.smiles})
		if err != nil {
			t.Fatal(err)
		}
		if (c.want == "") != (why[0] == "") || !strings.HasPrefix(why[0], c.want) {
			t.Errorf("%s on %s: %q, want %q", c.rules, c.smiles, why[0], c.want)
		}
	}
	if _, err := pool.Check(ctx, []byte(`{"seen_environments": true, "seen_molecules": ["C1CC"]}`), nil); err == nil ||
		!strings.Contains(err.Error(), "seen_molecules[0]: invalid SMILES") {
		t.Errorf("an invalid seen molecule: %v", err)
	}
	if _, err := pool.Check(ctx, []byte(`{"alerts": true, "allow_alerts": ["NIH:no_such_alert"]}`), nil); err == nil ||
		!strings.Contains(err.Error(), "unknown alert") {
		t.Errorf("an unknown allowed alert: %v", err)
	}
}
