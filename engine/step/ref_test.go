package step

import (
	"math"

	"github.com/nfbo/nfbo/kernels"
)

// ref is the float64 reference Device: every buffer holds float64 and every
// kernel is a plain loop written from its doc comment (NLSq's gradient from
// kernels.NLSqGrad, the float64 reference of the kernels). Run on it, the
// step computes its loss and gradients in float64, so central differences
// of the loss check the orchestration's backward pass.
type ref struct{}

var _ Device = ref{}

func mem(b Buf) []float64   { return b.Mem().([]float64)[b.Off() : b.Off()+b.Len()] }
func imem(b IntBuf) []int32 { return b.Mem().([]int32)[b.Off() : b.Off()+b.Len()] }

func (ref) Alloc(n int) Buf               { return NewBuf(make([]float64, n), n) }
func (ref) AllocInt(n int) IntBuf         { return NewIntBuf(make([]int32, n), n) }
func (ref) Free(Buf)                      {}
func (ref) FreeInt(IntBuf)                {}
func (ref) Zero(dst Buf)                  { clear(mem(dst)) }
func (ref) Copy(dst, src Buf)             { copy(mem(dst), mem(src)) }
func (ref) UploadInt(d IntBuf, s []int32) { copy(imem(d), s) }

func (ref) Upload(dst Buf, src []float32) {
	d := mem(dst)
	for i, v := range src {
		d[i] = float64(v)
	}
}

func (ref) Download(dst []float32, src Buf) error {
	s := mem(src)
	for i := range dst {
		dst[i] = float32(s[i])
	}
	return nil
}

func (ref) Gemm(tA, tB bool, alpha float32, a Buf, ar, ac int, b Buf, br, bc int, beta float32, c Buf) {
	A, Bm, C := mem(a), mem(b), mem(c)
	m, k := ar, ac
	if tA {
		m, k = ac, ar
	}
	n := bc
	if tB {
		n = br
	}
	at := func(i, l int) float64 {
		if tA {
			return A[l*ac+i]
		}
		return A[i*ac+l]
	}
	bt := func(l, j int) float64 {
		if tB {
			return Bm[j*bc+l]
		}
		return Bm[l*bc+j]
	}
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				s += at(i, l) * bt(l, j)
			}
			if beta == 0 {
				C[i*n+j] = float64(alpha) * s
			} else {
				C[i*n+j] = float64(alpha)*s + float64(beta)*C[i*n+j]
			}
		}
	}
}

func (ref) Add(dst, a, b Buf, n int) {
	d, x, y := mem(dst), mem(a), mem(b)
	for i := range n {
		d[i] = x[i] + y[i]
	}
}

func (ref) Mul(dst, a, b Buf, n int) {
	d, x, y := mem(dst), mem(a), mem(b)
	for i := range n {
		d[i] = x[i] * y[i]
	}
}

func (ref) BiasAct(y, bias Buf, n, w int, relu bool) {
	Y, b := mem(y), mem(bias)
	for i := range n * w {
		Y[i] += b[i%w]
		if relu && Y[i] < 0 {
			Y[i] = 0
		}
	}
}

func (ref) ReLUGrad(d, h Buf, n int) {
	D, H := mem(d), mem(h)
	for i := range n {
		if H[i] == 0 {
			D[i] = 0
		}
	}
}

func (ref) ColSums(dst, x Buf, n, w int) {
	d, X := mem(dst), mem(x)
	clear(d[:w])
	for i := range n * w {
		d[i%w] += X[i]
	}
}

func (ref) CopyCols(dst Buf, dstW, dstOff int, src Buf, srcW, srcOff, n, w int, acc bool) {
	d, s := mem(dst), mem(src)
	for r := range n {
		for i := range w {
			v := s[r*srcW+srcOff+i]
			if acc {
				v += d[r*dstW+dstOff+i]
			}
			d[r*dstW+dstOff+i] = v
		}
	}
}

func (ref) GatherRows(dst, table Buf, idx IntBuf, n, k, w int) {
	d, t, ix := mem(dst), mem(table), imem(idx)
	clear(d[:n*w])
	for r := range n {
		for _, j := range ix[k*r : k*r+k] {
			if j >= 0 {
				for i := range w {
					d[r*w+i] += t[int(j)*w+i]
				}
			}
		}
	}
}

func (ref) ScatterAddRows(dst, src Buf, idx IntBuf, n, k, w int) {
	d, s, ix := mem(dst), mem(src), imem(idx)
	for r := range n {
		for _, j := range ix[k*r : k*r+k] {
			if j >= 0 {
				for i := range w {
					d[int(j)*w+i] += s[r*w+i]
				}
			}
		}
	}
}

func sigm(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func (ref) LSTMCellForward(act, bias Buf, biasRows int, cPrev, c, tc, h Buf, B, H int) {
	a, bi, cp, cn, t, hh := mem(act), mem(bias), mem(cPrev), mem(c), mem(tc), mem(h)
	for b := range B {
		br := bi[:4*H]
		if biasRows > 1 {
			br = bi[b*4*H:]
		}
		g := a[b*4*H:]
		for u := range H {
			i, f := sigm(g[u]+br[u]), sigm(g[H+u]+br[H+u])
			gg, o := math.Tanh(g[2*H+u]+br[2*H+u]), sigm(g[3*H+u]+br[3*H+u])
			g[u], g[H+u], g[2*H+u], g[3*H+u] = i, f, gg, o
			k := b*H + u
			cn[k] = f*cp[k] + i*gg
			t[k] = math.Tanh(cn[k])
			hh[k] = o * t[k]
		}
	}
}

func (ref) LSTMCellBackward(dg, dc, act, tc, cPrev, dout, dh Buf, B, H int) {
	g, c, a, t, cp, o, h := mem(dg), mem(dc), mem(act), mem(tc), mem(cPrev), mem(dout), mem(dh)
	for b := range B {
		for u := range H {
			k, r := b*H+u, b*4*H
			i, f, gg, og := a[r+u], a[r+H+u], a[r+2*H+u], a[r+3*H+u]
			dht := o[k] + h[k]
			d := dht*og*(1-t[k]*t[k]) + c[k]
			g[r+u] = d * gg * i * (1 - i)
			g[r+H+u] = d * cp[k] * f * (1 - f)
			g[r+2*H+u] = d * i * (1 - gg*gg)
			g[r+3*H+u] = dht * t[k] * og * (1 - og)
			c[k] = d * f
		}
	}
}

// nlsqValues returns b, d, th = tanh(0.3·o2), E and f of one scalar's raw
// parameters.
func nlsqValues(p []float64) (b, d, th, E, f float64) {
	const r, rt = kernels.NLSqExpRate, kernels.NLSqTanhRate
	return math.Exp(r * p[1]), math.Exp(r * p[3]), math.Tanh(rt * p[2]), math.Exp(kernels.NLSqLogA + r*p[1] - r*p[3]), p[4]
}

func (ref) NLSqForward(out, o, w Buf, n, half int) {
	O, W, X := mem(out), mem(w), mem(o)
	for r := range n {
		var ld float64
		for i := range half {
			k := r*half + i
			b, d, th, E, f := nlsqValues(X[k*5:])
			x := W[k]
			s := d*x + f
			den := 1 + s*s
			O[r*(half+1)+i] = X[k*5] + b*x + th*E/den
			ld += math.Log(b - 2*th*E*d*s/(den*den))
		}
		O[r*(half+1)+half] = ld
	}
}

func (ref) NLSqBackward(dO, dw, o, w, dOut Buf, n, half int) {
	D, DW, X, W, G := mem(dO), mem(dw), mem(o), mem(w), mem(dOut)
	for r := range n {
		dl := G[r*(half+1)+half]
		for i := range half {
			k := r*half + i
			b, d, th, E, f := nlsqValues(X[k*5:])
			du := G[r*(half+1)+i]
			d1, d2, d3, d4, dx := kernels.NLSqGrad(b, d, th, E, f, W[k], du, dl)
			D[k*5], D[k*5+1], D[k*5+2], D[k*5+3], D[k*5+4] = du, d1, d2, d3, d4
			DW[k] = dx
		}
	}
}

func (ref) AffineForward(out, o, w Buf, n, half int) {
	O, X, W := mem(out), mem(o), mem(w)
	for r := range n {
		var ld float64
		for i := range half {
			k := r*half + i
			O[r*(half+1)+i] = X[2*k] + math.Exp(0.5*X[2*k+1])*W[k]
			ld += 0.5 * X[2*k+1]
		}
		O[r*(half+1)+half] = ld
	}
}

func (ref) AffineBackward(dO, dw, o, w, dOut Buf, n, half int) {
	D, DW, X, W, G := mem(dO), mem(dw), mem(o), mem(w), mem(dOut)
	for r := range n {
		dl := G[r*(half+1)+half]
		for i := range half {
			k := r*half + i
			e, du := math.Exp(0.5*X[2*k+1]), G[r*(half+1)+i]
			D[2*k], D[2*k+1] = du, du*0.5*e*W[k]+0.5*dl
			DW[k] = du * e
		}
	}
}

func (ref) NormalizeRows(dst, src Buf, n, w int) {
	d, s := mem(dst), mem(src)
	for r := range n {
		var ss float64
		for _, v := range s[r*w : (r+1)*w] {
			ss += v * v
		}
		for i, v := range s[r*w : (r+1)*w] {
			d[r*w+i] = v / math.Sqrt(ss)
		}
	}
}

func (ref) NormalizeRowsGrad(dsrc, ddst, src Buf, n, w int) {
	dx, dy, x := mem(dsrc), mem(ddst), mem(src)
	for r := range n {
		var ss, xd float64
		for i, v := range x[r*w : (r+1)*w] {
			ss += v * v
			xd += v * dy[r*w+i]
		}
		for i, v := range x[r*w : (r+1)*w] {
			dx[r*w+i] = (dy[r*w+i] - v*xd/ss) / math.Sqrt(ss)
		}
	}
}

// dots returns ‖v‖, v·ex and v·ej of row r.
func dots(v, ex, ej []float64, r, w int) (nv, p, q float64) {
	var ss float64
	for i := r * w; i < (r+1)*w; i++ {
		ss += v[i] * v[i]
		p += v[i] * ex[i]
		q += v[i] * ej[i]
	}
	return math.Sqrt(ss), p, q
}

func (ref) Similarity(sim, v, ex, ej Buf, n, w int) {
	s, V, X, J := mem(sim), mem(v), mem(ex), mem(ej)
	for r := range n {
		nv, p, q := dots(V, X, J, r, w)
		s[r] = 1 - p/nv + math.Max(0, q/nv)
	}
}

func (ref) SimilarityGrad(dex, dej, dv, v, ex, ej, coef Buf, n, w int) {
	DX, DJ, DV, V, X, J, C := mem(dex), mem(dej), mem(dv), mem(v), mem(ex), mem(ej), mem(coef)
	for r := range n {
		nv, p, q := dots(V, X, J, r, w)
		for i := r * w; i < (r+1)*w; i++ {
			vh := V[i] / nv
			gv := -(X[i] - p/nv*vh) / nv
			gj := 0.0
			if q > 0 {
				gv += (J[i] - q/nv*vh) / nv
				gj = vh
			}
			DX[i] = DV[i] + C[r]*(gv-vh)
			DJ[i] = C[r] * gj
		}
	}
}

func (ref) GaussNLL(nll, y, logdet Buf, n, w int) {
	N, Y, L := mem(nll), mem(y), mem(logdet)
	for r := range n {
		var ss float64
		for _, v := range Y[r*w : (r+1)*w] {
			ss += v * v
		}
		N[r] = 0.5*ss + 0.5*float64(w)*math.Log(2*math.Pi) - L[r]
	}
}

func (ref) GaussNLLGrad(dy, y, s Buf, n, w int) {
	D, Y, S := mem(dy), mem(y), mem(s)
	for i := range n * w {
		D[i] = S[i/w] * Y[i]
	}
}

func amem(a Acc) []float64 { return a.Mem().([]float64) }

func (ref) AllocAcc(n int) Acc { return NewAcc(make([]float64, n), n) }
func (ref) FreeAcc(Acc)        {}
func (ref) ZeroAcc(a Acc)      { clear(amem(a)) }
func (ref) ReadAcc(dst []float64, a Acc) error {
	copy(dst, amem(a))
	return nil
}

func (ref) SumLoss(acc Acc, slot int, nll, sim, wt Buf, n int, simCoef float64) {
	N, S, W, a := mem(nll), mem(sim), mem(wt), amem(acc)
	for r := range n {
		a[slot] += W[r] * (N[r] + simCoef*S[r])
		if W[r] != 0 {
			a[slot+1] += N[r]
			a[slot+2] += S[r]
			a[slot+3]++
		}
	}
}

func (ref) SumSquares(acc Acc, slot int, x Buf, n int) {
	for _, v := range mem(x)[:n] {
		amem(acc)[slot] += v * v
	}
}

// f32s and put64 move between the reference's float64 buffers and the
// float32 slices of the draws' Go twins.
func f32s(b Buf, n int) []float32 {
	out := make([]float32, n)
	for i, v := range mem(b)[:n] {
		out[i] = float32(v)
	}
	return out
}

func put64(b Buf, x []float32) {
	for i, v := range x {
		mem(b)[i] = float64(v)
	}
}

func (ref) Layout(wt, negWt, simC Buf, pos IntBuf, pos0 Buf, lens IntBuf, B, T, maxT, real int, simCoef float32) {
	N := T * B
	w, nw, sc, p0 := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, B*2*maxT)
	LayoutTo(w, nw, sc, imem(pos), p0, imem(lens)[:B], T, maxT, real, simCoef)
	put64(wt, w)
	put64(negWt, nw)
	put64(simC, sc)
	put64(pos0, p0)
}

func (ref) DrawNegatives(neg, tok IntBuf, wt Buf, n, V int, key kernels.PhiloxKey) {
	NegativesTo(imem(neg)[:n], imem(tok)[:n], f32s(wt, n), V, key)
}

func (ref) DrawNoise(eps Buf, tok IntBuf, wt, en Buf, n, F, V int, sigma float64, rounds int, key kernels.PhiloxKey, acc Acc, slot int) {
	e := make([]float32, n*F)
	amem(acc)[slot] += float64(NoiseTo(e, imem(tok)[:n], f32s(wt, n), f32s(en, V*F), F, sigma, rounds, key))
	put64(eps, e)
}

func (ref) DrawDropout(mask Buf, n int, p float64, key kernels.PhiloxKey, stream int) {
	m := make([]float32, n)
	DropoutTo(m, p, key, stream)
	put64(mask, m)
}

func (r ref) AdamClipped(p, g, m, v Buf, n int, c kernels.AdamCoeffs, clip float64, acc Acc, lossSlot, sqSlot int) {
	a := amem(acc)
	if !Finite(a[lossSlot], a[sqSlot]) {
		return
	}
	c.Scale = ClipScale(a[sqSlot], clip)
	r.Adam(p, g, m, v, n, c)
}

func (ref) Adam(p, g, m, v Buf, n int, c kernels.AdamCoeffs) {
	P, G, M, V := mem(p), mem(g), mem(m), mem(v)
	for i := range n {
		gi := G[i] * c.Scale
		M[i] = c.Beta1*M[i] + (1-c.Beta1)*gi
		V[i] = c.Beta2*V[i] + (1-c.Beta2)*gi*gi
		P[i] -= c.StepSize * M[i] / (math.Sqrt(V[i])/c.BC2Sqrt + c.Eps)
	}
}

func (r ref) LSTMForward(act, bias Buf, biasRows int, whh, c0, c, tc, out Buf, S, B, H int) {
	RecurrenceForward(r, act, bias, biasRows, whh, c0, c, tc, out, S, B, H)
}

func (r ref) LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut Buf, S, B, H int) {
	RecurrenceBackward(r, dG, dh, dc, act, tc, c, c0, whh, dOut, S, B, H)
}
