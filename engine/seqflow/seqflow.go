// Package seqflow adapts a SeqFlow (model.Flow for inference, engine/train for fine-tuning) to the optimiser's
// Flow and Checkpointer interfaces (package bo): float64 latents, one fixed sequence length T per run, fine-tuning
// that draws its randomness from the optimiser's random stream, and a binary state (weights and trainer state)
// that goes into the run directory's checkpoint.
//
// Encoding and decoding run through a model.LatentCodec: in pure Go (model.GoLatentCodec) or, with
// Options.Backend "ort" (or "auto" on a CPU without kernels' assembly), in batches on ONNX Runtime
// (engine/ort.Runner), whose sessions are rebuilt from the new weights after every fine-tune (0.1–0.5 s). With
// Backend "cuda" both run on the GPU (engine/gpuflow.LatentCodec, the weights uploaded again after every
// fine-tune), and so does fine-tuning (engine/gpustep as the trainer's Device, unless Options.Train.Device names
// another).
package seqflow

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/gpuflow"
	"github.com/nfbo/nfbo/engine/gpustep"
	"github.com/nfbo/nfbo/engine/ort"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// Backends are the names Options.Backend takes: the one list of the flow's backends, which the commands'
// -backend flags check against (CheckBackend). A new backend is a model.LatentCodec, a name here and a case
// in New.
var Backends = []string{"auto", "go", "ort", "cuda"}

// CheckBackend returns an error naming the backends when name is not one of Backends ("" is "go").
func CheckBackend(name string) error {
	if name == "" || slices.Contains(Backends, name) {
		return nil
	}
	return fmt.Errorf("backend %q: want %s", name, strings.Join(Backends, ", "))
}

// Options configure New. The zero value uses every core, pure Go, and the reference's fine-tuning settings.
type Options struct {
	// Workers is the number of goroutines for pure-Go encoding and decoding; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Backend runs encoding and decoding: "go" (or "") pure Go; "ort" ONNX Runtime, an error if its library
	// cannot be loaded; "auto" pure Go where kernels' assembly runs (kernels.PackedAccelerated: x86-64 with
	// AVX2 and FMA), where it decodes 1.6-2x as fast as ONNX Runtime, and elsewhere ONNX Runtime when its
	// library is found, else pure Go after one warning to Warn; "cuda" GPU 0 (engine/gpuflow), an error without
	// one, with fine-tuning on it too (engine/gpustep).
	Backend string
	// Warn receives the "auto" fallback warning; nil means os.Stderr.
	Warn io.Writer
	// Train configures the fine-tuning trainer (batch 32, Adam lr 1e-3, clip 1 by default).
	Train train.Options
}

// Flow is a SeqFlow at a fixed sequence length T, fine-tuned in place. It is not safe for concurrent use.
type Flow struct {
	params *model.Params     // the run's copy of the weights, Config.T = T
	flow   *model.Flow       // rebuilt from params after every fine-tune
	codec  model.LatentCodec // runs flow; reopened after every change of the weights
	gpu    *gpuflow.Engine   // with Backend "cuda": opened once, shared by every codec of the run
	gpuTr  *gpustep.Device   // with Backend "cuda": the trainer's Device, opened once
	tr     *train.Trainer
	src    *rand.PCG // the trainer's random source, reseeded from the optimiser's stream at every fine-tune
	opts   Options
	buf    []float32
	// saved is MarshalBinary's encoding of the present state, until a fine-tune or UnmarshalBinary changes it:
	// the optimiser saves the flow every iteration and fine-tunes it every few (pmo: every other one), and the
	// encoding of its 36 MB takes a sixth of a second.
	saved []byte
}

// New returns a Flow of ck's weights (copied; ck is not modified) used at sequence length t. The positional codes
// of a SeqFlow cover MaxT positions, so t may differ from the length the model was trained at: 2 ≤ t ≤ MaxT.
// Fine-tuning starts with a fresh Adam, as the reference creates its optimiser once per run.
func New(ck *model.Checkpoint, t int, opts Options) (*Flow, error) {
	p := ck.Params.Clone()
	if t < 2 || t > p.Config.MaxT {
		return nil, fmt.Errorf("seqflow: sequence length T = %d outside [2, %d] (the model's max_seq_len)", t, p.Config.MaxT)
	}
	p.Config.T = t
	f, err := model.NewFlow(p)
	if err != nil {
		return nil, fmt.Errorf("seqflow: %w", err)
	}
	if err := CheckBackend(opts.Backend); err != nil {
		return nil, fmt.Errorf("seqflow: %w", err)
	}
	fl := &Flow{params: p, flow: f, opts: opts}
	if opts.Backend == "cuda" && opts.Train.Device == nil {
		// First, so that without a GPU the error names every part missing (gpustep.UnavailableError).
		if fl.gpuTr, err = gpustep.Open(cuda.OSEnv(), 0); err != nil {
			return nil, fmt.Errorf("seqflow: backend cuda: %w", err)
		}
		opts.Train.Device = fl.gpuTr
	}
	if err := fl.open(); err != nil {
		if fl.gpuTr != nil {
			fl.gpuTr.Close()
		}
		return nil, err
	}
	fl.src = rand.NewPCG(0, 0)
	if fl.tr, err = train.NewTrainer(p, fl.src, opts.Train); err != nil {
		fl.Close()
		return nil, fmt.Errorf("seqflow: %w", err)
	}
	return fl, nil
}

// open (re)opens the codec for the current flow. After "auto" fell back to pure Go once, it stays there, so the
// warning is written once.
func (f *Flow) open() error {
	if f.codec != nil {
		f.codec.Close()
		f.codec = nil
	}
	var err error
	switch f.opts.Backend {
	case "", "go":
		f.codec = model.NewGoLatentCodec(f.flow, f.opts.Workers)
	case "ort":
		f.codec, err = ort.NewRunner(f.flow, ort.Options{})
	case "auto":
		// Decoding is most of the codec's work in a run; on kernels' assembly pure Go does it 1.6-2x as fast as
		// ONNX Runtime (BENCHMARKS.md, "The pure-Go decoder on AVX-512"), and after a fine-tune it only repacks
		// the weights, with no session to rebuild.
		if kernels.PackedAccelerated() {
			f.codec = model.NewGoLatentCodec(f.flow, f.opts.Workers)
			f.opts.Backend = "go"
			break
		}
		if f.codec, err = ort.Open(f.flow, ort.Options{Warn: f.opts.Warn}); err == nil && f.codec.Backend() == "go" {
			f.opts.Backend = "go"
		}
	case "cuda":
		if f.gpu == nil {
			f.gpu, err = gpuflow.Open(cuda.OSEnv(), 0)
		}
		if err == nil {
			var c *gpuflow.LatentCodec
			if c, err = f.gpu.NewLatentCodec(f.flow, 0); err == nil {
				f.codec = c
			}
		}
	}
	if err != nil {
		return fmt.Errorf("seqflow: %w", err)
	}
	return nil
}

// Backend names what runs encoding and decoding: "go", "onnxruntime" or "cuda".
func (f *Flow) Backend() string { return f.codec.Backend() }

// Engine describes the backend for people, as a run's first line names it: Backend, and for pure Go the
// micro-kernel its products run on ("pure Go on AVX-512 kernels").
func (f *Flow) Engine() string {
	if b := f.Backend(); b != "go" {
		return b
	}
	return "pure Go on " + kernels.PackedKernel() + " kernels"
}

// Close releases the ONNX Runtime sessions or the GPU, if any.
func (f *Flow) Close() error {
	err := f.codec.Close()
	if f.gpu != nil {
		err = errors.Join(err, f.gpu.Close())
		f.gpu = nil
	}
	if f.gpuTr != nil {
		err = errors.Join(err, f.gpuTr.Close())
		f.gpuTr = nil
	}
	return err
}

// Shape returns T and F.
func (f *Flow) Shape() (t, feat int) {
	c := f.params.Config
	return c.T, c.F
}

// Params returns the current (fine-tuned) weights; callers must not modify them.
func (f *Flow) Params() *model.Params { return f.params }

func (f *Flow) scratch(n int) []float32 {
	if cap(f.buf) < n {
		f.buf = make([]float32, n)
	}
	return f.buf[:n]
}

// ConfusedToken returns a token that the current (fine-tuned) flow decodes as another, and that token; (−1, −1)
// when every token decodes to itself (model.Flow.ConfusedToken).
func (f *Flow) ConfusedToken() (tok, as int) { return f.flow.ConfusedToken() }

// Encode writes the latents (B×D, D = T·F) of the token sequences (B×T) into dst.
func (f *Flow) Encode(ctx context.Context, dst []float64, tokens []int) error {
	z := f.scratch(len(dst))
	if err := f.codec.EncodeTo(ctx, z, tokens); err != nil {
		return fmt.Errorf("seqflow: encode: %w", err)
	}
	for i, v := range z {
		dst[i] = float64(v)
	}
	return nil
}

// Decode writes the token sequences (B×T) of the latents (B×D) into dst. The latents are rounded to float32, the
// flow's precision.
func (f *Flow) Decode(ctx context.Context, dst []int, latents []float64) error {
	z := f.scratch(len(latents))
	for i, v := range latents {
		z[i] = float32(v)
	}
	if err := f.codec.DecodeTo(ctx, dst, z); err != nil {
		return fmt.Errorf("seqflow: decode: %w", err)
	}
	return nil
}

// FineTune trains the flow for one epoch on the sequences (B×T) in batches of Options.Train.FineTuneBatch,
// continuing the run's Adam state. The trainer's random source (shuffling, dequantisation noise, dropout, negative
// tokens) is reseeded from rng first, so the result depends only on the state and rng.
func (f *Flow) FineTune(ctx context.Context, tokens []int, rng *rand.Rand) error {
	t := f.params.Config.T
	if len(tokens)%t != 0 {
		return fmt.Errorf("seqflow: fine-tune: %d tokens is not a multiple of T = %d", len(tokens), t)
	}
	seqs := make([][]int, len(tokens)/t)
	for i := range seqs {
		seqs[i] = tokens[i*t : (i+1)*t]
	}
	f.saved = nil
	f.src.Seed(rng.Uint64(), rng.Uint64())
	if _, err := f.tr.FineTune(ctx, f.params, seqs); err != nil {
		return fmt.Errorf("seqflow: fine-tune on %d sequences: %w", len(seqs), err)
	}
	return f.rebuild()
}

func (f *Flow) rebuild() error {
	fl, err := model.NewFlow(f.params)
	if err != nil {
		return fmt.Errorf("seqflow: %w", err)
	}
	f.flow = fl
	return f.open()
}

// state is what MarshalBinary writes.
type state struct {
	Version int
	Config  model.Config
	Weights [][]float32 // in model.Params.Tensors order
	Trainer []byte      // train.Trainer.MarshalState
}

const stateVersion = 1

// MarshalBinary encodes the weights and the trainer's state (Adam moments, random source).
func (f *Flow) MarshalBinary() ([]byte, error) {
	if f.saved != nil {
		return slices.Clone(f.saved), nil
	}
	st := state{Version: stateVersion, Config: f.params.Config}
	for _, t := range f.params.Tensors() {
		st.Weights = append(st.Weights, t.Data)
	}
	var err error
	if st.Trainer, err = f.tr.MarshalState(); err != nil {
		return nil, fmt.Errorf("seqflow: trainer state: %w", err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, fmt.Errorf("seqflow: encode state: %w", err)
	}
	f.saved = buf.Bytes()
	return slices.Clone(f.saved), nil
}

// UnmarshalBinary restores a state written by MarshalBinary for a flow of the same configuration.
func (f *Flow) UnmarshalBinary(data []byte) error {
	f.saved = nil
	var st state
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&st); err != nil {
		return fmt.Errorf("seqflow: decode state: %w", err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("seqflow: state version %d, want %d", st.Version, stateVersion)
	}
	if st.Config != f.params.Config {
		return fmt.Errorf("seqflow: state of a flow with config %+v, this one has %+v", st.Config, f.params.Config)
	}
	ts := f.params.Tensors()
	if len(st.Weights) != len(ts) {
		return fmt.Errorf("seqflow: state has %d tensors, want %d", len(st.Weights), len(ts))
	}
	for i, t := range ts {
		if len(st.Weights[i]) != len(t.Data) {
			return fmt.Errorf("seqflow: state tensor %d has %d values, want %d", i, len(st.Weights[i]), len(t.Data))
		}
	}
	for i, t := range ts {
		copy(t.Data, st.Weights[i])
	}
	if err := f.tr.UnmarshalState(st.Trainer); err != nil {
		return fmt.Errorf("seqflow: trainer state: %w", err)
	}
	return f.rebuild()
}
