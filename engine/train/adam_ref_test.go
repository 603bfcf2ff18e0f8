package train

import (
	"fmt"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// The host Adam step, the reference for the device step's AdamClipped
// (engine/step) in stepParity and the gorgonia graphTrainer's update.

// Step clips grads in place (when their global norm exceeds ClipNorm, all
// are scaled by ClipNorm/(norm + 1e-6), as PyTorch does) and applies one
// Adam update to params. grads[i] must have the length of params[i].Data.
// It returns the norm before clipping.
func (a *Adam) Step(params []*model.Tensor, grads [][]float32) float64 {
	norm := GradNorm(grads)
	a.stepNorm(params, grads, norm)
	return norm
}

// stepNorm is Step for grads whose norm the caller has computed.
func (a *Adam) stepNorm(params []*model.Tensor, grads [][]float32, norm float64) {
	if len(params) != len(a.m) || len(grads) != len(a.m) {
		panic(fmt.Sprintf("train: Adam has %d tensors, got %d params and %d grads", len(a.m), len(params), len(grads)))
	}
	c := a.next(norm)
	sizes := make([]int, len(params))
	for i, p := range params {
		if len(grads[i]) != len(p.Data) || len(a.m[i]) != len(p.Data) {
			panic(fmt.Sprintf("train: Adam tensor %d (%s): %d params, %d grads, %d moments", i, p.Name, len(p.Data), len(grads[i]), len(a.m[i])))
		}
		sizes[i] = len(p.Data)
	}
	// Entries are independent, so splitting them over the cores changes no
	// result.
	parallelParts(sizes, func(i, lo, hi int) {
		if a.Frozen == nil || !a.Frozen[i] {
			kernels.AdamUpdate(params[i].Data[lo:hi], grads[i][lo:hi], a.m[i][lo:hi], a.v[i][lo:hi], &c)
		}
	})
}

// parallelParts splits the concatenation of parts of the given sizes over
// the cores (parallelRows, one element of work an entry) and calls f(i, lo,
// hi) for every piece [lo, hi) of part i that a core gets: loops over many
// arrays of uneven sizes (a model's tensors) take one split, not one each.
func parallelParts(sizes []int, f func(i, lo, hi int)) {
	total := 0
	for _, n := range sizes {
		total += n
	}
	parallelRows(total, 1, func(lo, hi int) {
		off := 0 // first entry of part i in the concatenation
		for i, n := range sizes {
			if a, b := max(lo, off), min(hi, off+n); a < b {
				f(i, a-off, b-off)
			}
			off += n
		}
	})
}
