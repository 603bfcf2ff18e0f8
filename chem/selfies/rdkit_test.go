package selfies

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/chemtest"
)

// needRDKit skips the test when RDKit is missing, or fails it under CI=true.
func needRDKit(t *testing.T) { chemtest.NeedRDKit(t) }

// runRDKit feeds lines to testdata/rdkit_check.py in one process and
// returns its answer lines.
func runRDKit(t *testing.T, mode string, lines []string) []string {
	t.Helper()
	return chemtest.RDKit(t, lines, filepath.Join("testdata", "rdkit_check.py"), mode)
}

// relaxedConstraints are the constraints selfies' own dataset round-trip
// test sets: hypervalent, P 7, P-1 8, P+1 6, "?" 12.
func relaxedConstraints(t testing.TB) Constraints {
	c, err := ParseConstraintOverrides(HypervalentConstraints(), "P=7;P-1=8;P+1=6;?=12")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadAllowlist reads testdata/roundtrip_allowlist.tsv: SMILES<TAB>reason,
// for molecules that selfies 2.0.0 itself does not round-trip.
func loadAllowlist(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "roundtrip_allowlist.tsv"))
	if err != nil {
		t.Fatalf("allowlist: %v", err)
	}
	m := make(map[string]string)
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		smi, reason, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("allowlist line %q: want SMILES<TAB>reason", line)
		}
		m[smi] = reason
	}
	return m
}

// TestRoundTripDatasets encodes and decodes every SMILES of the selfies
// v2.0.0 test sets (data/selfies_tests) under the relaxed constraints that
// upstream uses, and compares input and output as RDKit canonical SMILES,
// as upstream's test_roundtrip_translation does. Molecules RDKit cannot
// parse, or with '*', are skipped as upstream skips them.
func TestRoundTripDatasets(t *testing.T) {
	needRDKit(t)
	files, err := filepath.Glob(dataDir + "/selfies_tests/molnet/*.csv*")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{
		dataDir + "/selfies_tests/custom_cases.csv",
		dataDir + "/selfies_tests/qm9.csv.gz",
		dataDir + "/selfies_tests/nonfullerene.csv.gz",
	}, files...)
	allow := loadAllowlist(t)
	c := relaxedConstraints(t)
	total := 0
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			rows := readMaybeGz(t, path)
			enc, dec := NewEncoder(c), NewDecoder(c)
			lines := make([]string, 0, len(rows))
			errs := make(map[int]error)
			stride := 1
			if len(rows) > 1000 {
				stride = chemtest.Stride(t, 5)
			}
			for i, r := range rows {
				in := strings.TrimSpace(r["smiles"])
				if _, listed := allow[in]; i%stride != 0 && !listed {
					continue // a sample of the large sets; every allowlisted molecule
				}
				out := ""
				s, err := enc.Encode(in)
				if err == nil {
					out, err = dec.Decode(s)
				}
				if err != nil {
					errs[len(lines)] = err
					out = ""
				}
				lines = append(lines, in+"\t"+out)
			}
			res := runRDKit(t, "roundtrip", lines)
			checked, skipped, allowed := 0, 0, 0
			var fails []string
			for i, r := range res {
				in, _, _ := strings.Cut(lines[i], "\t")
				switch {
				case r == "skip":
					skipped++
					continue
				case r == "ok":
					checked++
					continue
				}
				checked++
				if reason, ok := allow[in]; ok {
					allowed++
					t.Logf("allowlisted %q: %s", in, reason)
					continue
				}
				if err := errs[i]; err != nil {
					fails = append(fails, in+": "+err.Error())
				} else {
					fails = append(fails, in+": "+r)
				}
			}
			sort.Strings(fails)
			for _, f := range fails {
				t.Errorf("round trip failed: %s", f)
			}
			t.Logf("%s: %d molecules checked, %d skipped (RDKit cannot parse, or '*'), %d allowlisted, %d failed, %v",
				name, checked, skipped, allowed, len(fails), time.Since(start).Round(time.Millisecond))
			total += checked
		})
	}
	t.Logf("total checked: %d", total)
}

// loadVocab returns the distinct SELFIES symbols of the named token files
// in data/vocab (one token per line; all files when none are named),
// without <start> and <stop>, sorted.
func loadVocab(t testing.TB, names ...string) []string {
	t.Helper()
	var files []string
	if len(names) == 0 {
		var err error
		files, err = filepath.Glob(dataDir + "/vocab/*.txt")
		if err != nil || len(files) == 0 {
			t.Fatalf("vocab files: %v (found %d)", err, len(files))
		}
	}
	for _, n := range names {
		files = append(files, dataDir+"/vocab/"+n)
	}
	seen := make(map[string]bool)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range strings.Split(string(b), "\n") {
			tok = strings.TrimSpace(tok)
			if tok == "" || tok == "<start>" || tok == "<stop>" || seen[tok] {
				continue
			}
			seen[tok] = true
			out = append(out, tok)
		}
	}
	sort.Strings(out)
	return out
}

// randomStrings draws n SELFIES strings of 1 to maxLen symbols from alphabet.
func randomStrings(alphabet []string, n, maxLen int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for range 1 + rng.IntN(maxLen) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

// TestRandomSelfiesValid decodes random strings over the semantic robust
// alphabet and checks that RDKit accepts every result, as selfies'
// test_random_selfies_decoder does. It also reports, without asserting, the
// rate for NF-BO's larger vocabulary, which includes symbols (charged
// halogens, Se, Si …) that the constraints do not cover, so some results
// are not valid molecules for RDKit.
func TestRandomSelfiesValid(t *testing.T) {
	needRDKit(t)
	n := 5000
	if testing.Short() {
		n = 500
	}
	for _, tc := range []struct {
		name     string
		alphabet []string
		strict   bool
	}{
		{"semantic-robust", SemanticRobustAlphabet(DefaultConstraints()), true},
		{"lolbo-vocab", loadVocab(t, "lolbo_selfies_vocab.txt"), false},
		// NF-BO appends [#SH1] to base + tail.
		{"nfbo-guacamol-vocab", append(loadVocab(t, "nfbo_guacamol_selfies_vocab_base.txt",
			"nfbo_guacamol_selfies_vocab_tail_unordered.txt"), "[#SH1]"), false},
		{"nfbo-zinc-vocab", append(loadVocab(t, "nfbo_zinc_selfies_vocab_base.txt",
			"nfbo_zinc_selfies_vocab_tail_unordered.txt"), "[#SH1]"), false},
		{"all-vocab-files", loadVocab(t), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := randomStrings(tc.alphabet, n, 100, 1)
			dec := NewDecoder(DefaultConstraints())
			out := make([]string, len(in))
			for i, s := range in {
				smi, err := dec.Decode(s)
				if err != nil {
					t.Fatalf("Decode(%q): %v", s, err)
				}
				out[i] = smi
			}
			res := runRDKit(t, "valid", out)
			bad := 0
			for i, r := range res {
				if r == "1" {
					continue
				}
				bad++
				if tc.strict {
					t.Errorf("RDKit rejects %q, decoded from %q", out[i], in[i])
				} else if bad <= 2 {
					t.Logf("example RDKit-invalid result: %q from %q", out[i], in[i])
				}
			}
			t.Logf("%s (%d symbols): %d random strings, %d RDKit-valid (%.2f%%)",
				tc.name, len(tc.alphabet), len(in), len(in)-bad, 100*float64(len(in)-bad)/float64(len(in)))
		})
	}
}
