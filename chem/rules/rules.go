// Package rules owns the chemistry rules: which molecules a chemist would make, and so which ones nfbo may
// propose. The screened optimiser decodes every candidate before it pays for one, so a molecule that breaks the
// rules is dropped before Thompson sampling and never costs a call.
//
// A rule set is JSON (a file given to -rules, and rules.json in a run directory):
//
//	{
//	  "closed_shell": true,                                  no radicals
//	  "elements": ["C", "N", "O", "S", "F", "Cl", "Br"],     only these elements (empty: any)
//	  "charges": {"elements": ["N", "O"], "max_abs_net": 1}, formal charges of ±1 only on these, net within ±1
//	                                                         (absent: any charges)
//	  "min_mw": 150, "max_mw": 650,                          molecular weight range (0: no bound)
//	  "min_heavy_atoms": 0, "max_heavy_atoms": 0,            heavy-atom range (0: no bound)
//	  "max_ring_size": 8,                                    largest ring (0: any)
//	  "required_smarts": ["c1ccccc1"],                       every pattern must match
//	  "forbidden_smarts": ["[N+](=O)[O-]"],                  no pattern may match
//	  "catalogs": ["PAINS", "BRENK"],                        RDKit's alert catalogues (PAINS, BRENK, NIH, ZINC)
//	  "alerts": true,                                        no alert of the generated list (below)
//	  "allow_alerts": ["NIH:anhydride"],                     alerts of that list not applied
//	  "seen_environments": true,                             every atom environment seen in real molecules
//	  "seen_molecules": ["CC1(C)OB(c2ccccc2)OC1(C)C"],       ... or in these
//	  "max_sa": 6                                            synthetic accessibility ceiling, 1-10 (0: none)
//	}
//
// The default rules' two data-driven checks come from molecules chemists made, ZINC250k and GuacaMol 10k
// (scripts/gen-rules.py writes both files, embedded in the binary by package data): "alerts" rejects a molecule
// that holds any structural alert of RDKit's NIH, BRENK and ZINC catalogues, or of nfbo's own (NFBO: rings an
// optimiser's moves make and real molecules almost never hold, a cyclopentadiene and a dihydrobenzene), that fewer
// than 0.1 % of either set's molecules hold, or that a chemist rejects on sight however often the sets hold it (a
// hydrazine, an aldehyde, an alkyl halide, an epoxide, ...: the list is made by hand); data/rules/alerts.tsv marks
// them default, with their frequencies and the reason, to review; and
// "seen_environments" rejects a molecule with an atom environment (Morgan radius 0 or 1) that no molecule of
// either set holds (data/rules/environments.txt.gz): the "never seen in a real molecule" check. A run's own
// initial molecules count as real molecules too (WithSeen): a series built on a core neither set holds is grown,
// not frozen.
//
// The rules are checked by the RDKit worker (chem/objective, op "check"), their one implementation.
package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Rules are a chemistry rule set. The zero value allows every valid molecule.
type Rules struct {
	ClosedShell     bool     `json:"closed_shell,omitempty"`
	Elements        []string `json:"elements,omitempty"`
	Charges         *Charges `json:"charges,omitempty"`
	MinMW           float64  `json:"min_mw,omitempty"`
	MaxMW           float64  `json:"max_mw,omitempty"`
	MinHeavyAtoms   int      `json:"min_heavy_atoms,omitempty"`
	MaxHeavyAtoms   int      `json:"max_heavy_atoms,omitempty"`
	MaxRingSize     int      `json:"max_ring_size,omitempty"`
	RequiredSMARTS  []string `json:"required_smarts,omitempty"`
	ForbiddenSMARTS []string `json:"forbidden_smarts,omitempty"`
	Catalogs        []string `json:"catalogs,omitempty"`
	// Alerts rejects the structural alerts of the generated list (DefaultAlerts), but those of AllowAlerts.
	Alerts      bool     `json:"alerts,omitempty"`
	AllowAlerts []string `json:"allow_alerts,omitempty"`
	// SeenEnvironments rejects a molecule with an atom environment no molecule of ZINC250k or GuacaMol 10k has,
	// nor any of SeenMolecules.
	SeenEnvironments bool `json:"seen_environments,omitempty"`
	// SeenMolecules (SMILES) count as real molecules for SeenEnvironments. The optimiser adds the run's
	// initial molecules that hold an environment of their own (WithSeen), so that their analogs may be proposed.
	SeenMolecules []string `json:"seen_molecules,omitempty"`
	MaxSA         float64  `json:"max_sa,omitempty"`
}

// Charges limit formal charges: only atoms of Elements may carry one, of ±1, and the molecule's net charge is
// within ±MaxAbsNet.
type Charges struct {
	Elements  []string `json:"elements"`
	MaxAbsNet int      `json:"max_abs_net"`
}

// The named rule sets that -rules takes besides a file.
const (
	// DefaultName is the rule set of user runs (optimize, ask, serve): Default.
	DefaultName = "default"
	// NoneName allows every valid molecule: the benchmark suites' setting, as published.
	NoneName = "none"
)

// Default returns the rules of user runs: closed-shell molecules, formal charges only on N and O with a net
// charge within ±1, molecular weight 150-650, no PAINS alert, no alert of the generated list and no atom
// environment unseen in real molecules.
func Default() Rules {
	return Rules{ClosedShell: true, Charges: &Charges{Elements: []string{"N", "O"}, MaxAbsNet: 1}, MinMW: 150, MaxMW: 650,
		Catalogs: []string{"PAINS"}, Alerts: true, SeenEnvironments: true}
}

// Catalogs are the alert catalogues the rules may name.
var catalogs = []string{"PAINS", "BRENK", "NIH", "ZINC"}

// IsZero reports whether r allows every valid molecule, so that nothing need be checked.
func (r Rules) IsZero() bool {
	b, _ := json.Marshal(r)
	return string(b) == "{}"
}

// Validate checks what can be checked without RDKit (the SMARTS are checked by the worker).
func (r Rules) Validate() error {
	switch {
	case r.MinMW < 0 || r.MaxMW < 0 || (r.MaxMW > 0 && r.MinMW > r.MaxMW):
		return fmt.Errorf("min_mw %g and max_mw %g: want 0 ≤ min ≤ max (0: no bound)", r.MinMW, r.MaxMW)
	case r.MinHeavyAtoms < 0 || r.MaxHeavyAtoms < 0 || (r.MaxHeavyAtoms > 0 && r.MinHeavyAtoms > r.MaxHeavyAtoms):
		return fmt.Errorf("min_heavy_atoms %d and max_heavy_atoms %d: want 0 ≤ min ≤ max (0: no bound)", r.MinHeavyAtoms, r.MaxHeavyAtoms)
	case r.MaxRingSize < 0 || (r.MaxRingSize > 0 && r.MaxRingSize < 3):
		return fmt.Errorf("max_ring_size %d: want 3 or more (0: any)", r.MaxRingSize)
	case r.MaxSA < 0 || r.MaxSA > 10:
		return fmt.Errorf("max_sa %g: want 1-10 (0: none)", r.MaxSA)
	case r.Charges != nil && r.Charges.MaxAbsNet < 0:
		return fmt.Errorf("charges.max_abs_net %d: want 0 or more", r.Charges.MaxAbsNet)
	case len(r.SeenMolecules) > 0 && !r.SeenEnvironments:
		return errors.New("seen_molecules without seen_environments: they only widen that rule")
	}
	for _, c := range r.Catalogs {
		if !slices.Contains(catalogs, c) {
			return fmt.Errorf("catalogs: unknown %q (want %s)", c, strings.Join(catalogs, ", "))
		}
	}
	if len(r.AllowAlerts) > 0 {
		all, err := GeneratedAlerts()
		if err != nil {
			return err
		}
		for _, id := range r.AllowAlerts {
			if !slices.ContainsFunc(all, func(a Alert) bool { return a.ID() == id && a.Default }) {
				return fmt.Errorf("allow_alerts: %q is no alert of the default list (data/rules/alerts.tsv, "+
					"default yes; written CATALOGUE:name)", id)
			}
		}
	}
	return nil
}

// WithSeen returns r with the molecules of seen added to SeenMolecules, once each, in order; r itself is
// unchanged.
func (r Rules) WithSeen(seen []string) Rules {
	have := make(map[string]bool, len(r.SeenMolecules)+len(seen))
	out := slices.Clone(r.SeenMolecules)
	for _, s := range out {
		have[s] = true
	}
	for _, s := range seen {
		if !have[s] {
			have[s] = true
			out = append(out, s)
		}
	}
	r.SeenMolecules = out
	return r
}

// JSON returns the rules as the worker and rules.json read them.
func (r Rules) JSON() json.RawMessage {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// String describes the rules in one line, e.g. "closed-shell, charges ±1 on N O (net ±1), MW 150-650, PAINS,
// alerts, seen environments".
func (r Rules) String() string {
	if r.IsZero() {
		return "none"
	}
	var p []string
	if r.ClosedShell {
		p = append(p, "closed-shell")
	}
	if len(r.Elements) > 0 {
		p = append(p, "elements "+strings.Join(r.Elements, " "))
	}
	if c := r.Charges; c != nil {
		if len(c.Elements) == 0 {
			p = append(p, "no formal charges")
		} else {
			p = append(p, fmt.Sprintf("charges ±1 on %s (net ±%d)", strings.Join(c.Elements, " "), c.MaxAbsNet))
		}
	}
	if r.MinMW > 0 || r.MaxMW > 0 {
		p = append(p, fmt.Sprintf("MW %s-%s", bound(r.MinMW), bound(r.MaxMW)))
	}
	if r.MinHeavyAtoms > 0 || r.MaxHeavyAtoms > 0 {
		p = append(p, fmt.Sprintf("heavy atoms %s-%s", bound(float64(r.MinHeavyAtoms)), bound(float64(r.MaxHeavyAtoms))))
	}
	if r.MaxRingSize > 0 {
		p = append(p, fmt.Sprintf("rings ≤ %d", r.MaxRingSize))
	}
	if n := len(r.RequiredSMARTS); n > 0 {
		p = append(p, fmt.Sprintf("%d required SMARTS", n))
	}
	if n := len(r.ForbiddenSMARTS); n > 0 {
		p = append(p, fmt.Sprintf("%d forbidden SMARTS", n))
	}
	p = append(p, r.Catalogs...)
	if r.Alerts {
		if n := len(r.AllowAlerts); n > 0 {
			p = append(p, fmt.Sprintf("alerts (%d allowed)", n))
		} else {
			p = append(p, "alerts")
		}
	}
	if r.SeenEnvironments {
		if n := len(r.SeenMolecules); n > 0 {
			p = append(p, fmt.Sprintf("seen environments (and %d molecules')", n))
		} else {
			p = append(p, "seen environments")
		}
	}
	if r.MaxSA > 0 {
		p = append(p, fmt.Sprintf("SA ≤ %g", r.MaxSA))
	}
	return strings.Join(p, ", ")
}

func bound(v float64) string {
	if v == 0 {
		return "any"
	}
	return fmt.Sprint(v)
}

// Load returns the rules that -rules names: DefaultName, NoneName, or a JSON file (unknown fields and trailing
// data are errors naming the file and line).
func Load(spec string) (Rules, error) {
	switch spec {
	case DefaultName, "":
		return Default(), nil
	case NoneName:
		return Rules{}, nil
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		return Rules{}, fmt.Errorf("rules: %w (want %q, %q or a JSON file)", err, DefaultName, NoneName)
	}
	return Parse(spec, b)
}

// Parse reads rules from the JSON data of the file name (for errors).
func Parse(name string, data []byte) (Rules, error) {
	var r Rules
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("rules: %s:%d: %w", name, lineOf(data, dec.InputOffset(), err), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Rules{}, fmt.Errorf("rules: %s:%d: data after the rules' JSON object", name, lineOf(data, dec.InputOffset(), nil))
	}
	if err := r.Validate(); err != nil {
		return Rules{}, fmt.Errorf("rules: %s: %w", name, err)
	}
	return r, nil
}

// lineOf returns the 1-based line of the error's offset in data (a syntax error's own offset when it has one).
func lineOf(data []byte, off int64, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
		// DisallowUnknownFields' error has no offset: find the field's name.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if i := bytes.Index(data, []byte(name)); i >= 0 {
			off = int64(i)
		}
	}
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
