// Package model holds SeqFlow, the autoregressive normalizing flow of NF-BO:
// its configuration and presets, its parameters with their exact layout, the
// checkpoint format, and the pure-Go inference path (encode, decode, log
// density) that is both the CPU fallback and the test oracle for the training
// step and the ONNX Runtime backend in engine/.
//
// Axis names are fixed project-wide: B batch, T positions, F features per
// token, D = T·F latent size, H LSTM hidden units, V vocabulary size,
// P = 2·MaxT positional-code width, U coupling-net hidden units.
//
// The structure follows the reference implementation (github.com/mlvlab/NFBO,
// generative_model/model/seqflow/lstm_flow.py, class AFPrior); see
// docs/ARCHITECTURE.md and the parameter layout in params.go.
package model

import (
	"errors"
	"fmt"
)

// Transform selects the element-wise invertible map inside each coupling layer.
type Transform int

const (
	// NLSq is the non-linear squared flow of Ziegler & Rush (2019): five raw
	// parameters per transformed scalar; its inverse is a cubic solved in
	// float64. It is the reference's choice.
	NLSq Transform = iota
	// Affine is u = a + exp(0.5·o1)·w: two raw parameters per scalar.
	Affine
)

// NumParams returns the number of raw coupling-net outputs per transformed scalar.
func (tr Transform) NumParams() int {
	switch tr {
	case NLSq:
		return 5
	case Affine:
		return 2
	}
	panic(fmt.Sprintf("model: unknown transform %d", int(tr)))
}

// String returns "nlsq" or "affine".
func (tr Transform) String() string {
	switch tr {
	case NLSq:
		return "nlsq"
	case Affine:
		return "affine"
	}
	return fmt.Sprintf("Transform(%d)", int(tr))
}

// ParseTransform parses "nlsq" or "affine".
func ParseTransform(s string) (Transform, error) {
	switch s {
	case "nlsq":
		return NLSq, nil
	case "affine":
		return Affine, nil
	}
	return 0, fmt.Errorf("model: unknown transform %q (want nlsq or affine)", s)
}

// Config is the shape of a SeqFlow. Every field must be set; use Paper or
// Small and adjust. The JSON names are the checkpoint's.
type Config struct {
	// V is the vocabulary size, <start> and <stop> included.
	V int `json:"vocab_size"`
	// F is the embedding width and the per-token latent width (reference: 40).
	F int `json:"features"`
	// T is the sequence length the flow is trained and decoded at: 1 + the
	// longest token sequence of the data, at most MaxT.
	T int `json:"seq_len"`
	// MaxT is the capacity of the positional one-hot codes (reference: 288);
	// the positional code has P = 2·MaxT entries.
	MaxT int `json:"max_seq_len"`
	// Blocks is K, the number of autoregressive LSTM blocks (reference: 5).
	Blocks int `json:"blocks"`
	// LSTMLayers is the depth of the LSTM inside each block (reference: 2).
	LSTMLayers int `json:"lstm_layers"`
	// H is the number of LSTM units, also the width of the initial-state
	// MLP's hidden layer (reference: 500).
	H int `json:"hidden"`
	// Couplings is the number of split coupling layers per block (reference: 10).
	Couplings int `json:"couplings"`
	// U is the hidden width of each coupling net (reference: 100).
	U int `json:"coupling_hidden"`
	// CouplingDepth is the number of hidden ReLU layers of each coupling net
	// (reference: 2).
	CouplingDepth int `json:"coupling_depth"`
	// Transform is the coupling's element-wise map (reference: NLSq).
	Transform Transform `json:"transform"`
	// Dropout is the LSTM dropout probability in training (reference: 0.2):
	// between LSTM layers and on the LSTM outputs used as context.
	Dropout float64 `json:"dropout"`
	// Noise is sigma of the dequantisation noise in training (reference: 0.1).
	Noise float64 `json:"noise"`
	// SimCoef is lambda, the weight of the similarity loss (reference: 1).
	SimCoef float64 `json:"sim_coef"`
}

// P returns the width of the positional code, 2·MaxT.
func (c Config) P() int { return 2 * c.MaxT }

// D returns the latent size T·F.
func (c Config) D() int { return c.T * c.F }

// Half returns the number of conditioning (and of transformed) dims per
// coupling layer, F/2.
func (c Config) Half() int { return c.F / 2 }

// Paper returns the reference configuration (F 40, 5 blocks of a 2-layer
// 500-unit LSTM and 10 NLSq couplings of 100 units) for a vocabulary of size
// v and sequence length t. With v = 185 it has 31.27M parameters.
func Paper(v, t int) Config {
	return Config{V: v, F: 40, T: t, MaxT: 288, Blocks: 5, LSTMLayers: 2, H: 500,
		Couplings: 10, U: 100, CouplingDepth: 2, Transform: NLSq,
		Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// Small returns the shipped default: the paper's structure sized to train on
// 2 CPU cores (2 blocks of a 1-layer 256-unit LSTM, 4 NLSq couplings of 64
// units).
func Small(v, t int) Config {
	return Config{V: v, F: 40, T: t, MaxT: 288, Blocks: 2, LSTMLayers: 1, H: 256,
		Couplings: 4, U: 64, CouplingDepth: 2, Transform: NLSq,
		Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// Medium returns the preset between Small and Paper: 3 blocks of a 1-layer
// 320-unit LSTM, 6 NLSq couplings of 80 units (2.6 times Small's products per
// sequence). Its size was chosen so that pretraining it to a flat validation
// curve takes a few hours of 2 CPU cores (BENCHMARKS.md, "medium").
func Medium(v, t int) Config {
	return Config{V: v, F: 40, T: t, MaxT: 288, Blocks: 3, LSTMLayers: 1, H: 320,
		Couplings: 6, U: 80, CouplingDepth: 2, Transform: NLSq,
		Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// Preset returns the named configuration ("small", "medium" or "paper").
func Preset(name string, v, t int) (Config, error) {
	switch name {
	case "paper":
		return Paper(v, t), nil
	case "medium":
		return Medium(v, t), nil
	case "small":
		return Small(v, t), nil
	}
	return Config{}, fmt.Errorf("model: unknown preset %q (want small, medium or paper)", name)
}

// Validate reports the first inconsistent field.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s = %d, must be positive", name, v))
		}
	}
	pos("vocab_size", c.V)
	pos("features", c.F)
	pos("seq_len", c.T)
	pos("max_seq_len", c.MaxT)
	pos("blocks", c.Blocks)
	pos("lstm_layers", c.LSTMLayers)
	pos("hidden", c.H)
	pos("couplings", c.Couplings)
	pos("coupling_hidden", c.U)
	pos("coupling_depth", c.CouplingDepth)
	if c.F%2 != 0 {
		errs = append(errs, fmt.Errorf("features = %d, must be even", c.F))
	}
	if c.T > c.MaxT {
		errs = append(errs, fmt.Errorf("seq_len = %d exceeds max_seq_len = %d", c.T, c.MaxT))
	}
	if c.V < 3 {
		errs = append(errs, fmt.Errorf("vocab_size = %d, need <start>, <stop> and a token", c.V))
	}
	if c.Transform != NLSq && c.Transform != Affine {
		errs = append(errs, fmt.Errorf("transform = %d unknown", int(c.Transform)))
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		errs = append(errs, fmt.Errorf("dropout = %g, must be in [0, 1)", c.Dropout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("model: invalid config: %w", err)
	}
	return nil
}

// MarshalText writes the transform's name, so checkpoints read "nlsq".
func (tr Transform) MarshalText() ([]byte, error) { return []byte(tr.String()), nil }

// UnmarshalText parses a transform's name.
func (tr *Transform) UnmarshalText(b []byte) error {
	v, err := ParseTransform(string(b))
	if err != nil {
		return err
	}
	*tr = v
	return nil
}
