package seqflow_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/nfbo/nfbo/bo"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

var (
	_ bo.Flow         = (*seqflow.Flow)(nil)
	_ bo.Checkpointer = (*seqflow.Flow)(nil)
)

// tiny returns a random SeqFlow checkpoint trained (nominally) at T = 64.
func tiny(t *testing.T) *model.Checkpoint {
	t.Helper()
	cfg := model.Config{V: 12, F: 8, T: 64, MaxT: 96, Blocks: 1, LSTMLayers: 1, H: 16, Couplings: 2, U: 16,
		CouplingDepth: 1, Transform: model.NLSq, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
	p, err := model.NewParams(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	voc := []string{"<start>", "<stop>"}
	for i := 2; i < cfg.V; i++ {
		voc = append(voc, string(rune('a'+i)))
	}
	return &model.Checkpoint{Params: p, Vocab: voc}
}

// seqs returns n random sequences of length t over ids 2..v-1, each ending in <stop> padding.
func seqs(rng *rand.Rand, n, t, v int) []int {
	out := make([]int, n*t)
	for i := range n {
		k := 1 + rng.IntN(t-1)
		for j := range t {
			out[i*t+j] = model.StopID
			if j < k {
				out[i*t+j] = 2 + rng.IntN(v-2)
			}
		}
	}
	return out
}

func TestRoundTripAtAnotherLength(t *testing.T) {
	ck := tiny(t)
	for _, T := range []int{2, 20, 96} {
		f, err := seqflow.New(ck, T, seqflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if gotT, gotF := f.Shape(); gotT != T || gotF != 8 {
			t.Fatalf("Shape = %d, %d; want %d, 8", gotT, gotF, T)
		}
		x := seqs(rand.New(rand.NewPCG(3, uint64(T))), 16, T, 12)
		z := make([]float64, 16*T*8)
		if err := f.Encode(context.Background(), z, x); err != nil {
			t.Fatal(err)
		}
		back := make([]int, len(x))
		if err := f.Decode(context.Background(), back, z); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back, x) {
			t.Errorf("T = %d: decode(encode(x)) != x", T)
		}
	}
	if ck.Params.Config.T != 64 {
		t.Errorf("New modified the checkpoint's config: T = %d", ck.Params.Config.T)
	}
	if _, err := seqflow.New(ck, 97, seqflow.Options{}); err == nil {
		t.Error("T > MaxT accepted")
	}
}

// TestFineTuneCheckpoint checks that fine-tuning depends only on the state and the rng, and that a state saved
// with MarshalBinary continues exactly: save after one fine-tune, restore into a fresh flow, fine-tune again.
func TestFineTuneCheckpoint(t *testing.T) {
	ck := tiny(t)
	const T = 10
	ctx := context.Background()
	data := seqs(rand.New(rand.NewPCG(5, 5)), 40, T, 12)
	encode := func(f *seqflow.Flow) []float64 {
		z := make([]float64, len(data)*8)
		if err := f.Encode(ctx, z, data); err != nil {
			t.Fatal(err)
		}
		return z
	}
	a, _ := seqflow.New(ck, T, seqflow.Options{})
	before := encode(a)
	// A state saved before the fine-tune is kept for the next save only until the fine-tune changes the flow.
	first, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := a.MarshalBinary()
	clear(first) // the caller's copy
	if !slices.Equal(again, mustMarshal(t, a)) || slices.Equal(first, again) {
		t.Fatal("two saves of one state differ, or share their bytes")
	}
	pcg := rand.NewPCG(9, 9)
	rngA := rand.New(pcg)
	if err := a.FineTune(ctx, data, rngA); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(before, encode(a)) {
		t.Fatal("fine-tuning did not change the flow")
	}
	state, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	pcgState, _ := pcg.MarshalBinary()
	if err := a.FineTune(ctx, data, rngA); err != nil {
		t.Fatal(err)
	}

	b, _ := seqflow.New(ck, T, seqflow.Options{})
	if err := b.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	pcgB := rand.NewPCG(0, 0)
	if err := pcgB.UnmarshalBinary(pcgState); err != nil {
		t.Fatal(err)
	}
	if err := b.FineTune(ctx, data, rand.New(pcgB)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(encode(a), encode(b)) {
		t.Error("restored flow fine-tuned differently from the original")
	}
	other, _ := seqflow.New(ck, T+1, seqflow.Options{})
	if err := other.UnmarshalBinary(state); err == nil {
		t.Error("state of a T = 10 flow restored into a T = 11 one")
	}
}

func mustMarshal(t *testing.T, f *seqflow.Flow) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestONNXRuntime checks the ONNX Runtime backend: exact round trip, and after a fine-tune its sessions hold the
// new weights (its latents match the pure-Go flow's with the same state).
// roundTrip encodes the sequences x (B×T) with f, checks that they decode back, and returns the latents.
func roundTrip(t *testing.T, f *seqflow.Flow, x []int, what string) []float64 {
	t.Helper()
	ctx := context.Background()
	T, F := f.Shape()
	z := make([]float64, len(x)/T*T*F)
	if err := f.Encode(ctx, z, x); err != nil {
		t.Fatal(err)
	}
	back := make([]int, len(x))
	if err := f.Decode(ctx, back, z); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, x) {
		t.Errorf("%s: decode(encode(x)) != x", what)
	}
	return z
}

// TestAutoBackend: "auto" is pure Go where kernels' assembly runs, the faster decoder there, and ONNX Runtime
// (or pure Go without its library) elsewhere; a round trip is exact either way.
func TestAutoBackend(t *testing.T) {
	f, err := seqflow.New(tiny(t), 12, seqflow.Options{Backend: "auto", Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := f.Backend()
	if kernels.PackedAccelerated() && got != "go" || !kernels.PackedAccelerated() && got != "onnxruntime" && got != "go" {
		t.Fatalf("auto chose %q (kernels' assembly: %v)", got, kernels.PackedAccelerated())
	}
	if got == "go" && f.Engine() != "pure Go on "+kernels.PackedKernel()+" kernels" {
		t.Errorf("Engine() = %q", f.Engine())
	}
	roundTrip(t, f, seqs(rand.New(rand.NewPCG(5, 5)), 16, 12, 12), "auto")
}

func TestONNXRuntime(t *testing.T) {
	ck := tiny(t)
	const T = 12
	f, err := seqflow.New(ck, T, seqflow.Options{Backend: "ort"})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ONNX Runtime: %v", err)
		}
		t.Skipf("ONNX Runtime: %v", err)
	}
	defer f.Close()
	if f.Backend() != "onnxruntime" {
		t.Fatalf("backend %q", f.Backend())
	}
	ctx := context.Background()
	x := seqs(rand.New(rand.NewPCG(3, 3)), 32, T, 12)
	z := roundTrip(t, f, x, "ONNX Runtime")
	if err := f.FineTune(ctx, x, rand.New(rand.NewPCG(4, 4))); err != nil {
		t.Fatal(err)
	}
	state, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := seqflow.New(ck, T, seqflow.Options{})
	if err := g.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	zo, zg := make([]float64, len(z)), make([]float64, len(z))
	f.Encode(ctx, zo, x)
	g.Encode(ctx, zg, x)
	for i := range zo {
		if math.Abs(zo[i]-zg[i]) > 1e-3*(1+math.Abs(zg[i])) {
			t.Fatalf("after fine-tuning, latent %d: ONNX Runtime %v, pure Go %v", i, zo[i], zg[i])
		}
	}
	if slices.Equal(zo, z) {
		t.Error("ONNX Runtime sessions still hold the weights from before fine-tuning")
	}
}

// Backend "cuda": without a GPU, New fails and says why; with NFBO_GPU=1 (on a GPU machine, DEVELOPERS.md "GPU
// work") a round trip, decoding against pure Go on the same weights, and a fine-tune on the GPU (engine/gpustep)
// that tracks the CPU's from the same stream, after which the GPU decoder holds the new weights.
func TestCUDA(t *testing.T) {
	ck := tiny(t)
	const T = 12
	f, err := seqflow.New(ck, T, seqflow.Options{Backend: "cuda"})
	if os.Getenv("NFBO_GPU") != "1" {
		if err == nil {
			f.Close()
			t.Skip("a GPU is present; run with NFBO_GPU=1")
		}
		t.Logf("without a GPU: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Backend() != "cuda" {
		t.Fatalf("backend %q", f.Backend())
	}
	g, err := seqflow.New(ck, T, seqflow.Options{}) // the CPU twin: pure Go, fine-tuned by the gorgonia graph
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x := seqs(rand.New(rand.NewPCG(3, 3)), 64, T, 12)
	for round := range 2 {
		z := roundTrip(t, f, x, fmt.Sprintf("GPU, round %d", round))
		// Random latents: the same tokens as pure Go with the GPU flow's weights.
		h, err := seqflow.New(&model.Checkpoint{Params: f.Params(), Vocab: ck.Vocab}, T, seqflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, uint64(round)))
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		xg, xc := make([]int, len(x)), make([]int, len(x))
		if err := f.Decode(ctx, xg, z); err != nil {
			t.Fatal(err)
		}
		if err := h.Decode(ctx, xc, z); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(xg, xc) {
			t.Errorf("round %d: GPU and pure Go decode random latents differently", round)
		}
		// Fine-tune both with the same stream: the weights stay within float32 drift of each other.
		if err := f.FineTune(ctx, x, rand.New(rand.NewPCG(4, 4))); err != nil {
			t.Fatal(err)
		}
		if err := g.FineTune(ctx, x, rand.New(rand.NewPCG(4, 4))); err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i, ts := range f.Params().Tensors() {
			want := g.Params().Tensors()[i].Data
			var d, n float64
			for j, v := range ts.Data {
				d += (float64(v) - float64(want[j])) * (float64(v) - float64(want[j]))
				n += float64(want[j]) * float64(want[j])
			}
			if e := math.Sqrt(d / max(n, 1e-300)); !(e <= 1e-3) {
				t.Errorf("round %d: fine-tuned %s is %.2g (relative) from the CPU's", round, ts.Name, e)
			} else {
				worst = max(worst, e)
			}
		}
		t.Logf("round %d: fine-tuned weights within %.2g (relative, per tensor) of the CPU's", round, worst)
	}
}
