package train

import (
	"fmt"
	"math"
)

// Anneal is a learning-rate schedule that brings a pretraining to a flat validation curve in a chosen number of
// steps: the rate is Peak up to step From, falls along a half cosine to Min at step To, and stays at Min after.
// At a constant rate Adam keeps moving every weight by about the rate each step, and the validation NLL goes on
// falling ever more slowly for epochs (the small preset, BENCHMARKS.md); a falling rate settles the weights
// where the noise of the batches averages out, which is the flat curve "trained to convergence" asks for.
// Steps count optimiser steps of the run, a resumed run's earlier ones included.
type Anneal struct {
	From int64   `json:"from"`
	To   int64   `json:"to"`
	Peak float64 `json:"peak"`
	Min  float64 `json:"min"`
}

// LR returns the learning rate of the optimiser step taken after step steps.
func (a Anneal) LR(step int64) float64 {
	switch {
	case step <= a.From:
		return a.Peak
	case step >= a.To:
		return a.Min
	}
	frac := float64(step-a.From) / float64(a.To-a.From)
	return a.Min + (a.Peak-a.Min)*(1+math.Cos(math.Pi*frac))/2
}

// Validate reports a schedule that does not fall: From before To, 0 ≤ Min ≤ Peak, both finite.
func (a Anneal) Validate() error {
	if a.From < 0 || a.To <= a.From {
		return fmt.Errorf("train: learning-rate decay from step %d to step %d: the end must come after the start", a.From, a.To)
	}
	if !(a.Min >= 0 && a.Min <= a.Peak) || math.IsInf(a.Peak, 0) {
		return fmt.Errorf("train: learning-rate decay from %g to %g: want 0 ≤ end ≤ start, finite", a.Peak, a.Min)
	}
	return nil
}
