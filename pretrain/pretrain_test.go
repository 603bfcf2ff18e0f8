package pretrain

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

// Short molecules keep T (and so the graph) small; line 7 is not a molecule.
const testData = `CCO
[NH3+]CC(=O)[O-]
[C][C][O]
c1ccccc1
CC(=O)O
CCN
not a molecule (
CCCC
OCCO
CC(C)O
C1CC1
CCOC
NCCN
CC=O
C#N
CCCl
`

// recorder is a Reporter that keeps every step's line, as "nfbo pretrain -log-every 1" prints it, and every note.
type recorder struct {
	steps []string
	notes []string
}

func (r *recorder) Note(line string) { r.notes = append(r.notes, line) }

func (r *recorder) Step(p train.Progress) error {
	r.steps = append(r.steps, train.FormatStep(p))
	return nil
}

func (r *recorder) stdout() string { return strings.Join(r.steps, "\n") }
func (r *recorder) stderr() string { return strings.Join(r.notes, "\n") }

// testDir returns a temporary directory holding testData as mols.smi, and that file's path.
func testDir(t *testing.T) (dir, data string) {
	t.Helper()
	dir = t.TempDir()
	data = filepath.Join(dir, "mols.smi")
	if err := os.WriteFile(data, []byte(testData), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// settings returns the settings of "nfbo pretrain -data data -out out -batch 4 -val-frac 0.2 -seed 7" with
// every other flag at its default, validating and checkpointing every step.
func settings(data, out string) Settings {
	return Settings{Data: data, Out: out, Preset: "small", Vocab: "guacamol", Batch: 4, ValFrac: 0.2, Seed: 7,
		ValEvery: 1, CheckpointEvery: 1, Recon: 200, MinDelta: 0.005, DecayStart: -1, LRMin: 1e-5}
}

// runTest runs s and returns what it reported; it fails t on an error.
func runTest(t *testing.T, s Settings) *recorder {
	t.Helper()
	rec := &recorder{}
	if err := Run(context.Background(), s, rec); err != nil {
		t.Fatalf("%+v: %v\nnotes:\n%s", s, err, rec.stderr())
	}
	return rec
}

// loadParams returns the weights of the model in dir.
func loadParams(t *testing.T, dir string) *model.Params {
	t.Helper()
	ck, err := model.LoadModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ck.Params
}

// sameWeights fails t unless the models in the two directories, a straight run and a resumed one, have the
// same weights bit for bit.
func sameWeights(t *testing.T, straight, resumed string) {
	t.Helper()
	ta, tb := loadParams(t, straight).Tensors(), loadParams(t, resumed).Tensors()
	for i := range ta {
		for j := range ta[i].Data {
			if math.Float32bits(ta[i].Data[j]) != math.Float32bits(tb[i].Data[j]) {
				t.Fatalf("%s[%d]: straight %v, resumed %v", ta[i].Name, j, ta[i].Data[j], tb[i].Data[j])
			}
		}
	}
}

// Four steps write the same weights as two followed by a resume to four, a bad line is reported with its file
// and line, and a new run over an existing checkpoint is refused.
func TestResumeMatchesStraight(t *testing.T) {
	dir, data := testDir(t)
	straight := settings(data, filepath.Join(dir, "straight"))
	straight.Steps = 4
	rec := runTest(t, straight)
	if n := strings.Count(rec.stderr(), data+":"); n != 1 || !strings.Contains(rec.stderr(), data+":7: SMILES") {
		t.Errorf("want exactly one bad line, %s:7:, reported; notes:\n%s", data, rec.stderr())
	}
	split := settings(data, filepath.Join(dir, "split"))
	split.Steps = 2
	runTest(t, split)
	split.Steps, split.Resume = 4, true
	rec = runTest(t, split)
	if len(rec.steps) != 2 || !strings.Contains(rec.steps[0], "step 3/4") || !strings.Contains(rec.steps[1], "step 4/4") {
		t.Errorf("resumed run should report steps 3 and 4 only:\n%s", rec.stdout())
	}
	// Every validation reports the closest embeddings and the reconstruction of the validation molecules.
	if m := regexp.MustCompile(`\| embed cos 0\.\d{6} \| recon (\d+)/(\d+)`).FindStringSubmatch(rec.stdout()); m == nil || m[1] != m[2] {
		t.Errorf("validation lines lack \"embed cos C | recon N/N\":\n%s", rec.stdout())
	}
	sameWeights(t, straight.Out, split.Out)
	if err := Run(context.Background(), straight, &recorder{}); err == nil || !strings.Contains(err.Error(), "use -resume") {
		t.Errorf("a new run over an existing checkpoint: %v, want an error saying to use -resume", err)
	}
}

// Patience stops after that many validations without improvement, with a checkpoint; a resume keeps the count
// (and so has nothing to do), Patience 0 trains on from where it stopped, and Patience without validation
// molecules is an *ArgError.
func TestPatience(t *testing.T) {
	dir, data := testDir(t)
	// No validation can lower the NLL by 1e9 nats: the curve is flat at the third.
	s := settings(data, filepath.Join(dir, "model"))
	s.CheckpointEvery, s.Steps, s.Patience, s.MinDelta = 0, 50, 2, 1e9
	rec := runTest(t, s)
	if !strings.Contains(rec.stderr(), "the validation curve is flat: 2 validations since step 1 ") || !strings.Contains(rec.stderr(), "stopped at step 3,") {
		t.Errorf("the notes do not say the curve is flat at step 3:\n%s", rec.stderr())
	}
	if !strings.Contains(rec.steps[len(rec.steps)-1], "step 3/50") {
		t.Errorf("training did not end at step 3:\n%s", rec.stdout())
	}
	s.Resume = true
	if rec := runTest(t, s); !strings.Contains(rec.stderr(), "nothing to do") || len(rec.steps) != 0 {
		t.Errorf("resume of a flat run: want no steps and \"nothing to do\":\n%s\n%s", rec.stdout(), rec.stderr())
	}
	s.Steps, s.Patience, s.MinDelta = 4, 0, 0.005
	if rec := runTest(t, s); len(rec.steps) != 1 || !strings.Contains(rec.steps[0], "step 4/4") {
		t.Errorf("resume did not continue from the checkpoint of step 3:\n%s", rec.stdout())
	}
	noval := settings(data, filepath.Join(dir, "noval"))
	noval.Steps, noval.Patience, noval.ValFrac = 5, 2, 0
	var ae *ArgError
	if err := Run(context.Background(), noval, &recorder{}); !errors.As(err, &ae) || !strings.Contains(err.Error(), "-patience needs validation") {
		t.Errorf("Patience without validation: %v, want an *ArgError saying so", err)
	}
}

// checkRates fails t unless the step lines carry the learning rates want (as FormatStep writes them), and the
// last line is step last.
func checkRates(t *testing.T, rec *recorder, want []string, last string) {
	t.Helper()
	if len(rec.steps) != len(want) || !strings.Contains(rec.steps[len(rec.steps)-1], last) {
		t.Fatalf("want %d steps ending at %s, got:\n%s", len(want), last, rec.stdout())
	}
	for i, w := range want {
		if !strings.Contains(rec.steps[i], w) {
			t.Errorf("step %d: %q lacks %q", i+1, rec.steps[i], w)
		}
	}
}

// DecaySteps lowers the learning rate over that many steps and ends there by default; the schedule is saved in
// the checkpoint, so a run interrupted in the decay and resumed gives the straight run's weights bit for bit,
// and a new decay on a resume starts from the rate reached.
func TestDecay(t *testing.T) {
	dir, data := testDir(t)
	straight := settings(data, filepath.Join(dir, "straight"))
	straight.ValEvery, straight.CheckpointEvery, straight.DecaySteps, straight.LRMin = 2, 0, 4, 1e-4
	rec := runTest(t, straight)
	if !strings.Contains(rec.stderr(), "learning rate 0.001 falling along a half cosine to 0.0001 from step 0 to step 4") {
		t.Errorf("no note of the decay:\n%s", rec.stderr())
	}
	// The rate of each step: 1e-3 at the first, the cosine's values after, 1e-4 only at the end (step 5 on).
	checkRates(t, rec, []string{"| lr 0.001", "| lr 0.0008682", "| lr 0.00055", "| lr 0.0002318"}, "step 4/4")
	split := straight
	split.Out, split.Steps = filepath.Join(dir, "split"), 2
	runTest(t, split)
	split.Steps, split.Resume, split.DecaySteps = 0, true, 0
	rec = runTest(t, split)
	checkRates(t, rec, []string{"| lr 0.00055", "| lr 0.0002318"}, "step 4/4")
	sameWeights(t, straight.Out, split.Out)
	// A new decay on a resume starts from the rate of the last step taken.
	split.DecaySteps, split.LRMin = 2, 1e-5
	if rec := runTest(t, split); !strings.Contains(rec.stderr(), "learning rate 0.0002318 falling along a half cosine to 1e-05 from step 4 to step 6") {
		t.Errorf("new decay on resume:\n%s", rec.stderr())
	}
	bad := straight
	bad.Out, bad.LRMin = filepath.Join(dir, "bad"), 0.01
	var ae *ArgError
	if err := Run(context.Background(), bad, &recorder{}); !errors.As(err, &ae) || !strings.Contains(err.Error(), "-lr-min") {
		t.Errorf("LRMin above the rate: %v, want an *ArgError naming -lr-min", err)
	}
}

// DecayStart S with DecaySteps N is a schedule fixed in steps: the rate stays at 1e-3 until step S and falls to
// LRMin by S+N, where the run ends by default; the same settings resumed before and inside the decay give the
// straight run's weights bit for bit, and a resume past S without that decay saved is refused.
func TestDecayStart(t *testing.T) {
	dir, data := testDir(t)
	straight := settings(data, filepath.Join(dir, "straight"))
	straight.ValEvery, straight.CheckpointEvery, straight.DecayStart, straight.DecaySteps, straight.LRMin = 2, 0, 2, 4, 1e-4
	rec := runTest(t, straight)
	if !strings.Contains(rec.stderr(), "learning rate 0.001 falling along a half cosine to 0.0001 from step 2 to step 6") {
		t.Errorf("no note of the decay:\n%s", rec.stderr())
	}
	checkRates(t, rec, []string{"| lr 0.001", "| lr 0.001", "| lr 0.001", "| lr 0.0008682", "| lr 0.00055", "| lr 0.0002318"}, "step 6/6")
	// Interrupted before the decay (step 1) and inside it (step 4), each time resumed with the same settings.
	split := straight
	split.Out, split.Steps = filepath.Join(dir, "split"), 1
	runTest(t, split)
	split.Resume, split.Steps = true, 4
	runTest(t, split)
	split.Steps = 0
	checkRates(t, runTest(t, split), []string{"| lr 0.00055", "| lr 0.0002318"}, "step 6/6")
	sameWeights(t, straight.Out, split.Out)
	// A run already past step 1 with no decay saved cannot take one that began there.
	constant := settings(data, filepath.Join(dir, "constant"))
	constant.ValEvery, constant.CheckpointEvery, constant.Steps = 2, 0, 3
	runTest(t, constant)
	constant.Resume, constant.DecayStart, constant.DecaySteps = true, 1, 4
	if err := Run(context.Background(), constant, &recorder{}); err == nil || !strings.Contains(err.Error(), "-decay-start 1: the run is at step 3, past it") {
		t.Errorf("decay that began in the past: %v, want an error saying so", err)
	}
	constant.DecaySteps = 0
	var ae *ArgError
	if err := Run(context.Background(), constant, &recorder{}); !errors.As(err, &ae) || !strings.Contains(err.Error(), "-decay-start 1 needs -decay-steps") {
		t.Errorf("DecayStart alone: %v, want an *ArgError saying so", err)
	}
}

// InitEmbed starts a run from a model's token embeddings (and only those), the same settings resume it, and a
// model of another vocabulary is refused, saying how it differs.
func TestInitEmbed(t *testing.T) {
	dir, data := testDir(t)
	initOnly := func(out string, seed uint64) Settings {
		s := settings(data, filepath.Join(dir, out))
		s.Vocab, s.InitOnly, s.Seed = "guacamol+zinc", true, seed
		return s
	}
	src := initOnly("src", 3)
	runTest(t, src)
	dst := initOnly("dst", 7)
	dst.Preset, dst.InitEmbed = "medium", src.Out
	runTest(t, dst)
	plain := initOnly("plain", 7)
	plain.Preset = "medium"
	runTest(t, plain)
	a, b, c := loadParams(t, src.Out), loadParams(t, dst.Out), loadParams(t, plain.Out)
	if b.Config != model.Medium(a.Config.V, a.Config.T) {
		t.Errorf("config %+v, want the medium preset", b.Config)
	}
	if !slices.Equal(a.Embed.Data, b.Embed.Data) {
		t.Error("the embeddings are not the source model's")
	}
	if slices.Equal(a.Embed.Data, c.Embed.Data) {
		t.Error("a run with another seed and no InitEmbed has the same embeddings: the test tells nothing")
	}
	// The other tensors are the new run's own (its seed's, as without InitEmbed).
	tb, tc := b.Tensors(), c.Tensors()
	for i := 1; i < len(tb); i++ {
		if !slices.Equal(tb[i].Data, tc[i].Data) {
			t.Errorf("%s differs from the run without InitEmbed", tb[i].Name)
		}
	}
	// The same settings resume the run: its embeddings then come from its own checkpoint.
	resume := settings(data, dst.Out)
	resume.Resume, resume.Steps, resume.InitEmbed = true, 1, plain.Out
	runTest(t, resume)
	other := initOnly("other", 1)
	other.Vocab, other.InitEmbed = "guacamol", src.Out
	err := Run(context.Background(), other, &recorder{})
	if err == nil || !strings.Contains(err.Error(), "-init-embed: "+src.Out+" has 267 tokens, the run's vocabulary 185") {
		t.Errorf("another vocabulary: %v, want an error naming the sizes", err)
	}
}

// Read takes SMILES and SELFIES lines, through gzip for a .gz name, and reports each unusable line with its
// file and line number.
func TestRead(t *testing.T) {
	dir, data := testDir(t)
	var skipped []string
	mols, err := Read(context.Background(), data, func(line string) { skipped = append(skipped, line) })
	if err != nil {
		t.Fatal(err)
	}
	if len(mols) != 15 || len(skipped) != 1 || !strings.HasPrefix(skipped[0], data+":7: SMILES ") {
		t.Fatalf("%d molecules, skipped %q; want 15 and line 7", len(mols), skipped)
	}
	if m := mols[2]; m.Line != 3 || m.SELFIES != "[C][C][O]" || !slices.Equal(m.Tokens, []string{"[C]", "[C]", "[O]"}) {
		t.Errorf("the SELFIES line was read as %+v", m)
	}
	if m := mols[1]; m.Line != 2 || !strings.HasPrefix(m.SELFIES, "[NH3+1]") {
		t.Errorf("a SMILES line starting with a bracket was read as %+v", m)
	}
	if _, err := Read(context.Background(), filepath.Join(dir, "none.smi.gz"), nil); err == nil {
		t.Error("a missing file: no error")
	}
	empty := filepath.Join(dir, "empty.smi")
	if err := os.WriteFile(empty, []byte("\nnot a molecule (\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), empty, func(string) {}); err == nil || !strings.Contains(err.Error(),
		empty+": no molecule in its 2 lines (1 could not be read)") {
		t.Errorf("a file without molecules: %v", err)
	}
	// A name or an id after the molecule, as in .smi files and ZINC's downloads, is not part of it.
	named := filepath.Join(dir, "named.smi")
	if err := os.WriteFile(named, []byte("CCO ZINC000000000001\n[C][C][N]\tamine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mols, err = Read(context.Background(), named, func(line string) { t.Errorf("skipped %s", line) })
	if err != nil || len(mols) != 2 || mols[0].SELFIES != "[C][C][O]" || mols[1].SELFIES != "[C][C][N]" {
		t.Errorf("named lines read as %+v, %v", mols, err)
	}
}

// Molecules left out are named one by one up to molfile.ListedSkips, then counted: one line sums them by reason, the
// unknown tokens that kept most out first. The default vocabulary spells ZINC's stereo tokens.
func TestSkipSummary(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "stereo.smi")
	var b strings.Builder
	for range 25 {
		b.WriteString("C[C@H](N)C(=O)O\n")
	}
	b.WriteString("C/C=C/C\nnot a molecule (\nCCO\nCCN\nc1ccccc1\nCC(=O)O\n")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := settings(data, filepath.Join(dir, "guacamol"))
	s.InitOnly = true
	rec := runTest(t, s)
	listed := 0
	for _, n := range rec.notes {
		if strings.Contains(n, data+":") {
			listed++
		}
	}
	if listed != molfile.ListedSkips {
		t.Errorf("%d molecules named, want %d:\n%s", listed, molfile.ListedSkips, rec.stderr())
	}
	want := "pretrain: 27 of 31 molecules left out: 26 with a token outside the vocabulary guacamol ([C@H1] 25, [/C] 1); " +
		"1 that are no valid SMILES or SELFIES (-vocab build takes every token of the data)"
	if !slices.Contains(rec.notes, want) {
		t.Errorf("no summary %q in:\n%s", want, rec.stderr())
	}

	s = settings(data, filepath.Join(dir, "default"))
	s.Vocab, s.InitOnly = "", true
	rec = runTest(t, s)
	want = "pretrain: 1 of 31 molecules left out: 1 that are no valid SMILES or SELFIES"
	if !slices.Contains(rec.notes, want) || loadParams(t, s.Out).Config.V != 267 {
		t.Errorf("the default vocabulary: V = %d, notes:\n%s", loadParams(t, s.Out).Config.V, rec.stderr())
	}
}
