package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/nfbo/nfbo/model"
	"gorgonia.org/tensor"
)

// graphTrainer trains and evaluates p on the gorgonia graph, as the Trainer
// did before engine/step became its one step: the tests' oracle for whole
// steps and densities, and the baseline of the step benchmarks. Its inputs
// come from prepareBatch and fillDropout (host draws from rng), not from
// engine/step's Philox draws, so it agrees with a Trainer on the same
// inputs only (stepParity gives both the same batch).
type graphTrainer struct {
	p       *model.Params
	opts    graphOpts
	adam    *Adam
	rng     *rand.Rand
	tensors []*model.Tensor
	index   map[*model.Tensor]int
	grads   [][]float32
	frozen  bool
	trainG  map[int]*flowGraph
	evalG   map[int]*flowGraph
}

// fusedOpts are the fused graph's options (one op per LSTM layer and per
// coupling), the former production graph.
var fusedOpts = graphOpts{lstmOp: true, couplingOp: true}

// newGraphTrainer returns a graphTrainer of p (trained in place) with the
// graph options o, drawing from src.
func newGraphTrainer(p *model.Params, src *rand.PCG, o graphOpts, frozen bool) *graphTrainer {
	gt := &graphTrainer{p: p, opts: o, rng: rand.New(src), tensors: p.Tensors(), index: map[*model.Tensor]int{},
		frozen: frozen, trainG: map[int]*flowGraph{}, evalG: map[int]*flowGraph{}}
	for i, t := range gt.tensors {
		gt.index[t] = i
		gt.grads = append(gt.grads, make([]float32, t.Len()))
	}
	gt.adam = NewAdam(gt.tensors)
	if frozen {
		gt.adam.Frozen = make([]bool, len(gt.tensors))
		gt.adam.Frozen[gt.index[p.Embed]] = true
	}
	return gt
}

// graph returns the graph of kind for batches of B, compiled on first use.
func (gt *graphTrainer) graph(B int, kind graphKind) (*flowGraph, error) {
	cache := gt.trainG
	if kind == kindEval {
		cache = gt.evalG
	}
	if g, ok := cache[B]; ok {
		return g, nil
	}
	g, err := buildGraphOpts(gt.p, B, tensor.Float32, kind, gt.opts)
	if err != nil {
		return nil, err
	}
	cache[B] = g
	return g, nil
}

// step runs one optimiser step on seqs (1 ≤ len(seqs) ≤ B) padded to lens
// (nil: T) with the training graph for batch size B.
func (gt *graphTrainer) step(seqs [][]int, lens []int, B int) (StepStats, error) {
	g, err := gt.graph(B, kindTrain)
	if err != nil {
		return StepStats{}, err
	}
	in := prepareBatch(gt.p, seqs, lens, B, gt.p.Config.Noise, gt.rng)
	if err := g.run(in, gt.p.Config.Dropout, gt.rng); err != nil {
		return StepStats{}, err
	}
	st := graphStats(g, in)
	gt.collectGrads(g)
	if gt.frozen {
		clear(gt.grads[gt.index[gt.p.Embed]])
	}
	norm := GradNorm(gt.grads)
	if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return st, fmt.Errorf("%w: loss %g, gradient norm %g", ErrNonFinite, st.Loss, norm)
	}
	gt.adam.stepNorm(gt.tensors, gt.grads, norm)
	st.GradNorm = norm
	return st, nil
}

// collectGrads copies the gradient of every slot of g into gt.grads, the
// slots' concatenation split over the cores.
func (gt *graphTrainer) collectGrads(g *flowGraph) {
	sizes := make([]int, len(g.slots))
	for i, s := range g.slots {
		sizes[i] = s.size()
	}
	parallelParts(sizes, func(i, lo, hi int) {
		s := g.slots[i]
		dst := gt.grads[gt.index[s.t]][s.off+lo : s.off+hi]
		copy(dst, s.grad.Value().Data().([]float32)[lo:hi])
	})
}

// graphStats returns the statistics of g's last run on in.
func graphStats(g *flowGraph, in *batchInputs) StepStats {
	nll, sim := g.rowValues(0), g.rowValues(1)
	st := StepStats{Loss: g.lossValue(), Rejected: in.rejected, Seqs: in.real}
	var n float64
	for r, w := range in.wt {
		if w != 0 {
			st.NLL += nll[r]
			st.Sim += sim[r]
			n++
		}
	}
	st.NLL /= n
	st.Sim /= n
	return st
}

// evaluate is Evaluate on the forward-only graph for batches of B, with
// dequantisation noise from a fixed seed (prepareBatch's draws).
func (gt *graphTrainer) evaluate(ctx context.Context, seqs [][]int, B int) (EvalStats, error) {
	g, err := gt.graph(B, kindEval)
	if err != nil {
		return EvalStats{}, err
	}
	rng := rand.New(rand.NewPCG(valSeed, 0))
	var es EvalStats
	for i := 0; i < len(seqs); i += B {
		if err := ctx.Err(); err != nil {
			return EvalStats{}, err
		}
		part := seqs[i:min(i+B, len(seqs))]
		in := prepareBatch(gt.p, part, nil, B, gt.p.Config.Noise, rng)
		if err := g.run(in, 0, nil); err != nil {
			return EvalStats{}, err
		}
		st := graphStats(g, in)
		es.add(st.NLL, st.Sim, len(part))
	}
	es.finish(gt.p)
	return es, nil
}

// logDensity returns log p(v) of each sequence of seqs, v the normalised
// embeddings without noise, summed over positions (nats), from the
// forward-only float32 graph for batches of B.
func (gt *graphTrainer) logDensity(ctx context.Context, seqs [][]int, B int) ([]float64, error) {
	if err := checkSeqs(gt.p.Config, seqs); err != nil {
		return nil, err
	}
	g, err := gt.graph(B, kindEval)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(seqs))
	for i := 0; i < len(seqs); i += B {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		part := seqs[i:min(i+B, len(seqs))]
		in := prepareBatch(gt.p, part, nil, B, 0, nil)
		if err := g.run(in, 0, nil); err != nil {
			return nil, err
		}
		nll := g.rowValues(0)
		for b := range part {
			var s float64
			for t := range gt.p.Config.T {
				s -= nll[t*B+b]
			}
			out = append(out, s)
		}
	}
	return out, nil
}
