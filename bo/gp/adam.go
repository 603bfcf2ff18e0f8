package gp

import "math"

// Adam is the Adam optimiser (Kingma & Ba 2015) with PyTorch's defaults. Its state is exported so that a
// checkpoint can hold it and a resumed run continues with the same moments.
type Adam struct {
	LR    float64 // learning rate; if 0, the default is 1e-3
	Beta1 float64 // if 0, the default is 0.9
	Beta2 float64 // if 0, the default is 0.999
	Eps   float64 // if 0, the default is 1e-8

	Step int       // number of steps taken
	M1   []float64 // first moments, one per parameter
	M2   []float64 // second moments, one per parameter
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// Update takes one Adam step: theta −= lr·m̂/(√v̂ + eps). theta and grad must have the same length, and the
// same length at every call (the moments are allocated at the first call).
func (a *Adam) Update(theta, grad []float64) {
	if len(theta) != len(grad) {
		panic("gp: Adam: len(theta) != len(grad)")
	}
	if a.M1 == nil {
		a.M1 = make([]float64, len(theta))
		a.M2 = make([]float64, len(theta))
	}
	if len(a.M1) != len(theta) {
		panic("gp: Adam: parameter count changed")
	}
	lr := orDefault(a.LR, 1e-3)
	b1 := orDefault(a.Beta1, 0.9)
	b2 := orDefault(a.Beta2, 0.999)
	eps := orDefault(a.Eps, 1e-8)
	a.Step++
	c1 := 1 - math.Pow(b1, float64(a.Step))
	c2 := 1 - math.Pow(b2, float64(a.Step))
	step := lr / c1
	sc2 := math.Sqrt(c2)
	m1, m2 := a.M1[:len(theta)], a.M2[:len(theta)]
	for i, g := range grad {
		m1[i] = b1*m1[i] + (1-b1)*g
		m2[i] = b2*m2[i] + (1-b2)*g*g
		theta[i] -= step * m1[i] / (math.Sqrt(m2[i])/sc2 + eps)
	}
}

// ClipNorm scales grad in place so that its Euclidean norm is at most maxNorm (torch.nn.utils.clip_grad_norm_,
// which scales by maxNorm/(norm + 1e-6)) and returns the norm before clipping.
func ClipNorm(grad []float64, maxNorm float64) float64 {
	var ss float64
	for _, g := range grad {
		ss += g * g
	}
	norm := math.Sqrt(ss)
	if c := maxNorm / (norm + 1e-6); c < 1 {
		for i := range grad {
			grad[i] *= c
		}
	}
	return norm
}
