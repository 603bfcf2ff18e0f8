package rules

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nfbo/nfbo/data"
)

// Alert is a structural alert of the generated list, data/rules/alerts.tsv: an alert of one of RDKit's
// catalogues or of nfbo's own, with how often molecules chemists made hold it.
type Alert struct {
	Catalogue, Name string
	SMARTS          string
	MinCount        int     // the alert needs at least that many matches
	ZINC, GuacaMol  float64 // fractions of ZINC250k's and GuacaMol 10k's molecules that hold it
	// Default says the alert is one of the default rules', and Reason why: ReasonRare, or why a chemist
	// rejects the group whatever its frequency (e.g. "mutagen: hydrazine"; REJECT in scripts/gen-rules.py).
	// Reason is "" when Default is false.
	Default bool
	Reason  string
}

// ReasonRare is the Reason of the default alerts that fewer than 0.1 % of both sets' molecules hold.
const ReasonRare = "rare"

// ID names the alert in rules (allow_alerts) and verdicts: "CATALOGUE:name", e.g. "NIH:peroxide".
func (a Alert) ID() string { return a.Catalogue + ":" + a.Name }

// GeneratedAlerts returns the alerts of data/rules/alerts.tsv, in its order.
func GeneratedAlerts() ([]Alert, error) {
	b, err := data.Rules("alerts.tsv")
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return parseAlerts(b)
}

// parseAlerts reads alerts.tsv: '#' comment lines, a header line, then a tab-separated row per alert.
func parseAlerts(b []byte) ([]Alert, error) {
	var out []Alert
	var col map[string]int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") || strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Split(text, "\t")
		if col == nil {
			col = map[string]int{}
			for i, h := range f {
				col[h] = i
			}
			for _, h := range []string{"catalogue", "name", "smarts", "min_count", "zinc250k_frequency", "guacamol10k_frequency", "default", "reason"} {
				if _, ok := col[h]; !ok {
					return nil, fmt.Errorf("rules: alerts.tsv:%d: no %s column", line, h)
				}
			}
			continue
		}
		if len(f) != len(col) {
			return nil, fmt.Errorf("rules: alerts.tsv:%d: %d fields, the header has %d", line, len(f), len(col))
		}
		a := Alert{Catalogue: f[col["catalogue"]], Name: f[col["name"]], SMARTS: f[col["smarts"]], Default: f[col["default"]] == "yes", Reason: f[col["reason"]]}
		if a.Default != (a.Reason != "") {
			return nil, fmt.Errorf("rules: alerts.tsv:%d: %s: default %q with reason %q: a default alert has a reason, no other", line, a.ID(), f[col["default"]], a.Reason)
		}
		var errs [3]error
		a.MinCount, errs[0] = strconv.Atoi(f[col["min_count"]])
		a.ZINC, errs[1] = strconv.ParseFloat(f[col["zinc250k_frequency"]], 64)
		a.GuacaMol, errs[2] = strconv.ParseFloat(f[col["guacamol10k_frequency"]], 64)
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("rules: alerts.tsv:%d: %w", line, err)
			}
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// The kinds of rule that Kind names.
const (
	KindAlerts = "alerts"              // an alert of a catalogue or of the generated list
	KindUnseen = "unseen environments" // an atom environment no real molecule holds
)

// Kind names the kind of rule a verdict of the RDKit worker's check breaks, for the optimiser's per-iteration
// count: KindAlerts, KindUnseen, or "" for any other rule.
func Kind(why string) string {
	switch {
	case strings.HasPrefix(why, "alert"):
		return KindAlerts
	case strings.HasPrefix(why, "unseen environment"):
		return KindUnseen
	}
	return ""
}

// Summarize counts the verdicts that break a rule and describes them by kind, the most common first, each
// with its first verdict: e.g. "alerts 15, as alert NIH:tertiary_halide_sulfate; other rules 4, as molecular
// weight 692.8 outside 150-650".
func Summarize(why []string) (n int, summary string) {
	type kind struct {
		name, first string
		n           int
	}
	var kinds []*kind
	for _, w := range why {
		if w == "" {
			continue
		}
		n++
		name := Kind(w)
		if name == "" {
			name = "other rules"
		}
		i := slices.IndexFunc(kinds, func(k *kind) bool { return k.name == name })
		if i < 0 {
			kinds = append(kinds, &kind{name: name, first: w})
			i = len(kinds) - 1
		}
		kinds[i].n++
	}
	slices.SortStableFunc(kinds, func(a, b *kind) int { return b.n - a.n })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d, as %s", k.name, k.n, k.first)
	}
	return n, strings.Join(parts, "; ")
}
