package model

import (
	"math"

	"github.com/nfbo/nfbo/kernels"
)

// refFlow is a deliberately naive float64 re-implementation of SeqFlow from
// nfbo_reference.md (a), used as the oracle for Flow: one sequence at a
// time, dense one-hot positional inputs (no row-lookup shortcut), the full
// [cond ; ctx] input to every coupling net, no precomputed biases.
type refFlow struct{ p *Params }

func f64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// dense returns x·W + b for one row x.
func refDense(d Dense, x []float64) []float64 {
	in, out := d.In(), d.Out()
	y := f64(d.B.Data)
	for i := 0; i < in; i++ {
		if x[i] == 0 {
			continue
		}
		for j := 0; j < out; j++ {
			y[j] += x[i] * float64(d.W.Data[i*out+j])
		}
	}
	return y
}

func refRelu(x []float64) []float64 {
	for i := range x {
		x[i] = math.Max(0, x[i])
	}
	return x
}

// posCode returns c_t = [onehot_MaxT(t); onehot_MaxT(T−1−t)], or zeros for t = T.
func (r refFlow) posCode(t int) []float64 {
	cfg := r.p.Config
	c := make([]float64, cfg.P())
	if t < cfg.T {
		c[t] = 1
		c[cfg.MaxT+cfg.T-1-t] = 1
	}
	return c
}

type refLSTMState struct{ h, c [][]float64 }

func (r refFlow) initState(k int) refLSTMState {
	cfg := r.p.Config
	b := r.p.Blocks[k]
	out := refDense(b.InitHidden[1], refRelu(refDense(b.InitHidden[0], r.posCode(0))))
	var s refLSTMState
	for l := 0; l < cfg.LSTMLayers; l++ {
		h, c := make([]float64, cfg.H), make([]float64, cfg.H)
		for u := 0; u < cfg.H; u++ {
			h[u] = out[l*2*cfg.H+u*2]
			c[u] = out[l*2*cfg.H+u*2+1]
		}
		s.h = append(s.h, h)
		s.c = append(s.c, c)
	}
	return s
}

// step advances the LSTM of block k with input x (F+P wide).
func (r refFlow) step(k int, s refLSTMState, x []float64) {
	cfg := r.p.Config
	H := cfg.H
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for l, lw := range r.p.Blocks[k].LSTM {
		in := len(x)
		g := make([]float64, 4*H)
		for j := range g {
			g[j] = float64(lw.Bih.Data[j]) + float64(lw.Bhh.Data[j])
			for i := 0; i < in; i++ {
				g[j] += x[i] * float64(lw.Wih.Data[i*4*H+j])
			}
			for i := 0; i < H; i++ {
				g[j] += s.h[l][i] * float64(lw.Whh.Data[i*4*H+j])
			}
		}
		for u := 0; u < H; u++ {
			c := sig(g[H+u])*s.c[l][u] + sig(g[u])*math.Tanh(g[2*H+u])
			s.c[l][u] = c
			s.h[l][u] = sig(g[3*H+u]) * math.Tanh(c)
		}
		x = append([]float64(nil), s.h[l]...)
	}
}

// raw returns the coupling net's outputs for conditioning dims cond and context ctx.
func (r refFlow) raw(k, j int, cond, ctx []float64) []float64 {
	layers := r.p.Blocks[k].Couplings[j].Layers
	x := append(append([]float64(nil), cond...), ctx...)
	for d := 0; d < len(layers)-1; d++ {
		x = refRelu(refDense(layers[d], x))
	}
	return refDense(layers[len(layers)-1], x)
}

// pseudo returns NLSq's (a, b, c, d, f) in float64 without float32 rounding.
func refPseudo(o []float64) (a, b, c, d, f float64) {
	logA := math.Log(8*math.Sqrt(3)/9 - 0.05)
	return o[0], math.Exp(0.4 * o[1]), math.Tanh(0.3*o[2]) * math.Exp(logA+0.4*o[1]-0.4*o[3]), math.Exp(0.4 * o[3]), o[4]
}

// transform maps the transformed dims w (in place) forward or inverse and
// returns Σ log(du/dw).
func (r refFlow) transform(w, raw []float64, forward bool) float64 {
	cfg := r.p.Config
	np := cfg.Transform.NumParams()
	ld := 0.0
	for i := range w {
		o := raw[i*np : (i+1)*np]
		if cfg.Transform == Affine {
			s := 0.5 * o[1]
			if forward {
				w[i] = o[0] + math.Exp(s)*w[i]
			} else {
				w[i] = (w[i] - o[0]) * math.Exp(-s)
			}
			ld += s
			continue
		}
		a, b, c, d, f := refPseudo(o)
		var l float64
		if forward {
			w[i], l = kernels.NLSqForward64(w[i], a, b, c, d, f)
		} else {
			w[i], l = kernels.NLSqInverse64(w[i], a, b, c, d, f)
		}
		ld += l
	}
	return ld
}

func (r refFlow) coupling(k, j int, y, ctx []float64, forward bool) float64 {
	half := r.p.Config.Half()
	condOff, transOff := 0, half
	if Reversed(k, j) {
		condOff, transOff = half, 0
	}
	raw := r.raw(k, j, y[condOff:condOff+half], ctx)
	return r.transform(y[transOff:transOff+half], raw, forward)
}

// forward maps one sequence's embeddings v (T×F) to z and per-position log-dets.
func (r refFlow) forward(v []float64) (z []float64, ld []float64) {
	cfg := r.p.Config
	T, F := cfg.T, cfg.F
	y := append([]float64(nil), v...)
	ld = make([]float64, T)
	for k := 0; k < cfg.Blocks; k++ {
		s := r.initState(k)
		ctxs := [][]float64{append([]float64(nil), s.h[cfg.LSTMLayers-1]...)}
		for t := 0; t+1 < T; t++ {
			r.step(k, s, append(append([]float64(nil), y[t*F:(t+1)*F]...), r.posCode(t+1)...))
			ctxs = append(ctxs, append([]float64(nil), s.h[cfg.LSTMLayers-1]...))
		}
		for t := 0; t < T; t++ {
			for j := 0; j < cfg.Couplings; j++ {
				ld[t] += r.coupling(k, j, y[t*F:(t+1)*F], ctxs[t], true)
			}
		}
	}
	return y, ld
}

// inverse maps one sequence's latent z (T×F) back to the data side.
func (r refFlow) inverse(z []float64) []float64 {
	cfg := r.p.Config
	T, F := cfg.T, cfg.F
	y := append([]float64(nil), z...)
	for k := cfg.Blocks - 1; k >= 0; k-- {
		s := r.initState(k)
		for t := 0; t < T; t++ {
			ctx := append([]float64(nil), s.h[cfg.LSTMLayers-1]...)
			for j := cfg.Couplings - 1; j >= 0; j-- {
				r.coupling(k, j, y[t*F:(t+1)*F], ctx, false)
			}
			r.step(k, s, append(append([]float64(nil), y[t*F:(t+1)*F]...), r.posCode(t+1)...))
		}
	}
	return y
}
