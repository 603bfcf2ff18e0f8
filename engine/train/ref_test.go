package train

import (
	"math"

	"github.com/nfbo/nfbo/kernels"
	"github.com/nfbo/nfbo/model"
)

// This file is an independent float64 implementation of the SeqFlow density
// and training loss, written from nfbo_reference.md (a) and (b) with plain
// loops, as the oracle for the gorgonia graph.

func at(t *model.Tensor, i, j int) float64 { return float64(t.Data[i*t.Shape[len(t.Shape)-1]+j]) }

// dense64 returns x·W + b for W [in, out].
func dense64(d model.Dense, x []float64) []float64 {
	in, out := d.In(), d.Out()
	y := make([]float64, out)
	for o := range out {
		s := float64(d.B.Data[o])
		for i := range in {
			s += x[i] * at(d.W, i, o)
		}
		y[o] = s
	}
	return y
}

func relu64(x []float64) []float64 {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
	return x
}

func sigm(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// posCode64 returns the positional code of position t of a sequence of
// length T.
func posCode64(cfg model.Config, T, t int) []float64 {
	c := make([]float64, cfg.P())
	if t < T {
		c[t] = 1
		c[cfg.MaxT+T-1-t] = 1
	}
	return c
}

// refLogDensity returns log p(v)_t for one sequence v [T][F] (no dropout),
// its length T = len(v) deciding the positional codes.
func refLogDensity(p *model.Params, v [][]float64) []float64 {
	cfg := p.Config
	T, F, H, L, half := len(v), cfg.F, cfg.H, cfg.LSTMLayers, cfg.Half()
	np := cfg.Transform.NumParams()
	ld := make([]float64, T)
	y := make([][]float64, T)
	for t := range T {
		y[t] = append([]float64(nil), v[t]...)
	}
	for k, blk := range p.Blocks {
		st := dense64(blk.InitHidden[1], relu64(dense64(blk.InitHidden[0], posCode64(cfg, T, 0))))
		h := make([][]float64, L)
		c := make([][]float64, L)
		for l := range L {
			h[l], c[l] = make([]float64, H), make([]float64, H)
			for u := range H {
				h[l][u] = st[l*2*H+u*2]
				c[l][u] = st[l*2*H+u*2+1]
			}
		}
		ctx := make([][]float64, T)
		ctx[0] = append([]float64(nil), h[L-1]...)
		for t := 0; t < T-1; t++ {
			x := append(append([]float64(nil), y[t]...), posCode64(cfg, T, t+1)...)
			for l, lp := range blk.LSTM {
				in := len(x)
				g := make([]float64, 4*H)
				for o := range 4 * H {
					s := float64(lp.Bih.Data[o]) + float64(lp.Bhh.Data[o])
					for i := range in {
						s += x[i] * at(lp.Wih, i, o)
					}
					for i := range H {
						s += h[l][i] * at(lp.Whh, i, o)
					}
					g[o] = s
				}
				for u := range H {
					ig, fg, gg, og := sigm(g[u]), sigm(g[H+u]), math.Tanh(g[2*H+u]), sigm(g[3*H+u])
					c[l][u] = fg*c[l][u] + ig*gg
					h[l][u] = og * math.Tanh(c[l][u])
				}
				x = append([]float64(nil), h[l]...)
			}
			ctx[t+1] = append([]float64(nil), h[L-1]...)
		}
		for t := range T {
			for j, cp := range blk.Couplings {
				condOff, transOff := 0, half
				if model.Reversed(k, j) {
					condOff, transOff = half, 0
				}
				hh := append(append([]float64(nil), y[t][condOff:condOff+half]...), ctx[t]...)
				for d, layer := range cp.Layers {
					hh = dense64(layer, hh)
					if d < len(cp.Layers)-1 {
						hh = relu64(hh)
					}
				}
				for i := range half {
					o := hh[i*np : (i+1)*np]
					w := y[t][transOff+i]
					var u, lderiv float64
					if cfg.Transform == model.Affine {
						u = o[0] + math.Exp(0.5*o[1])*w
						lderiv = 0.5 * o[1]
					} else {
						a, b, d, f := o[0], math.Exp(0.4*o[1]), math.Exp(0.4*o[3]), o[4]
						cc := math.Tanh(0.3*o[2]) * math.Exp(kernels.NLSqLogA+0.4*o[1]-0.4*o[3])
						s := d*w + f
						den := 1 + s*s
						u = a + b*w + cc/den
						lderiv = math.Log(b - 2*cc*d*s/(den*den))
					}
					y[t][transOff+i] = u
					ld[t] += lderiv
				}
			}
		}
	}
	out := make([]float64, T)
	for t := range T {
		var sq float64
		for _, e := range y[t] {
			sq += e * e
		}
		out[t] = -0.5*sq - 0.5*float64(F)*math.Log(2*math.Pi) + ld[t]
	}
	return out
}

// refLoss returns Σ_b wt_b Σ_t (nll + λ·sim) for the inputs of a batch
// (rows t·B + b) and the per-row nll. A sequence with a padded length T_b
// (in.lens) is evaluated as a sequence of T_b positions; its later rows
// have weight 0 and nll 0 here.
func refLoss(p *model.Params, in *batchInputs, B int) (loss float64, nll []float64) {
	cfg := p.Config
	T, F, V := cfg.T, cfg.F, cfg.V
	en := normalisedEmbeddings(p)
	nll = make([]float64, T*B)
	for b := range B {
		v := make([][]float64, T)
		sims := make([]float64, T)
		for t := range T {
			r := t*B + b
			var ex, ej []float64
			ej = make([]float64, F)
			for j := range V {
				if int(in.tok[r]) == j {
					ex = en[j*F : (j+1)*F]
				}
				if int(in.neg[r]) == j {
					ej = en[j*F : (j+1)*F]
				}
			}
			v[t] = make([]float64, F)
			var n2, dp, dn float64
			for i := range F {
				v[t][i] = ex[i] + in.eps[r*F+i]
				n2 += v[t][i] * v[t][i]
				dp += v[t][i] * ex[i]
				dn += v[t][i] * ej[i]
			}
			sims[t] = 1 - dp/math.Sqrt(n2) + math.Max(0, dn/math.Sqrt(n2))
		}
		Tb := T
		if in.lens != nil {
			Tb = in.lens[b]
		}
		lp := refLogDensity(p, v[:Tb])
		for t := range Tb {
			r := t*B + b
			nll[r] = -lp[t]
			loss += in.wt[r] * (nll[r] + cfg.SimCoef*sims[t])
		}
	}
	return loss, nll
}
