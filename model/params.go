package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Tensor is a named float32 array with its shape. Data is row-major: for a
// matrix of Shape [r, c], element (i, j) is Data[i*c+j].
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

func newTensor(name string, shape ...int) *Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return &Tensor{Name: name, Shape: shape, Data: make([]float32, n)}
}

// Len returns the number of elements.
func (t *Tensor) Len() int { return len(t.Data) }

// Dense is a fully connected layer y = x·W + b with W of shape [in, out]
// (row-vector convention: no transposes in the GEMMs) and b of shape [out].
type Dense struct {
	W, B *Tensor
}

// In returns the layer's input width.
func (d Dense) In() int { return d.W.Shape[0] }

// Out returns the layer's output width.
func (d Dense) Out() int { return d.W.Shape[1] }

// LSTMLayer holds one LSTM layer in PyTorch's form with the row-vector
// convention: gates = x·Wih + bih + h·Whh + bhh, of width 4H in the gate
// order i, f, g, o (input, forget, cell candidate, output);
// c' = σ(f)⊙c + σ(i)⊙tanh(g), h' = σ(o)⊙tanh(c').
// Wih has shape [in, 4H], Whh [H, 4H], Bih and Bhh [4H]. For layer 0,
// in = F + P and the input is [y_t ; posCode(t+1)]; for deeper layers in = H.
type LSTMLayer struct {
	Wih, Whh, Bih, Bhh *Tensor
}

// Coupling is one split coupling layer: an MLP of CouplingDepth hidden ReLU
// layers of width U and a linear output layer, applied to
// [conditioning dims (F/2) ; context (H)], whose F/2·NumParams outputs are
// read as [F/2 dims, NumParams] (parameter index fastest).
type Coupling struct {
	Layers []Dense
}

// Block is one autoregressive block.
//
// InitHidden maps the positional code of position 0 (width P) to the initial
// LSTM state through ReLU: Layers[0] is [P, H], Layers[1] is [H, 2·L·H], and
// output index layer·2H + unit·2 + {0: h, 1: c} gives the initial h and c of
// that LSTM layer and unit.
//
// Coupling layer j of block k uses the reversed split when (k + j) is odd:
// the natural split conditions on dims [0, F/2) and transforms [F/2, F);
// the reversed split conditions on [F/2, F) and transforms [0, F/2).
type Block struct {
	InitHidden []Dense
	LSTM       []LSTMLayer
	Couplings  []Coupling
}

// Params are all the weights of a SeqFlow.
//
// Embed has shape [V, F]; its rows are not normalised in storage (the
// reference initialises them N(0, 1)), the flow uses E[x]/‖E[x]‖.
type Params struct {
	Config Config
	Embed  *Tensor
	Blocks []Block
}

// NewParams returns parameters for cfg initialised as the reference does
// (PyTorch defaults): embedding N(0, 1); the initial-state MLP and the LSTM
// U(-1/√fan, 1/√fan) with fan the layer's input width (H for the LSTM);
// coupling weights U(-0.07, 0.07) and coupling biases 0, so that a new
// flow starts near the identity.
func NewParams(cfg Config, rng *rand.Rand) (*Params, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := ZeroParams(cfg)
	for i := range p.Embed.Data {
		p.Embed.Data[i] = float32(rng.NormFloat64())
	}
	uniform := func(t *Tensor, bound float64) {
		for i := range t.Data {
			t.Data[i] = float32((2*rng.Float64() - 1) * bound)
		}
	}
	for _, b := range p.Blocks {
		for _, d := range b.InitHidden {
			bound := 1 / math.Sqrt(float64(d.In()))
			uniform(d.W, bound)
			uniform(d.B, bound)
		}
		bound := 1 / math.Sqrt(float64(cfg.H))
		for _, l := range b.LSTM {
			uniform(l.Wih, bound)
			uniform(l.Whh, bound)
			uniform(l.Bih, bound)
			uniform(l.Bhh, bound)
		}
		for _, c := range b.Couplings {
			for _, d := range c.Layers {
				uniform(d.W, 0.07)
			}
		}
	}
	return p, nil
}

// ZeroParams returns parameters of cfg's shapes, all zero. It panics if cfg
// is invalid.
func ZeroParams(cfg Config) *Params {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	p := &Params{Config: cfg, Embed: newTensor("embed", cfg.V, cfg.F)}
	dense := func(name string, in, out int) Dense {
		return Dense{W: newTensor(name+".w", in, out), B: newTensor(name+".b", out)}
	}
	half := cfg.Half()
	for k := 0; k < cfg.Blocks; k++ {
		pre := fmt.Sprintf("block%d", k)
		var b Block
		b.InitHidden = []Dense{
			dense(pre+".init0", cfg.P(), cfg.H),
			dense(pre+".init1", cfg.H, 2*cfg.LSTMLayers*cfg.H),
		}
		for l := 0; l < cfg.LSTMLayers; l++ {
			in := cfg.H
			if l == 0 {
				in = cfg.F + cfg.P()
			}
			lp := fmt.Sprintf("%s.lstm%d", pre, l)
			b.LSTM = append(b.LSTM, LSTMLayer{
				Wih: newTensor(lp+".wih", in, 4*cfg.H),
				Whh: newTensor(lp+".whh", cfg.H, 4*cfg.H),
				Bih: newTensor(lp+".bih", 4*cfg.H),
				Bhh: newTensor(lp+".bhh", 4*cfg.H),
			})
		}
		for j := 0; j < cfg.Couplings; j++ {
			cp := fmt.Sprintf("%s.coupling%d", pre, j)
			var c Coupling
			in := half + cfg.H
			for d := 0; d < cfg.CouplingDepth; d++ {
				c.Layers = append(c.Layers, dense(fmt.Sprintf("%s.fc%d", cp, d), in, cfg.U))
				in = cfg.U
			}
			c.Layers = append(c.Layers, dense(fmt.Sprintf("%s.fc%d", cp, cfg.CouplingDepth), in, half*cfg.Transform.NumParams()))
			b.Couplings = append(b.Couplings, c)
		}
		p.Blocks = append(p.Blocks, b)
	}
	return p
}

// Reversed reports whether coupling layer j of block k uses the reversed
// split (conditioning on the upper half of the F dims).
func Reversed(k, j int) bool { return (k+j)%2 == 1 }

// Tensors returns every parameter tensor in a fixed order (embedding, then
// per block: initial-state MLP, LSTM layers, coupling layers). The order is
// the checkpoint's and the optimiser state's.
func (p *Params) Tensors() []*Tensor {
	ts := []*Tensor{p.Embed}
	for _, b := range p.Blocks {
		for _, d := range b.InitHidden {
			ts = append(ts, d.W, d.B)
		}
		for _, l := range b.LSTM {
			ts = append(ts, l.Wih, l.Whh, l.Bih, l.Bhh)
		}
		for _, c := range b.Couplings {
			for _, d := range c.Layers {
				ts = append(ts, d.W, d.B)
			}
		}
	}
	return ts
}

// NumParams returns the number of scalar parameters.
func (p *Params) NumParams() int {
	n := 0
	for _, t := range p.Tensors() {
		n += t.Len()
	}
	return n
}

// Clone returns a deep copy.
func (p *Params) Clone() *Params {
	q := ZeroParams(p.Config)
	src, dst := p.Tensors(), q.Tensors()
	for i := range src {
		copy(dst[i].Data, src[i].Data)
	}
	return q
}

// CopyEmbeddings sets p's token embeddings to src's, which must have the same
// shape [V, F]. It starts a model from another's token geometry (nfbo pretrain
// -init-embed); the caller checks that the two vocabularies list the same
// tokens in the same order.
func (p *Params) CopyEmbeddings(src *Params) error {
	if p.Embed.Shape[0] != src.Embed.Shape[0] || p.Embed.Shape[1] != src.Embed.Shape[1] {
		return fmt.Errorf("model: copy embeddings: shape %v into %v", src.Embed.Shape, p.Embed.Shape)
	}
	copy(p.Embed.Data, src.Embed.Data)
	return nil
}
