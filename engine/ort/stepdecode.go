//go:build cgo

package ort

import (
	"context"
	"fmt"

	"github.com/nfbo/nfbo/engine/onnx"
	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
	ortgo "github.com/yalue/onnxruntime_go"
)

// stepDecoder decodes tokens position by position through one onnx.StepModel session per block, driven from
// Go, and drops each sequence from the batch once it has decoded <stop>: what follows <stop> is forced to <stop>
// (model.ForceStop), so those positions need not be computed, and molecules about half as long as T then cost
// about half a decode (issue #32). It is model.Flow.DecodeTo's order on ONNX Runtime; the Loop decoder
// (onnx.Decoder) stays for the data-side vectors, which need every position. The step graphs and the Loop round
// differently in float32: on the shipped model's perturbed encodings a near tie flips in about 0.5 % of the
// sequences between them, as between either and pure Go (TestDecodeAgreesTrained).
type stepDecoder struct {
	cfg    model.Config
	steps  []*ortgo.DynamicAdvancedSession // per block
	h0, c0 [][][]float32                   // per block and layer, length H
	unit   []float32                       // V×F unit embedding
}

// stepNames returns the input and output names of a step model with the given LSTM layers.
func stepNames(layers int) (in, out []string) {
	in = []string{onnx.StepInputZ, onnx.StepInputT}
	out = []string{onnx.StepOutput}
	for l := 0; l < layers; l++ {
		h, c := fmt.Sprintf(onnx.StepState, l), fmt.Sprintf(onnx.StepCell, l)
		in = append(in, h, c)
		out = append(out, h+onnx.StepOutSuffix, c+onnx.StepOutSuffix)
	}
	return in, out
}

// newStepDecoder opens the step sessions of f's blocks.
func newStepDecoder(f *model.Flow, threads int, spin bool) (*stepDecoder, error) {
	cfg := f.Config()
	d := &stepDecoder{cfg: cfg, unit: f.UnitEmbedding()}
	in, out := stepNames(cfg.LSTMLayers)
	for k := range cfg.Blocks {
		m, err := onnx.StepModel(f, k)
		if err != nil {
			d.close()
			return nil, err
		}
		s, err := newSession(m, in, out, threads, spin)
		if err != nil {
			d.close()
			return nil, err
		}
		d.steps = append(d.steps, s)
		cst := f.Constants(k)
		d.h0, d.c0 = append(d.h0, cst.H0), append(d.c0, cst.C0)
	}
	return d, nil
}

func (d *stepDecoder) close() error {
	var err error
	for _, s := range d.steps {
		if e := s.Destroy(); err == nil {
			err = e
		}
	}
	d.steps = nil
	return err
}

// decode writes to x (n×T) the ids of the latents z (n×T×F).
func (d *stepDecoder) decode(ctx context.Context, x []int, z []float32, n int) error {
	cfg := d.cfg
	T, F, H, L, V, K := cfg.T, cfg.F, cfg.H, cfg.LSTMLayers, cfg.V, cfg.Blocks
	// states[k][2l], states[k][2l+1]: block k's layer-l h and c, n×H of which the first m rows live.
	states := make([][][]float32, K)
	for k := range K {
		states[k] = make([][]float32, 2*L)
		for l := range L {
			h, c := make([]float32, n*H), make([]float32, n*H)
			for b := range n {
				copy(h[b*H:(b+1)*H], d.h0[k][l])
				copy(c[b*H:(b+1)*H], d.c0[k][l])
			}
			states[k][2*l], states[k][2*l+1] = h, c
		}
	}
	var all [][]float32 // every block's states, for DropStopped
	for k := range K {
		all = append(all, states[k]...)
	}
	rows := make([]int, n) // live row i decodes sequence rows[i]
	for i := range rows {
		rows[i] = i
	}
	y := make([]float32, n*F)
	ids, scores := make([]int, n), make([]float32, n*V)
	in := make([]ortgo.Value, 2+2*L)
	out := make([]ortgo.Value, 1+2*L)
	destroy := func(vals []ortgo.Value) {
		for i, v := range vals {
			if v != nil {
				v.Destroy()
				vals[i] = nil
			}
		}
	}
	defer destroy(in)
	defer destroy(out)
	m := n
	for t := 0; t < T && m > 0; t++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, r := range rows[:m] {
			copy(y[i*F:(i+1)*F], z[(r*T+t)*F:(r*T+t+1)*F])
		}
		for k := K - 1; k >= 0; k-- {
			// The inputs borrow y's and the states' memory; ONNX Runtime only reads them, and the outputs it
			// allocates are copied back after the run.
			var err error
			if in[0], err = ortgo.NewTensor(ortgo.NewShape(int64(m), int64(F)), y[:m*F]); err == nil {
				in[1], err = ortgo.NewScalar(int64(t))
			}
			for s := 0; s < 2*L && err == nil; s++ {
				in[2+s], err = ortgo.NewTensor(ortgo.NewShape(int64(m), int64(H)), states[k][s][:m*H])
			}
			if err == nil {
				err = d.steps[k].Run(in, out)
			}
			destroy(in)
			if err != nil {
				destroy(out)
				return fmt.Errorf("ort: decode block %d position %d: %w", k, t, err)
			}
			copy(y[:m*F], out[0].(*ortgo.Tensor[float32]).GetData())
			for s := range 2 * L {
				copy(states[k][s][:m*H], out[1+s].(*ortgo.Tensor[float32]).GetData())
			}
			destroy(out)
		}
		kernels.NearestCosineTo(ids[:m], y[:m*F], d.unit, scores, m, F, V)
		m = model.DropStopped(x, T, t, ids[:m], rows, H, all)
	}
	return nil
}
