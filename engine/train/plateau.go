package train

// Plateau is the rule that ends pretraining at a flat validation curve: the curve is flat once Patience
// validations in a row have not lowered the best validation NLL per token by at least MinDelta (an improvement
// smaller than MinDelta does not move Best, so a slow, steady descent still counts once it adds up). Best,
// BestStep, Since and Seen are its state, saved with a checkpoint so that a resumed run keeps counting.
type Plateau struct {
	// Patience is the number of validations without improvement that make the curve flat; 0: never flat.
	Patience int `json:"-"`
	// MinDelta is the least decrease of the validation NLL per token, in nats, that counts as an improvement.
	MinDelta float64 `json:"-"`

	// Best is the validation NLL per token of the last improvement, at step BestStep.
	Best     float64 `json:"best"`
	BestStep int64   `json:"best_step"`
	// Since counts the validations after BestStep.
	Since int `json:"since"`
	// Seen reports whether any validation was observed.
	Seen bool `json:"seen"`
}

// Observe records the validation NLL per token measured at step and reports whether the curve is now flat.
func (p *Plateau) Observe(step int64, nll float64) bool {
	if !p.Seen || nll < p.Best-p.MinDelta {
		p.Best, p.BestStep, p.Since, p.Seen = nll, step, 0, true
	} else {
		p.Since++
	}
	return p.Flat()
}

// Flat reports whether Patience validations in a row have passed without an improvement.
func (p *Plateau) Flat() bool { return p.Patience > 0 && p.Since >= p.Patience }
