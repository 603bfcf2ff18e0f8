package kernels

import "math"

// AdamCoeffs are the scalars of one Adam update (see AdamUpdate).
type AdamCoeffs struct {
	Scale    float64 // gradient scale (clipping), 1 for none
	Beta1    float64 // first-moment decay
	Beta2    float64 // second-moment decay
	StepSize float64 // learning rate / (1 − Beta1^t)
	BC2Sqrt  float64 // √(1 − Beta2^t)
	Eps      float64 // added to the denominator
}

// AdamUpdate applies one Adam update to the parameters p with gradients g
// and moments m and v (all of len(p)), in float64 arithmetic on float32
// storage: with gj = Scale·g[j],
//
//	m[j] = Beta1·m[j] + (1−Beta1)·gj,  v[j] = Beta2·v[j] + (1−Beta2)·gj·gj
//	p[j] −= StepSize·m[j] / (√v[j]/BC2Sqrt + Eps)
//
// where m[j] and v[j] are rounded to float32 before the last line. The
// assembly (four lanes of float64, no fused multiply-adds) gives the same
// bits as the Go loop.
func AdamUpdate(p, g, m, v []float32, c *AdamCoeffs) {
	n := len(p)
	checkLen("AdamUpdate", "g", len(g), n)
	checkLen("AdamUpdate", "m", len(m), n)
	checkLen("AdamUpdate", "v", len(v), n)
	i := adamVec(p, g, m, v, c)
	adamGo(p[i:n], g[i:n], m[i:n], v[i:n], c)
}

func adamGo(p, g, m, v []float32, c *AdamCoeffs) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for j := range p {
		gj := float64(g[j]) * c.Scale
		mj := c.Beta1*float64(m[j]) + (1-c.Beta1)*gj
		vj := c.Beta2*float64(v[j]) + (1-c.Beta2)*gj*gj
		m[j], v[j] = float32(mj), float32(vj)
		denom := math.Sqrt(float64(v[j]))/c.BC2Sqrt + c.Eps
		p[j] = float32(float64(p[j]) - c.StepSize*float64(m[j])/denom)
	}
}

// LSTMCellGrad32 is one row's step of an LSTM's backward pass through its
// cell, for H units (H = len(tc)): from the gate activations act [4H]
// (input, forget, candidate, output), tanh of the cell tc [H], the previous
// cell cp [H], the gradients dout [H] of the row's output and dh [H] from
// the later steps, and dc [H] from the later steps, it writes the gate
// input gradients dg [4H] and replaces dc by the gradient for the previous
// step:
//
//	dht = dout + dh,  dcell = dht·o·(1−tc²) + dc
//	dg = (dcell·g·i·(1−i), dcell·cp·f·(1−f), dcell·i·(1−g²), dht·tc·o·(1−o)),  dc = dcell·f
//
// The assembly (eight lanes, no fused multiply-adds) gives the Go loop's
// bits.
func LSTMCellGrad32(dg, dc, act, tc, cp, dout, dh []float32) {
	H := len(tc)
	checkLen("LSTMCellGrad32", "dg", len(dg), 4*H)
	checkLen("LSTMCellGrad32", "act", len(act), 4*H)
	for _, s := range [...]struct {
		name string
		n    int
	}{{"dc", len(dc)}, {"cp", len(cp)}, {"dout", len(dout)}, {"dh", len(dh)}} {
		checkLen("LSTMCellGrad32", s.name, s.n, H)
	}
	u := lstmGradVec(dg, dc, act, tc, cp, dout, dh, H)
	lstmGradGo(dg, dc, act, tc, cp, dout, dh, H, u)
}

// lstmGradGo does units [u0, H) of LSTMCellGrad32.
func lstmGradGo(dg, dc, act, tc, cp, dout, dh []float32, H, u0 int) {
	for u := u0; u < H; u++ {
		i, f, gg, o := act[u], act[H+u], act[2*H+u], act[3*H+u]
		t := tc[u]
		dht := dout[u] + dh[u]
		d := dht*o*(1-t*t) + dc[u]
		dg[u] = d * gg * i * (1 - i)
		dg[H+u] = d * cp[u] * f * (1 - f)
		dg[2*H+u] = d * i * (1 - gg*gg)
		dg[3*H+u] = dht * t * o * (1 - o)
		dc[u] = d * f
	}
}
