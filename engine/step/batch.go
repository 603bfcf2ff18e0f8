package step

import (
	"fmt"

	"github.com/nfbo/nfbo/model"
)

// Batch is one training step's inputs, drawn on the host so that every
// device sees the same ones (engine/train's prepareBatch and its dropout
// masks draw them). For B sequences of the config's T positions, rows are
// t-major: row r = t·B + b holds position t of sequence b, N = T·B rows in
// all, and S = T − 1 is the number of LSTM steps.
type Batch struct {
	// Tok is the true token of each row [N]; Neg the negative token of the
	// similarity loss, −1 for none [N].
	Tok, Neg []int32
	// Eps is the dequantisation noise σ·n of each row [N, F], already
	// rejection-sampled so that it never changes the nearest token.
	Eps []float32
	// Wt is each row's weight in the loss [N]: 1/B_real for the rows of a
	// real sequence within its padded length, 0 for the others.
	Wt []float32
	// Lens is the padded length T_b of each sequence [B] (2 ≤ T_b ≤ T),
	// nil when all are T. It decides the positional codes.
	Lens []int
	// InterMask holds the inverted-dropout masks (entries 0 or 1/(1−p))
	// applied to the output of every LSTM layer but the top one, entry
	// k·(L−1) + l for layer l of block k, each [S·B, H] (none for one
	// layer); CtxMask those of each block's context, [N, H]. CtxMask nil
	// means no dropout (the config's rate is 0, or evaluation), and then
	// InterMask is nil too.
	InterMask, CtxMask [][]float32
}

// check returns an error naming the first input of the wrong size for cfg
// and B sequences, or an index outside its table.
func (b *Batch) check(cfg model.Config, B int) error {
	T, F, H, V := cfg.T, cfg.F, cfg.H, cfg.V
	N, S := T*B, T-1
	for _, c := range [...]struct {
		name      string
		got, want int
	}{{"Tok", len(b.Tok), N}, {"Neg", len(b.Neg), N}, {"Eps", len(b.Eps), N * F}, {"Wt", len(b.Wt), N}} {
		if c.got != c.want {
			return fmt.Errorf("step: batch %s has %d entries, want %d (B=%d, T=%d)", c.name, c.got, c.want, B, T)
		}
	}
	for r := range N {
		if x, j := b.Tok[r], b.Neg[r]; x < 0 || int(x) >= V || j < -1 || int(j) >= V {
			return fmt.Errorf("step: batch row %d: token %d, negative %d outside vocabulary [0, %d)", r, x, j, V)
		}
	}
	if b.Lens != nil {
		if len(b.Lens) != B {
			return fmt.Errorf("step: batch has %d lengths, want %d", len(b.Lens), B)
		}
		for i, l := range b.Lens {
			if l < 2 || l > T {
				return fmt.Errorf("step: sequence %d has padded length %d, want 2..%d", i, l, T)
			}
		}
	}
	if b.CtxMask == nil {
		if b.InterMask != nil {
			return fmt.Errorf("step: batch has %d inter-layer dropout masks and no context masks", len(b.InterMask))
		}
		return nil
	}
	if len(b.InterMask) != cfg.Blocks*(cfg.LSTMLayers-1) || len(b.CtxMask) != cfg.Blocks {
		return fmt.Errorf("step: batch has %d inter-layer and %d context masks, want %d and %d",
			len(b.InterMask), len(b.CtxMask), cfg.Blocks*(cfg.LSTMLayers-1), cfg.Blocks)
	}
	for i, m := range b.InterMask {
		if len(m) != S*B*H {
			return fmt.Errorf("step: inter-layer mask %d has %d entries, want %d", i, len(m), S*B*H)
		}
	}
	for i, m := range b.CtxMask {
		if len(m) != N*H {
			return fmt.Errorf("step: context mask %d has %d entries, want %d", i, len(m), N*H)
		}
	}
	return nil
}

// PosRows writes into dst [2·S·B] the two rows of layer 0's positional
// weights Wih[F:] that the code c_{s+1} of input row r = s·B + b selects
// (step s of sequence b): the code [onehot(t) ; onehot(MaxT + T_b − 1 − t)]
// of position t = s + 1 has its ones at s + 1 and at MaxT + T_b − 2 − s,
// measured from the sequence's padded end T_b = lens[b]; steps past that
// end, whose rows carry no loss, read the code of distance 0. Every first
// row is s + 1 < MaxT, every second one ≥ MaxT, so a step's first rows
// are the S rows 1..S.
func PosRows(dst []int32, lens []int, S, maxT int) {
	B := len(lens)
	if len(dst) < 2*S*B {
		panic(fmt.Sprintf("step: PosRows: len(dst) = %d, want %d", len(dst), 2*S*B))
	}
	for s := range S {
		for b, T := range lens {
			r := s*B + b
			dst[2*r] = int32(s + 1)
			dst[2*r+1] = int32(maxT + max(T-2-s, 0))
		}
	}
}

// PosCode0 writes into dst [B, 2·MaxT] (zeroed first) the positional code
// c_0 of each sequence, the input of the initial-state MLP: ones at 0 and
// MaxT + T_b − 1, T_b = lens[b].
func PosCode0[T float32 | float64](dst []T, lens []int, maxT int) {
	P := 2 * maxT
	if len(dst) < len(lens)*P {
		panic(fmt.Sprintf("step: PosCode0: len(dst) = %d, want %d", len(dst), len(lens)*P))
	}
	clear(dst[:len(lens)*P])
	for b, T := range lens {
		dst[b*P] = 1
		dst[b*P+maxT+T-1] = 1
	}
}
