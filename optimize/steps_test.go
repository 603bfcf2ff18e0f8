package optimize

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/model/modeltest"
	"github.com/nfbo/nfbo/rundir"
)

// guacamol100 holds 100 molecules with GuacaMol scores (adip among them) and none for other tasks.
const guacamol100 = "../data/guacamol/guacamol_train_data_first_100.csv"

// TestPaidInitial: where the preset's initial molecules are paid for, NF-BO's screened variant pays for the
// preset's own count of them (bo.ScreenedPreset.PaidInitial) and its optimiser gets the calls they spare, the
// calls in all staying the preset's; the reference variant, the baselines, -init-count, -budget and an init file
// with scores keep the preset's count and budget.
func TestPaidInitial(t *testing.T) {
	dir := t.TempDir()
	modeltest.WriteShippedVocabModel(t, dir)
	preset := bo.Preset{Name: "test", InitialPoints: 20, Config: bo.Config{Budget: 30, Anchors: 2, Queries: 2, TrainEvery: 10},
		Screened: bo.ScreenedPreset{PaidInitial: 8}}
	for _, tc := range []struct {
		name             string
		task, method     string
		variant          string
		initCount        int
		budget           int
		wantMols, wantIn int // initial molecules, and calls in all
	}{
		{"screened pays for its own count", "demo", "nfbo", "screened", 0, 0, 8, 50},
		{"reference", "demo", "nfbo", "reference", 0, 0, 20, 50},
		{"the GA", "demo", "ga", "screened", 0, 0, 20, 50},
		{"-init-count", "demo", "nfbo", "screened", 12, 0, 12, 42},
		{"-budget", "demo", "nfbo", "screened", 0, 40, 8, 40},
		{"scores in the file", "adip", "nfbo", "screened", 0, 0, 20, 30},
		// A run begun by an nfbo whose preset paid for all 20 goes on as it began; one begun with 8 too.
		{"resumed, begun with the preset's count", "demo", "nfbo", "screened", 0, 0, 20, 50},
		{"resumed, begun with its own", "demo", "nfbo", "screened", 0, 0, 8, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Args{RunArgs: RunArgs{InitCount: tc.initCount, Budget: tc.budget, Init: guacamol100, Model: dir}, ObjectiveArgs: ObjectiveArgs{Task: tc.task}, OptimiserArgs: OptimiserArgs{Method: tc.method, Variant: tc.variant, Rules: "none", AnchorRule: "minmax", ReferenceArgs: ReferenceArgs{Sampler: "exact", Update: "once"}}}
			if strings.HasPrefix(tc.name, "resumed") {
				a.Resume, a.Out = true, t.TempDir()
				begun := rundir.Info{Setting: "20+30", Task: "demo", Method: "nfbo", Budget: 50, Initial: tc.wantMols,
					InitialCalls: tc.wantMols, Calls: tc.wantMols}
				if err := rundir.WriteInfo(a.Out, begun); err != nil {
					t.Fatal(err)
				}
			}
			r := newRunState(Streams{Stdout: io.Discard, Stderr: io.Discard}, a, preset)
			for _, step := range []func(context.Context) error{r.loadInputs, r.plan} {
				if err := step(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if len(r.mols) != tc.wantMols || r.total != tc.wantIn {
				t.Errorf("%d initial molecules and %d calls in all, want %d and %d", len(r.mols), r.total, tc.wantMols, tc.wantIn)
			}
		})
	}
	if got, want := preset.PaidBudget("screened"), 42; got != want {
		t.Errorf("PaidBudget(screened) = %d, want %d", got, want)
	}
	if got, want := preset.PaidBudget("reference"), 30; got != want {
		t.Errorf("PaidBudget(reference) = %d, want %d", got, want)
	}
}
