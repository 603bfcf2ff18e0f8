package bench

import (
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

// movesRun is a run with ten initial molecules (0.10-0.19) and five paid ones: a flow candidate of an initial
// anchor (rises), its mutant (does not), a crossover of the mutant and an initial molecule (rises), a paid
// initial molecule without an origin (level with the tenth best: does not rise), and its mutant (rises).
func movesRun() Run {
	info := rundir.Info{Setting: "100+500", Task: "qed", Method: "nfbo", Seed: 1, Budget: 5, Finished: true}
	for i := range 10 {
		info.InitialScores = append(info.InitialScores, 0.10+float64(i)/100)
	}
	recs := []rundir.Record{
		{Call: 1, SMILES: "X", Score: 0.5, From: &rundir.Origin{By: rundir.ByFlow, Parents: []string{"I0"}}},
		{Call: 2, SMILES: "Y", Score: 0.05, From: &rundir.Origin{By: rundir.ByMutation, Parents: []string{"X"}}},
		{Call: 3, SMILES: "Z", Score: 0.6, From: &rundir.Origin{By: rundir.ByCrossover, Parents: []string{"Y", "I3"}}},
		{Call: 4, SMILES: "W", Score: 0.12},
		{Call: 5, SMILES: "V", Score: 0.7, From: &rundir.Origin{By: rundir.ByMutation, Parents: []string{"W"}}},
	}
	r := Run{Info: info, Records: recs}
	for _, rec := range recs {
		r.Scores = append(r.Scores, rec.Score)
	}
	return r
}

func TestMovesOf(t *testing.T) {
	m, ok := MovesOf(movesRun())
	if !ok {
		t.Fatal("a log with origins: MovesOf says none")
	}
	f, c, u, i := rundir.ByFlow, rundir.ByCrossover, rundir.ByMutation, MoveInitial
	for _, tc := range []struct {
		name      string
		got, want map[string]int
	}{
		{"paid", m.Paid, map[string]int{f: 1, c: 1, u: 2, i: 1}},
		{"rose", m.Rose, map[string]int{f: 1, c: 1, u: 1}},
		{"ten best by move", m.Top, map[string]int{f: 1, c: 1, u: 1, i: 7}},
		// Z descends from the flow's X through the mutant Y; V from the paid initial W.
		{"ten best by ancestor", m.Beneath, map[string]int{f: 2, c: 1, u: 2, i: 8}},
	} {
		if !maps.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}

	// V's ancestry is V and W (mutation, initial), Z's Z, Y and X (crossover, mutation, flow), X's X; the 7 initial.
	wantShare := map[string]float64{f: 1.0/3 + 1, c: 1.0 / 3, u: 0.5 + 1.0/3, i: 7.5}
	for mv, w := range wantShare {
		if math.Abs(m.Ancestry[mv]-w) > 1e-12 {
			t.Errorf("ancestry share of %s: %v, want %v", mv, m.Ancestry[mv], w)
		}
	}

	plain := movesRun()
	for k := range plain.Records {
		plain.Records[k].From = nil
	}
	if _, ok := MovesOf(plain); ok {
		t.Error("a log without origins: MovesOf says it has them")
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, []Run{movesRun(), plain}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| qed | nfbo | 1 | 1 | 1 | 2 | 1 (100.0 %) | 1 (100.0 %) | 1 (50.0 %) | 1 | 1 | 1 | 7 | 2 | 13.3 % | 20.0 % |") {
		t.Errorf("the report has no row of who made the best molecules:\n%s", b.String())
	}
}

// TestBestMoleculesFrom: a run page says how each of the best molecules was made, its parents by their calls.
func TestBestMoleculesFrom(t *testing.T) {
	want := []string{"mutant of call 4", "crossover of call 2 and an initial molecule", "decoded by the flow near an initial molecule", ""}
	mols := BestMolecules(movesRun(), 4)
	if len(mols) != len(want) {
		t.Fatalf("%d molecules, want %d", len(mols), len(want))
	}
	for i, m := range mols {
		if m.From != want[i] {
			t.Errorf("molecule %d (call %d): from %q, want %q", i+1, m.Call, m.From, want[i])
		}
	}
	var b strings.Builder
	if err := WriteRunHTML(&b, RunPage{Run: movesRun(), Molecules: mols}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "crossover of call 2 and an initial molecule") {
		t.Error("the run page does not say how its molecules were made")
	}
}
