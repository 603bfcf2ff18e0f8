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

// LSTMCellForward32 is one step of an LSTM's training forward pass through
// its cell for n rows of H units, keeping what LSTMCellGrad32 reads: act
// [n, 4H] holds the gate inputs without the bias (x·Wih + h·Whh, order i,
// f, g, o) and receives the activations σ(i), σ(f), tanh(g), σ(o); bias is
// one [4H] row for every row (biasPerRow false) or [n, 4H], a row each
// (layer 0's positional gates); cPrev [n, H] is the previous cell state.
// It writes
//
//	c = σ(f)·cPrev + σ(i)·tanh(g),  tc = tanh(c),  h = σ(o)·tc
//
// (c, tc and h [n, H]), each product and the sum rounded to float32 in
// that order. c may alias cPrev; nothing else aliases. The sigmoids and
// tanh are Sigmoid32s and Tanh32s, eight lanes at a time where the assembly
// runs.
func LSTMCellForward32(act, c, tc, h, cPrev, bias []float32, n, H int, biasPerRow bool) {
	checkDims("LSTMCellForward32", n, H)
	H4 := 4 * H
	checkLen("LSTMCellForward32", "act", len(act), n*H4)
	for _, s := range [...]struct {
		name string
		n    int
	}{{"c", len(c)}, {"tc", len(tc)}, {"h", len(h)}, {"cPrev", len(cPrev)}} {
		checkLen("LSTMCellForward32", s.name, s.n, n*H)
	}
	if biasPerRow {
		checkLen("LSTMCellForward32", "bias", len(bias), n*H4)
	} else {
		checkLen("LSTMCellForward32", "bias", len(bias), H4)
	}
	for r := range n {
		a := act[r*H4 : (r+1)*H4]
		b := bias[:H4]
		if biasPerRow {
			b = bias[r*H4 : (r+1)*H4]
		}
		Add32s(a, a, b)
		Sigmoid32s(a[:2*H], a[:2*H]) // input and forget gates
		Tanh32s(a[2*H:3*H], a[2*H:3*H])
		Sigmoid32s(a[3*H:], a[3*H:]) // output gate
		ig, fg, gg, og := a[:H], a[H:2*H], a[2*H:3*H], a[3*H:]
		cr, tr := c[r*H:(r+1)*H], tc[r*H:(r+1)*H]
		Mul32s(cr, fg, cPrev[r*H:(r+1)*H])
		Mul32s(tr, ig, gg)
		Add32s(cr, cr, tr)
		Tanh32s(tr, cr)
		Mul32s(h[r*H:(r+1)*H], og, tr)
	}
}
