package train

import (
	"context"
	"errors"
	"fmt"
	"github.com/nfbo/nfbo/model/modeltest"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// Adam's first step moves every coordinate by lr·g/(|g| + eps) (the bias
// corrections cancel), and clipping scales the whole gradient.
func TestAdamFirstStepAndClip(t *testing.T) {
	p := &model.Tensor{Name: "x", Shape: []int{3}, Data: []float32{1, 2, 3}}
	a := NewAdam([]*model.Tensor{p})
	g := [][]float32{{3, -4, 0}} // norm 5 > 1: clipped to norm ≈ 1
	norm := a.Step([]*model.Tensor{p}, g)
	if norm != 5 {
		t.Fatalf("norm %g, want 5", norm)
	}
	want := []float64{1 - 1e-3, 2 + 1e-3, 3}
	for i, w := range want {
		if math.Abs(float64(p.Data[i])-w) > 1e-6 {
			t.Errorf("param %d = %.8f, want %.8f", i, p.Data[i], w)
		}
	}
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	a2 := NewAdam([]*model.Tensor{p})
	if err := a2.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if a2.Steps() != 1 || a2.m[0][1] != a.m[0][1] || a2.v[0][0] != a.v[0][0] {
		t.Errorf("state did not round-trip: %+v vs %+v", a2, a)
	}
	bad := NewAdam([]*model.Tensor{{Name: "y", Shape: []int{2}, Data: make([]float32, 2)}})
	if err := bad.UnmarshalBinary(b); err == nil {
		t.Error("state of a 3-vector loaded into a 2-vector")
	}
}

func smallTrainConfig() model.Config {
	cfg := tinyConfig(model.NLSq)
	cfg.T, cfg.MaxT, cfg.H, cfg.F, cfg.V = 6, 8, 8, 6, 9
	return cfg
}

// Training 2N steps straight gives bit-identical weights to N steps, a
// checkpoint file (model.SaveCheckpoint with the trainer state), a fresh
// trainer restored from it and N more steps. N is chosen to stop mid-epoch, with a partial last batch.
func TestResumeIsExact(t *testing.T) {
	for _, opts := range []Options{{}, {FreezeEmbeddings: true}, {RandomPad: true, PadToken: 1}} {
		t.Run(fmt.Sprintf("frozen=%v/randompad=%v", opts.FreezeEmbeddings, opts.RandomPad), func(t *testing.T) { testResume(t, opts) })
	}
}

func testResume(t *testing.T, opts Options) {
	cfg := smallTrainConfig()
	data := randomSeqs(cfg, 7, rand.New(rand.NewPCG(4, 4)))
	val := randomSeqs(cfg, 2, rand.New(rand.NewPCG(5, 4)))
	init := modeltest.FarParams(t, cfg, 21)
	opts.Batch, opts.EvalBatch = 3, 2
	const N = 4 // batches of 3, 3, 1, then 3 of the next epoch
	ctx := context.Background()

	straight := init.Clone()
	trA, err := NewTrainer(straight, rand.NewPCG(1, 2), opts)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	rec := RecorderFunc(func(p Progress) error { losses = append(losses, p.Loss); return nil })
	if err := trA.Pretrain(ctx, data, PretrainConfig{Steps: 2 * N, Val: val, ValEvery: 3, Recorder: rec}); err != nil {
		t.Fatal(err)
	}

	first := init.Clone()
	trB, err := NewTrainer(first, rand.NewPCG(1, 2), opts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), model.CheckpointName)
	vocab := []string{"<start>", "<stop>", "a", "b", "c", "d", "e", "f", "g"}
	save := func(_ context.Context, tr *Trainer) error {
		ck, err := tr.Checkpoint(vocab, map[string][]byte{"cli": []byte("x")})
		if err != nil {
			return err
		}
		return model.SaveCheckpoint(path, ck)
	}
	if err := trB.Pretrain(ctx, data, PretrainConfig{Steps: N, Val: val, ValEvery: 3, Checkpoint: save, CheckpointEvery: 2}); err != nil {
		t.Fatal(err)
	}
	ck, err := model.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	trC, err := Restore(ck, opts)
	if err != nil {
		t.Fatal(err)
	}
	ckW := trC.Params()
	if err := trC.Pretrain(ctx, data, PretrainConfig{Steps: 2 * N, Val: val, ValEvery: 3}); err != nil {
		t.Fatal(err)
	}
	a, c := straight.Tensors(), ckW.Tensors()
	for i := range a {
		for j := range a[i].Data {
			if math.Float32bits(a[i].Data[j]) != math.Float32bits(c[i].Data[j]) {
				t.Fatalf("%s[%d]: straight %v, resumed %v", a[i].Name, j, a[i].Data[j], c[i].Data[j])
			}
		}
	}
	if trC.Steps() != 2*N || trC.Adam().Steps() != 2*N {
		t.Errorf("resumed trainer at step %d (Adam %d), want %d", trC.Steps(), trC.Adam().Steps(), 2*N)
	}
	t.Logf("losses %v", losses)
}

// RandomPad draws each padded length uniformly from [L, T], L the length up
// to the first pad token (T when there is none, 2 at least).
func TestDrawLengths(t *testing.T) {
	cfg := smallTrainConfig() // T = 6
	tr, err := NewTrainer(modeltest.FarParams(t, cfg, 1), rand.NewPCG(3, 3), Options{RandomPad: true, PadToken: 1})
	if err != nil {
		t.Fatal(err)
	}
	seqs := [][]int{{2, 3, 1, 1, 1, 1}, {2, 3, 4, 5, 6, 7}, {1, 1, 1, 1, 1, 1}, {2, 3, 4, 5, 1, 2}}
	wantMin := []int{3, 6, 2, 5}
	seen := make([]map[int]int, len(seqs))
	for i := range seen {
		seen[i] = map[int]int{}
	}
	for range 2000 {
		for b, T := range tr.drawLengths(seqs) {
			if T < wantMin[b] || T > cfg.T {
				t.Fatalf("sequence %d: padded length %d outside [%d, %d]", b, T, wantMin[b], cfg.T)
			}
			seen[b][T]++
		}
	}
	for b, m := range seen {
		if n := cfg.T - wantMin[b] + 1; len(m) != n {
			t.Errorf("sequence %d: %d distinct lengths %v, want all %d of [%d, %d]", b, len(m), m, n, wantMin[b], cfg.T)
		}
	}
}

// A few hundred steps on a tiny set lower the loss, and FineTune runs one
// epoch on another Params value (copied in and out).
func TestTrainingLowersLossAndFineTune(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 150 steps")
	}
	cfg := smallTrainConfig()
	data := randomSeqs(cfg, 4, rand.New(rand.NewPCG(8, 8)))
	p := modeltest.FarParams(t, cfg, 5)
	tr, err := NewTrainer(p, rand.NewPCG(3, 3), Options{Batch: 4, FineTuneBatch: 3, LearnRate: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := tr.Evaluate(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Pretrain(ctx, data, PretrainConfig{Steps: 150}); err != nil {
		t.Fatal(err)
	}
	after, err := tr.Evaluate(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NLL/token %.4f → %.4f, sim %.4f → %.4f", before.NLL, after.NLL, before.Sim, after.Sim)
	if !(after.NLL < before.NLL-0.5) {
		t.Errorf("NLL per token %.4f → %.4f after 150 steps", before.NLL, after.NLL)
	}

	other := tr.Params().Clone()
	snapshot := tr.Params().Clone()
	st, err := tr.FineTune(ctx, other, data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seqs != len(data) {
		t.Errorf("fine-tune saw %d sequences, want %d", st.Seqs, len(data))
	}
	if other.Embed.Data[0] == snapshot.Embed.Data[0] {
		t.Error("fine-tune did not update the given params")
	}
	if tr.Adam().Steps() != 150+2 {
		t.Errorf("Adam at %d steps, want 152 (4 sequences in batches of 3)", tr.Adam().Steps())
	}
}

func TestBadInput(t *testing.T) {
	cfg := smallTrainConfig()
	tr, err := NewTrainer(modeltest.FarParams(t, cfg, 1), rand.NewPCG(1, 1), Options{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tr.Step(ctx, [][]int{{1, 2, 3}}); err == nil {
		t.Error("short sequence accepted")
	}
	if _, err := tr.Step(ctx, [][]int{{1, 2, 3, 4, 5, 99}}); err == nil {
		t.Error("token 99 accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = tr.Pretrain(cctx, randomSeqs(cfg, 3, rand.New(rand.NewPCG(1, 1))), PretrainConfig{Steps: 5})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Pretrain returned %v", err)
	}
}

// The health checks see what they should: two embeddings of one direction
// are the closest pair at cosine 1 and the decoder cannot tell them apart,
// while a freshly initialised flow reconstructs every sequence.
func TestHealthChecks(t *testing.T) {
	cfg := smallTrainConfig()
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Molecule-like sequences: tokens other than <start> and <stop>, then
	// <stop> to the end (the decoder writes <stop> after the first one).
	rng := rand.New(rand.NewPCG(9, 9))
	seqs := make([][]int, 6)
	for i := range seqs {
		seqs[i] = slices.Repeat([]int{model.StopID}, cfg.T)
		for j := range 1 + rng.IntN(cfg.T-1) {
			seqs[i][j] = 2 + rng.IntN(cfg.V-2)
		}
	}
	if n, err := Reconstructed(ctx, p, seqs); err != nil || n != len(seqs) {
		t.Fatalf("a fresh flow reconstructed %d of %d random sequences (%v)", n, len(seqs), err)
	}
	F := cfg.F
	for i := range F {
		p.Embed.Data[5*F+i] = 2 * p.Embed.Data[3*F+i] // same direction, another norm
	}
	cos, a, b := ClosestEmbeddings(p)
	if a != 3 || b != 5 || math.Abs(cos-1) > 1e-12 {
		t.Errorf("closest pair %d, %d at cosine %.15f, want 3, 5 at 1", a, b, cos)
	}
	fives := make([][]int, 4)
	for i := range fives {
		fives[i] = slices.Repeat([]int{model.StopID}, cfg.T)
		for j := range cfg.T - 1 {
			fives[i][j] = 5
		}
	}
	if n, err := Reconstructed(ctx, p, fives); err != nil || n != 0 {
		t.Errorf("%d of %d sequences of a token merged with another reconstructed (%v), want 0", n, len(fives), err)
	}
}

// FreezeEmbeddings leaves the embeddings bit for bit as they were, also
// after a restore with Adam moments, while the other weights train.
func TestFreezeEmbeddings(t *testing.T) {
	cfg := smallTrainConfig()
	p := modeltest.FarParams(t, cfg, 21)
	data := randomSeqs(cfg, 7, rand.New(rand.NewPCG(4, 4)))
	ctx := context.Background()
	tr, err := NewTrainer(p, rand.NewPCG(1, 2), Options{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Pretrain(ctx, data, PretrainConfig{Steps: 3}); err != nil { // moments for every tensor
		t.Fatal(err)
	}
	ck, err := tr.Checkpoint([]string{"<start>", "<stop>", "a", "b", "c", "d", "e", "f", "g"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := Restore(ck, Options{Batch: 3, FreezeEmbeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	embed := slices.Clone(fr.Params().Embed.Data)
	other := slices.Clone(fr.Params().Blocks[0].LSTM[0].Whh.Data)
	if err := fr.Pretrain(ctx, data, PretrainConfig{Steps: 6}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(embed, fr.Params().Embed.Data) {
		t.Error("frozen embeddings changed")
	}
	if slices.Equal(other, fr.Params().Blocks[0].LSTM[0].Whh.Data) {
		t.Error("the LSTM did not train")
	}
}

// A step whose loss or gradient is not finite returns ErrNonFinite and
// changes nothing: the weights and Adam's moments as they were, bit for bit,
// neither step count advanced; a later step with finite weights trains.
func TestNonFiniteStepChangesNothing(t *testing.T) {
	cfg := smallTrainConfig()
	p := modeltest.FarParams(t, cfg, 5)
	p.Blocks[0].LSTM[0].Whh.Data[3] = float32(math.NaN())
	before := p.Clone()
	tr, err := NewTrainer(p, rand.NewPCG(6, 7), Options{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	seqs := randomSeqs(cfg, 3, rand.New(rand.NewPCG(8, 9)))
	ctx := context.Background()
	if _, err := tr.Step(ctx, seqs); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("step on a NaN weight: %v, want ErrNonFinite", err)
	}
	if tr.Steps() != 0 || tr.Adam().Steps() != 0 {
		t.Errorf("steps %d, Adam's %d after a refused step; want 0", tr.Steps(), tr.Adam().Steps())
	}
	for i, ts := range tr.Params().Tensors() {
		for j, v := range ts.Data {
			if math.Float32bits(v) != math.Float32bits(before.Tensors()[i].Data[j]) {
				t.Fatalf("%s[%d] changed from %v to %v", ts.Name, j, before.Tensors()[i].Data[j], v)
			}
		}
	}
	for _, m := range [][][]float32{tr.adam.m, tr.adam.v} {
		for _, x := range m {
			if slices.ContainsFunc(x, func(v float32) bool { return v != 0 }) {
				t.Fatal("a refused step moved Adam's moments")
			}
		}
	}
	p.Blocks[0].LSTM[0].Whh.Data[3] = 0
	tr.hostChanged()
	if _, err := tr.Step(ctx, seqs); err != nil {
		t.Fatalf("step after the weight was repaired: %v", err)
	}
	if tr.Steps() != 1 || tr.Adam().Steps() != 1 {
		t.Errorf("steps %d, Adam's %d after one step; want 1", tr.Steps(), tr.Adam().Steps())
	}
}
