//go:build cgo

package ort

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/nfbo/nfbo/engine/onnx"
	"github.com/nfbo/nfbo/engine/onnx/onnxpb"
	"github.com/nfbo/nfbo/model"
	ortgo "github.com/yalue/onnxruntime_go"
)

// env guards onnxruntime_go's process-wide environment.
var env struct {
	sync.Mutex
	path string // library of the initialised environment
}

// initEnv initialises the ONNX Runtime environment with the library at path,
// once per process.
func initEnv(path string) error {
	env.Lock()
	defer env.Unlock()
	if ortgo.IsInitialized() {
		if path != env.path {
			return fmt.Errorf("ort: ONNX Runtime already loaded from %s, cannot switch to %s", env.path, path)
		}
		return nil
	}
	ortgo.SetSharedLibraryPath(path)
	if err := ortgo.InitializeEnvironment(ortgo.WithLogLevelError()); err != nil {
		return fmt.Errorf("%w: load %s: %v", ErrUnavailable, path, err)
	}
	env.path = path
	return nil
}

// Runner is the ONNX Runtime model.LatentCodec: one encoder and one decoder session
// built from a Flow's weights, run in batches of at most Options.Batch
// sequences. Sessions are safe for concurrent Run calls.
//
// Decoding is sequential over the T positions. Tokens decode through step
// graphs (onnx.StepModel) driven from Go, position-major, each sequence
// leaving the batch at its <stop> (stepDecoder): 1.9-2.0x the sequences a
// second of the whole-sequence Loop on the shipped model (BENCHMARKS.md,
// "Decoding stops at <stop>"). The data-side vectors (DecodeVectorsTo with v) need
// every position and come from the Loop decoder (onnx.Decoder: each block one
// ONNX Loop, the same graph as the exported decoder file). Batches smaller
// than Options.MinDecodeBatch decode in pure Go instead, where ONNX Runtime's
// per-operator overhead would dominate. An unrolled graph took 20–40 s to
// load.
type Runner struct {
	cfg   model.Config
	enc   *ortgo.DynamicAdvancedSession
	dec   *ortgo.DynamicAdvancedSession // the Loop decoder, for the vectors
	step  *stepDecoder                  // tokens
	batch int
	lib   string

	minDecode int                  // smaller batches decode in pure Go
	goCodec   *model.GoLatentCodec // that pure-Go path
}

var _ model.LatentCodec = (*Runner)(nil)

// NewRunner exports f to ONNX and opens ONNX Runtime sessions for it. The
// error wraps ErrUnavailable when the library cannot be found or loaded.
func NewRunner(f *model.Flow, opt Options) (*Runner, error) {
	path := opt.LibPath
	if path == "" {
		var err error
		if path, err = FindLibrary(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := initEnv(path); err != nil {
		return nil, err
	}
	encM, err := onnx.Encoder(f)
	if err != nil {
		return nil, err
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	r := &Runner{cfg: f.Config(), batch: opt.batch(), lib: path,
		minDecode: opt.minDecodeBatch(), goCodec: model.NewGoLatentCodec(f, 0)}
	if r.enc, err = newSession(encM, []string{onnx.EncoderInput}, []string{onnx.EncoderOutput, onnx.EncoderLogDet}, threads, opt.Spin); err != nil {
		return nil, err
	}
	decM, err := onnx.Decoder(f)
	if err == nil {
		r.dec, err = newSession(decM, []string{onnx.DecoderInput}, []string{onnx.DecoderOutput, onnx.DecoderVectors}, threads, opt.Spin)
	}
	if err == nil {
		r.step, err = newStepDecoder(f, threads, opt.Spin)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func newSession(m *onnxpb.ModelProto, in, out []string, threads int, spin bool) (*ortgo.DynamicAdvancedSession, error) {
	data, err := onnx.Marshal(m)
	if err != nil {
		return nil, err
	}
	opts, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("ort: session options: %w", err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(threads); err != nil {
		return nil, fmt.Errorf("ort: session options: %w", err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("ort: session options: %w", err)
	}
	if !spin {
		if err := opts.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, fmt.Errorf("ort: session options: %w", err)
		}
	}
	s, err := ortgo.NewDynamicAdvancedSessionWithONNXData(data, in, out, opts)
	if err != nil {
		return nil, fmt.Errorf("ort: create session for %s: %w", m.GetGraph().GetName(), err)
	}
	return s, nil
}

// Backend returns "onnxruntime".
func (r *Runner) Backend() string { return "onnxruntime" }

// Library returns the path of the loaded ONNX Runtime library.
func (r *Runner) Library() string { return r.lib }

// Close destroys the sessions.
func (r *Runner) Close() error {
	var err error
	if r.enc != nil {
		err = r.enc.Destroy()
		r.enc = nil
	}
	if r.dec != nil {
		if e := r.dec.Destroy(); err == nil {
			err = e
		}
		r.dec = nil
	}
	if r.step != nil {
		if e := r.step.close(); err == nil {
			err = e
		}
		r.step = nil
	}
	return err
}

// EncodeTo implements model.LatentCodec.
func (r *Runner) EncodeTo(ctx context.Context, z []float32, x []int) error {
	return r.EncodeLogDetTo(ctx, z, nil, x)
}

// EncodeLogDetTo writes the latents z (B×T×F) of x (B×T) and, when logDet is
// not nil, the per-position log|∂z/∂v| (B×T), as model.Flow.ForwardTo does.
func (r *Runner) EncodeLogDetTo(ctx context.Context, z, logDet []float32, x []int) error {
	T, F := r.cfg.T, r.cfg.F
	B := batchOf("EncodeTo", len(x), T)
	checkLen("EncodeTo", "z", len(z), B*T*F)
	if logDet != nil {
		checkLen("EncodeTo", "logDet", len(logDet), B*T)
	}
	for i, id := range x {
		if id < 0 || id >= r.cfg.V {
			return fmt.Errorf("ort: token id %d at sequence %d position %d is outside [0, %d)", id, i/T, i%T, r.cfg.V)
		}
	}
	ids := make([]int64, 0, min(B, r.batch)*T)
	for b0 := 0; b0 < B; b0 += r.batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(r.batch, B-b0)
		ids = ids[:0]
		for _, id := range x[b0*T : (b0+n)*T] {
			ids = append(ids, int64(id))
		}
		in, err := ortgo.NewTensor(ortgo.NewShape(int64(n), int64(T)), ids)
		if err != nil {
			return fmt.Errorf("ort: encode input: %w", err)
		}
		outs := []ortgo.Value{nil, nil}
		err = r.enc.Run([]ortgo.Value{in}, outs)
		in.Destroy()
		if err != nil {
			return fmt.Errorf("ort: encode: %w", err)
		}
		copy(z[b0*T*F:(b0+n)*T*F], outs[0].(*ortgo.Tensor[float32]).GetData())
		if logDet != nil {
			copy(logDet[b0*T:(b0+n)*T], outs[1].(*ortgo.Tensor[float32]).GetData())
		}
		outs[0].Destroy()
		outs[1].Destroy()
	}
	return nil
}

// DecodeTo implements model.LatentCodec.
func (r *Runner) DecodeTo(ctx context.Context, x []int, z []float32) error {
	return r.DecodeVectorsTo(ctx, x, nil, z)
}

// DecodeVectorsTo writes the token ids x (B×T) of the latents z (B×T×F) and,
// when v is not nil, the data-side vectors (B×T×F), as model.Flow.InverseTo.
func (r *Runner) DecodeVectorsTo(ctx context.Context, x []int, v []float32, z []float32) error {
	T, F := r.cfg.T, r.cfg.F
	B := batchOf("DecodeTo", len(z), T*F)
	checkLen("DecodeTo", "x", len(x), B*T)
	if v != nil {
		checkLen("DecodeTo", "v", len(v), B*T*F)
	}
	if B < r.minDecode {
		return r.goDecode(ctx, x, v, z)
	}
	if v == nil {
		for b0 := 0; b0 < B; b0 += r.batch {
			n := min(r.batch, B-b0)
			if err := r.step.decode(ctx, x[b0*T:(b0+n)*T], z[b0*T*F:(b0+n)*T*F], n); err != nil {
				return err
			}
		}
		return nil
	}
	for b0 := 0; b0 < B; b0 += r.batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(r.batch, B-b0)
		// The tensor borrows z's memory; ONNX Runtime only reads it.
		in, err := ortgo.NewTensor(ortgo.NewShape(int64(n), int64(T), int64(F)), z[b0*T*F:(b0+n)*T*F])
		if err != nil {
			return fmt.Errorf("ort: decode input: %w", err)
		}
		outs := []ortgo.Value{nil, nil}
		err = r.dec.Run([]ortgo.Value{in}, outs)
		in.Destroy()
		if err != nil {
			return fmt.Errorf("ort: decode: %w", err)
		}
		for i, id := range outs[0].(*ortgo.Tensor[int64]).GetData() {
			x[b0*T+i] = int(id)
		}
		if v != nil {
			copy(v[b0*T*F:(b0+n)*T*F], outs[1].(*ortgo.Tensor[float32]).GetData())
		}
		outs[0].Destroy()
		outs[1].Destroy()
	}
	return nil
}

// goDecode decodes a batch too small for ONNX Runtime in pure Go.
func (r *Runner) goDecode(ctx context.Context, x []int, v, z []float32) error {
	return r.goCodec.DecodeVectorsTo(ctx, x, v, z)
}

func batchOf(fn string, n, per int) int {
	if n%per != 0 {
		panic(fmt.Sprintf("ort: %s: length %d is not a multiple of %d", fn, n, per))
	}
	return n / per
}

func checkLen(fn, name string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("ort: %s: len(%s) = %d, want %d", fn, name, got, want))
	}
}

// Available reports why ONNX Runtime cannot be used (an error wrapping
// ErrUnavailable), or nil when this build has cgo and FindLibrary finds the
// library. It does not load the library.
func Available() error {
	_, err := FindLibrary()
	return err
}
