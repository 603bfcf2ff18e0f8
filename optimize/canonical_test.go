package optimize

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// mapCanonicalizer canonicalises from a table and records what it was asked.
type mapCanonicalizer struct {
	table map[string]string
	asked []string
}

func (m *mapCanonicalizer) Canonicalize(_ context.Context, smiles []string, _ bool) ([]objective.Canonical, error) {
	m.asked = append(m.asked, smiles...)
	out := make([]objective.Canonical, len(smiles))
	for i, s := range smiles {
		out[i].SMILES = m.table[s]
	}
	return out, nil
}

// TestCanonicalSMILESListing checks where the listing's SMILES come from: a paid molecule's canonical form
// from the evaluation log, without asking RDKit; the others from the canonicaliser; a molecule neither knows
// (or a log with no canonical field) keeps its key.
func TestCanonicalSMILESListing(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	for i, r := range [][2]string{{"C1=CC=CC=C1", "c1ccccc1"}, {"CC", ""}} {
		line, _ := json.Marshal(rundir.Record{Call: i + 1, SMILES: r[0], Canonical: r[1], Time: time.Unix(0, 0).UTC()})
		log = append(append(log, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.EvalLogFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	canon := &mapCanonicalizer{table: map[string]string{"[NH1]1C=CC=C1": "c1cc[nH]c1", "CC": "CC"}}
	keys := []string{"[NH1]1C=CC=C1", "C1=CC=CC=C1", "C1=CC=N1", "CC"}
	got := canonicalSMILES(context.Background(), canon, dir, keys)
	if want := []string{"c1cc[nH]c1", "c1ccccc1", "C1=CC=N1", "CC"}; !slices.Equal(got, want) {
		t.Errorf("listing %q, want %q", got, want)
	}
	if want := []string{"[NH1]1C=CC=C1", "C1=CC=N1", "CC"}; !slices.Equal(canon.asked, want) {
		t.Errorf("canonicaliser asked for %q, want %q (not the logged molecule)", canon.asked, want)
	}
	// No log, no canonicaliser: the keys.
	if got := canonicalSMILES(context.Background(), nil, t.TempDir(), keys); !slices.Equal(got, keys) {
		t.Errorf("without log or canonicaliser: %q, want the keys", got)
	}
}

// With -objective-cmd, -timeout is the user's program's: the RDKit canonicaliser beside it starts under its own
// default, however short -timeout is (a 1 s -timeout killed it while it imported RDKit on a loaded machine).
func TestObjectiveCmdTimeoutSparesCanonicalizer(t *testing.T) {
	warnings := 0
	a := Args{ObjectiveArgs: ObjectiveArgs{Task: "demo", ObjectiveCmd: "python3 -c pass", Timeout: time.Nanosecond, Workers: 1}}
	_, canon, stop, err := openObjective(context.Background(), Streams{Stdout: io.Discard, Stderr: io.Discard}, a,
		func(string, ...any) { warnings++ })
	if err != nil {
		t.Fatalf("openObjective with -timeout 1ns: %v", err)
	}
	defer stop()
	if _, ok := canon.(*objective.Pool); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("canonicaliser %T, want RDKit's (RDKit is required when CI=true)", canon)
		}
		t.Skipf("RDKit is missing (canonicaliser %T)", canon)
	}
	got, err := canon.Canonicalize(context.Background(), []string{"C1=CC=CC=C1"}, false)
	if err != nil || len(got) != 1 || got[0].SMILES != "c1ccccc1" {
		t.Errorf("canonicalised %+v, %v; want c1ccccc1", got, err)
	}
}
