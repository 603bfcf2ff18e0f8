package train

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// Adam defaults, PyTorch's torch.optim.Adam, and the reference's gradient
// clipping (nfbo_reference.md b: Adam lr 1e-3, clip 1.0).
const (
	DefaultLearnRate = 1e-3
	DefaultBeta1     = 0.9
	DefaultBeta2     = 0.999
	DefaultEpsilon   = 1e-8
	DefaultClipNorm  = 1.0
)

// Adam is PyTorch's Adam (no weight decay, no AMSGrad) over a fixed list of
// float32 tensors, preceded by clipping of the global gradient norm as
// torch.nn.utils.clip_grad_norm_ does. Its state (step count and both
// moments) round-trips through MarshalBinary for checkpoints.
//
// The zero value is not usable; call NewAdam.
type Adam struct {
	// LR is the learning rate (default 1e-3).
	LR float64
	// Beta1 and Beta2 are the moment decay rates (defaults 0.9, 0.999).
	Beta1, Beta2 float64
	// Eps is added to the denominator (default 1e-8).
	Eps float64
	// ClipNorm is the maximum global L2 norm of the gradient; ≤ 0 disables
	// clipping (default 1).
	ClipNorm float64
	// Frozen, when not nil, marks the tensors (by position) that an update
	// leaves as they are, moments included (the Trainer's device step takes
	// it as step.Options.FreezeEmbeddings; the tests' host Step reads it);
	// their gradients should be zero so that they do not count in the
	// clipping norm.
	Frozen []bool

	step int64
	m, v [][]float32 // per tensor, same lengths as the parameters
}

// NewAdam returns an Adam with the defaults and zero moments shaped like
// tensors (in that order, the order of model.Params.Tensors).
func NewAdam(tensors []*model.Tensor) *Adam {
	a := &Adam{LR: DefaultLearnRate, Beta1: DefaultBeta1, Beta2: DefaultBeta2,
		Eps: DefaultEpsilon, ClipNorm: DefaultClipNorm}
	for _, t := range tensors {
		a.m = append(a.m, make([]float32, t.Len()))
		a.v = append(a.v, make([]float32, t.Len()))
	}
	return a
}

// Steps returns the number of updates applied.
func (a *Adam) Steps() int64 { return a.step }

// normBlock is the number of entries whose squares GradNorm sums into one
// partial sum. It is fixed, not derived from the number of cores, so the
// norm's bits do not depend on the machine.
const normBlock = 1 << 14

// GradNorm returns the global L2 norm of grads: the float64 sums of squares
// of blocks of normBlock entries of each tensor, computed on every core,
// added in tensor and block order.
func GradNorm(grads [][]float32) float64 { return math.Sqrt(gradSumSquares(grads)) }

// gradSumSquares returns the sum of squares GradNorm takes the root of:
// float64 sums of blocks of normBlock entries, on every core, added in
// order.
func gradSumSquares(grads [][]float32) float64 {
	var blocks [][]float32
	for _, g := range grads {
		for lo := 0; lo < len(g); lo += normBlock {
			blocks = append(blocks, g[lo:min(lo+normBlock, len(g))])
		}
	}
	sums := make([]float64, len(blocks))
	parallelRows(len(blocks), normBlock, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sums[i] = sumSquares(blocks[i])
		}
	})
	var s float64
	for _, v := range sums {
		s += v
	}
	return s
}

// sumSquares returns Σ x_i² in float64, over four interleaved accumulators
// (entry i into accumulator i mod 4, then (s0 + s1) + (s2 + s3)): four
// independent chains of additions run about four times as fast as one.
func sumSquares(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// next counts one more step and returns its coefficients for gradients
// of global norm norm: the clipping factor (when the norm exceeds
// ClipNorm, ClipNorm/(norm + 1e-6), as PyTorch's) and the bias
// corrections of the step count.
func (a *Adam) next(norm float64) kernels.AdamCoeffs {
	scale := 1.0
	if a.ClipNorm > 0 {
		if c := a.ClipNorm / (norm + 1e-6); c < 1 {
			scale = c
		}
	}
	a.step++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.step))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.step))
	return kernels.AdamCoeffs{Scale: scale, Beta1: a.Beta1, Beta2: a.Beta2, StepSize: a.LR / bc1, BC2Sqrt: math.Sqrt(bc2), Eps: a.Eps}
}

// adamMagic starts an encoded Adam state.
const adamMagic = "NFBOADAM1"

// MarshalBinary encodes the hyperparameters, the step count and both
// moments, little-endian: magic, LR, Beta1, Beta2, Eps, ClipNorm (float64),
// step (int64), tensor count (uint32), then per tensor its length (uint32),
// m and v (float32s).
func (a *Adam) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(adamMagic)
	w := func(v any) { binary.Write(&buf, binary.LittleEndian, v) } // bytes.Buffer writes cannot fail
	w([]float64{a.LR, a.Beta1, a.Beta2, a.Eps, a.ClipNorm})
	w(a.step)
	w(uint32(len(a.m)))
	for i := range a.m {
		w(uint32(len(a.m[i])))
		w(a.m[i])
		w(a.v[i])
	}
	return buf.Bytes(), nil
}

// UnmarshalBinary restores a state written by MarshalBinary. The receiver
// must have been created by NewAdam for tensors of the same sizes; a
// mismatch is an error naming the tensor.
func (a *Adam) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	magic := make([]byte, len(adamMagic))
	if _, err := r.Read(magic); err != nil || string(magic) != adamMagic {
		return errors.New("train: Adam state: bad magic")
	}
	var hp [5]float64
	var step int64
	var n uint32
	rd := func(v any) error { return binary.Read(r, binary.LittleEndian, v) }
	if err := errors.Join(rd(&hp), rd(&step), rd(&n)); err != nil {
		return fmt.Errorf("train: Adam state header: %w", err)
	}
	if int(n) != len(a.m) {
		return fmt.Errorf("train: Adam state has %d tensors, model has %d", n, len(a.m))
	}
	m := make([][]float32, n)
	v := make([][]float32, n)
	for i := range m {
		var l uint32
		if err := rd(&l); err != nil {
			return fmt.Errorf("train: Adam state tensor %d: %w", i, err)
		}
		if int(l) != len(a.m[i]) {
			return fmt.Errorf("train: Adam state tensor %d has %d entries, model has %d", i, l, len(a.m[i]))
		}
		m[i], v[i] = make([]float32, l), make([]float32, l)
		if err := errors.Join(rd(m[i]), rd(v[i])); err != nil {
			return fmt.Errorf("train: Adam state tensor %d: %w", i, err)
		}
	}
	if r.Len() != 0 {
		return fmt.Errorf("train: Adam state: %d trailing bytes", r.Len())
	}
	a.LR, a.Beta1, a.Beta2, a.Eps, a.ClipNorm = hp[0], hp[1], hp[2], hp[3], hp[4]
	a.step, a.m, a.v = step, m, v
	return nil
}
