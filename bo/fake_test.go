package bo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// toyFlow is an exact "flow" over V tokens: token v at a position becomes the F=2 point
// (cos 2πv/V, sin 2πv/V) and decoding takes the cosine-nearest token per position.
type toyFlow struct {
	t, v      int
	finetunes uint64 // state changed by FineTune, checkpointed
	drift     uint64
	shift     int   // added to every decoded token (mod v): a flow that is not reproducible across a resume
	decodes   int   // Decode calls
	encoded   []int // the sequences of the last Encode call
}

func (f *toyFlow) Shape() (int, int) { return f.t, 2 }

func (f *toyFlow) Encode(ctx context.Context, dst []float64, tokens []int) error {
	f.encoded = append(f.encoded[:0], tokens...)
	for i, tok := range tokens {
		a := 2 * math.Pi * float64(tok) / float64(f.v)
		dst[2*i], dst[2*i+1] = math.Cos(a), math.Sin(a)
	}
	return ctx.Err()
}

func (f *toyFlow) Decode(ctx context.Context, dst []int, latents []float64) error {
	f.decodes++
	for i := range dst {
		x, y := latents[2*i], latents[2*i+1]
		best, bv := int(0), math.Inf(-1)
		for v := range f.v {
			a := 2 * math.Pi * float64(v) / float64(f.v)
			if c := (x*math.Cos(a) + y*math.Sin(a)) / (math.Hypot(x, y) + 1e-12); c > bv {
				best, bv = int(v), c
			}
		}
		dst[i] = (best + f.shift) % f.v
	}
	return ctx.Err()
}

func (f *toyFlow) FineTune(ctx context.Context, tokens []int, rng *rand.Rand) error {
	f.finetunes++
	f.drift ^= rng.Uint64()
	return ctx.Err()
}

func (f *toyFlow) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, f.finetunes), f.drift), nil
}

func (f *toyFlow) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return errors.New("toyFlow: bad state")
	}
	f.finetunes, f.drift = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	return nil
}

// toyCodec: a sequence is valid unless it starts with token 0; its key is the token string.
type toyCodec struct{}

func (toyCodec) Canonical(dst, tokens []int) (string, bool) {
	copy(dst, tokens)
	if tokens[0] == 0 {
		return "", false
	}
	var sb strings.Builder
	for _, t := range tokens {
		fmt.Fprintf(&sb, "%d.", t)
	}
	return sb.String(), true
}

// toyScorer scores a key by closeness to the target sequence 3,5,1,7,...; it counts its calls.
type toyScorer struct {
	calls int
	seen  map[string]int
}

func (s *toyScorer) Score(ctx context.Context, dst []float64, smiles []string) error {
	if s.seen == nil {
		s.seen = make(map[string]int)
	}
	target := []int{3, 5, 1, 7, 2, 6, 4, 3}
	for i, m := range smiles {
		s.calls++
		s.seen[m]++
		var v float64
		for k, f := range strings.Split(strings.TrimSuffix(m, "."), ".") {
			var x int
			fmt.Sscan(f, &x)
			d := float64(x - target[k%len(target)])
			v -= d * d
		}
		dst[i] = v / 100
	}
	return ctx.Err()
}

// memObjective is an Objective without a log.
type memObjective struct{ s *toyScorer }

func (m memObjective) Evaluate(ctx context.Context, smiles []string) ([]float64, []bool, error) {
	scores, paid := make([]float64, len(smiles)), make([]bool, len(smiles))
	for i := range paid {
		paid[i] = true
	}
	return scores, paid, m.s.Score(ctx, scores, smiles)
}

func toyInitial(rng *rand.Rand, n, t, v int) Initial {
	var in Initial
	canon := make([]int, t)
	seen := map[string]bool{}
	sc := &toyScorer{}
	for len(in.Y) < n {
		tok := make([]int, t)
		for k := range tok {
			tok[k] = int(rng.IntN(v))
		}
		s, ok := toyCodec{}.Canonical(canon, tok)
		if !ok || seen[s] {
			continue
		}
		seen[s] = true
		y := make([]float64, 1)
		sc.Score(context.Background(), y, []string{s})
		in.Tokens = append(in.Tokens, canon...)
		in.Y = append(in.Y, y[0])
		in.SMILES = append(in.SMILES, s)
	}
	return in
}
