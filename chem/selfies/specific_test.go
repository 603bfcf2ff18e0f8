package selfies

import (
	"errors"
	"os"
	"testing"
)

const dataDir = "../../data"

// readCSV reads a CSV file with a header and returns its rows as maps.
func readCSV(t testing.TB, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open test data: %v", err)
	}
	defer f.Close()
	return readCSVFrom(t, path, f)
}

// TestSpecificCases runs the 69 exact cases of selfies v2.0.0
// tests/test_specific_cases.py, extracted into
// data/selfies_tests/selfies_v2.0.0_specific_cases.csv.
func TestSpecificCases(t *testing.T) {
	rows := readCSV(t, dataDir+"/selfies_tests/selfies_v2.0.0_specific_cases.csv")
	if len(rows) != 69 {
		t.Fatalf("got %d rows, want 69", len(rows))
	}
	for i, r := range rows {
		c, err := ParseConstraintOverrides(DefaultConstraints(), r["semantic_constraints"])
		if err != nil {
			t.Fatalf("row %d: constraints %q: %v", i+2, r["semantic_constraints"], err)
		}
		in, want := r["input"], r["expected"]
		switch r["mode"] {
		case "decode", "decode_compatible":
			d := NewDecoder(c)
			d.SetCompatible(r["mode"] == "decode_compatible")
			got, err := d.Decode(in)
			if err != nil || got != want {
				t.Errorf("row %d (%s): %s(%q) = %q, %v; want %q", i+2, r["test_function"], r["mode"], in, got, err, want)
			}
		case "encode":
			got, err := NewEncoder(c).Encode(in)
			if err != nil || got != want {
				t.Errorf("row %d (%s): encode(%q) = %q, %v; want %q", i+2, r["test_function"], in, got, err, want)
			}
		case "decode_error":
			got, err := NewDecoder(c).Decode(in)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Errorf("row %d (%s): decode(%q) = %q, %v; want a *DecodeError", i+2, r["test_function"], in, got, err)
			}
		default:
			t.Fatalf("row %d: unknown mode %q", i+2, r["mode"])
		}
	}
}
