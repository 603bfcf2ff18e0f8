package optimize

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/rules"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/rundir"
)

// TestProgressHealthWarnsOnce: the flow check runs after every iteration and its first complaint is printed
// once, naming the iteration.
func TestProgressHealthWarnsOnce(t *testing.T) {
	calls := 0
	var warnings []string
	p := &progressPrinter{w: io.Discard,
		health: func() string {
			calls++
			if calls < 3 {
				return ""
			}
			return "cannot tell the tokens [Cl] and [C] apart"
		},
		warnf: func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }}
	for i := 1; i <= 5; i++ {
		if err := p.Record(bo.Progress{Iteration: i, FitRank: math.NaN()}); err != nil {
			t.Fatal(err)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "after iteration 3 the fine-tuned flow cannot tell the tokens [Cl] and [C] apart") {
		t.Errorf("warnings = %q, want one for iteration 3", warnings)
	}
	if calls != 3 {
		t.Errorf("health checked %d times, want 3 (not again once it warned)", calls)
	}
}

func TestFrozenEmbeddings(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		variant string
		set     *bool
		want    bool
	}{
		{"screened", nil, true}, {"reference", nil, false}, {"", nil, true},
		{"screened", &no, false}, {"reference", &yes, true},
	} {
		if got := (Args{OptimiserArgs: OptimiserArgs{Variant: c.variant, FreezeEmbed: c.set}}).FrozenEmbeddings(); got != c.want {
			t.Errorf("variant %q, -freeze-embed %v: FrozenEmbeddings = %v, want %v", c.variant, c.set, got, c.want)
		}
	}
}

// TestFlowHealth: distinct embeddings pass; two embeddings whose cosine is at train.MergedCos or above are
// reported, whether or not the decoder already takes one for the other.
func TestFlowHealth(t *testing.T) {
	voc, err := vocab.Named("guacamol+zinc")
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{V: voc.Len(), F: 8, T: 16, MaxT: 32, Blocks: 1, LSTMLayers: 1, H: 8, Couplings: 2, U: 8,
		CouplingDepth: 1, Transform: model.NLSq, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
	c, _ := voc.ID("[C]")
	cl, _ := voc.ID("[Cl]")
	for _, tc := range []struct {
		name  string
		nudge float32 // added to one entry of [Cl]'s copy of [C]'s embedding; -1: leave the embeddings as drawn
		want  string
	}{
		{"distinct", -1, ""},
		{"equal", 0, "cannot tell the tokens"},
		{"within rounding", 1e-4, "cannot tell the tokens"}, // cosine ~1 − 1e-8
		{"apart", 0.05, ""},
	} {
		p, err := model.NewParams(cfg, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		F := cfg.F
		if tc.nudge >= 0 {
			copy(p.Embed.Data[cl*F:(cl+1)*F], p.Embed.Data[c*F:(c+1)*F])
			p.Embed.Data[cl*F] += tc.nudge
		}
		flow, err := seqflow.New(&model.Checkpoint{Params: p, Vocab: voc.Tokens()}, cfg.T, seqflow.Options{Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		got := flowHealth(flow, voc, true)()
		flow.Close()
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: flowHealth = %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && (!strings.Contains(got, "[C]") || !strings.Contains(got, "[Cl]")) {
			t.Errorf("%s: %q does not name [C] and [Cl]", tc.name, got)
		}
	}
}

// TestProgressFilteredByKind: the progress line says what the chemistry rules dropped, by kind.
func TestProgressFilteredByKind(t *testing.T) {
	var b strings.Builder
	p := &progressPrinter{w: &b, health: func() string { return "" }, warnf: func(string, ...any) {}}
	g := bo.Progress{Iteration: 1, FitRank: math.NaN(), Weight: math.NaN(), Filtered: 12,
		FilteredBy: map[string]int{"alerts": 5, "unseen environments": 6, "": 1}}
	if err := p.Record(g); err != nil {
		t.Fatal(err)
	}
	if want := " filtered 12: alerts 5, unseen environments 6, other 1;"; !strings.Contains(b.String(), want) {
		t.Errorf("progress line %q lacks %q", b.String(), want)
	}
}

// TestRunRulesDefaultKept: a run begun under an earlier default (its rules.json) resumed with -rules default goes
// on under its own rules; other named rules are refused.
func TestRunRulesDefaultKept(t *testing.T) {
	dir := t.TempDir()
	old := rules.Rules{ClosedShell: true, MinMW: 150, MaxMW: 650, Catalogs: []string{"PAINS"}}
	if err := os.WriteFile(filepath.Join(dir, rundir.RulesFile), old.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := runRules(Args{RunArgs: RunArgs{Out: dir, Resume: true}, OptimiserArgs: OptimiserArgs{Rules: "default"}}, rules.Default(), func(string, ...any) {})
	if err != nil || string(got.JSON()) != string(old.JSON()) {
		t.Errorf("-rules default on a run of the former default: %s, %v; want its own rules", got.JSON(), err)
	}
	if _, err := runRules(Args{RunArgs: RunArgs{Out: dir, Resume: true}, OptimiserArgs: OptimiserArgs{Rules: "none"}}, rules.Rules{}, func(string, ...any) {}); err == nil {
		t.Error("-rules none on a run with rules: accepted")
	}
}
