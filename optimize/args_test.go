package optimize

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// args.json keeps -request-size, and one written before it was kept reads back with the size that run had.
func TestArgsRequestSize(t *testing.T) {
	dir := t.TempDir()
	a := Args{Task: "demo", Init: "init.csv", Model: "model", Out: dir, Workers: 2, RequestSize: 1, Timeout: time.Minute}
	if err := WriteArgs(a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != 1 {
		t.Errorf("RequestSize %d read back, want 1", got.RequestSize)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, rundir.ArgsFile), []byte(`{"Task": "demo", "Workers": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = ReadArgs(old)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != objective.DefaultChunkSize {
		t.Errorf("RequestSize %d read from an args.json without it, want %d", got.RequestSize, objective.DefaultChunkSize)
	}
}

// The flags go on the configuration after the variant's rules: what a user gives is what the run gets, and the
// variant fills only what the flags leave.
func TestConfigFlagsAfterVariant(t *testing.T) {
	pmo, err := bo.PresetByName("pmo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                 string
		a                    Args
		queries, cands, kids int
		target               int
		band                 bo.NoveltyBand
		distinct             bool
	}{
		{"screened", Args{Variant: "screened"}, pmo.Config.Queries, bo.ScreenedCandidates, bo.DefaultOffspring, 0, bo.NoveltyBand{}, false},
		{"screened, flags", Args{Variant: "screened", Queries: 10, Candidates: 300, Offspring: 50, CandidateTarget: 100, TRNovelty: "0.4,0.6",
			DistinctScores: true, SkipVariants: true}, 10, 300, 50, 100, bo.NoveltyBand{Shrink: 0.4, Grow: 0.6}, true},
		{"reference", Args{Variant: "reference"}, pmo.Config.Queries, 0, 0, 0, bo.NoveltyBand{}, false},
	} {
		c.a.AnchorRule = "minmax" // the flag's default
		cfg, err := c.a.Config(pmo)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.Queries != c.queries || cfg.Candidates != c.cands || cfg.Offspring != c.kids || cfg.CandidateTarget != c.target ||
			cfg.NoveltyBand != c.band || cfg.DistinctScores != c.distinct || cfg.SkipVariants != c.distinct {
			t.Errorf("%s: queries %d, candidates %d, offspring %d, target %d, band %v, distinct %v; want %d, %d, %d, %d, %v, %v", c.name,
				cfg.Queries, cfg.Candidates, cfg.Offspring, cfg.CandidateTarget, cfg.NoveltyBand, cfg.DistinctScores,
				c.queries, c.cands, c.kids, c.target, c.band, c.distinct)
		}
	}
	if _, err := (Args{Variant: "reference", AnchorRule: "minmax", CandidateTarget: 100}).Config(pmo); err == nil {
		t.Error("-candidate-target with the reference variant accepted")
	}
	if _, err := (Args{Variant: "reference", AnchorRule: "minmax", SkipVariants: true}).Config(pmo); err == nil {
		t.Error("-skip-variants with the reference variant accepted")
	}
}
