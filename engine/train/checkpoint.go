package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/nfbo/nfbo/model"
)

// OptimKey is the name of the trainer's section in model.Checkpoint.Optim;
// its value is MarshalState's output.
const OptimKey = "engine/train.state"

// Checkpoint returns a model checkpoint of the trainer: its weights (shared
// with the trainer, not copied: save it before the next step), vocab, and
// the trainer state under OptimKey plus the given extra sections.
func (tr *Trainer) Checkpoint(vocab []string, extra map[string][]byte) (*model.Checkpoint, error) {
	st, err := tr.MarshalState()
	if err != nil {
		return nil, err
	}
	optim := map[string][]byte{OptimKey: st}
	for k, v := range extra {
		if k == OptimKey {
			return nil, fmt.Errorf("train: checkpoint section %q is reserved", k)
		}
		optim[k] = v
	}
	return &model.Checkpoint{Params: tr.p, Vocab: vocab, Optim: optim}, nil
}

// Restore returns a trainer of ck's weights (trained in place) continuing
// from the state under OptimKey: Adam moments, random stream and data
// position. Options must match the checkpointed run's (Batch, and the
// Device: the CPU and a GPU round differently) for the continuation to be
// bit for bit.
func Restore(ck *model.Checkpoint, opts Options) (*Trainer, error) {
	st, ok := ck.Optim[OptimKey]
	if !ok {
		return nil, fmt.Errorf("train: checkpoint has no %q section (not written by a trainer)", OptimKey)
	}
	tr, err := NewTrainer(ck.Params, rand.NewPCG(0, 0), opts)
	if err != nil {
		return nil, err
	}
	if err := tr.UnmarshalState(st); err != nil {
		return nil, err
	}
	return tr, nil
}
