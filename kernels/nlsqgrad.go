package kernels

// NLSqGrad returns the gradient of du·u(w) + dl·log u′(w) for one scalar of
// the NLSq transform (see NLSq) with respect to its raw outputs o1..o4 (that
// with respect to o0 is du) and to w, in float64, from the values training's
// forward pass computes: b = e^{0.4·o1}, d = e^{0.4·o3}, th = tanh(0.3·o2),
// E = e^{logA + 0.4·o1 − 0.4·o3} and f = o4. With c = th·E, s = d·w + f,
// den = 1 + s², g = s/den², g′ = (1 − 3s²)/den³ and D = u′(w) = b − 2·c·d·g:
//
//	∂u/∂o = (1, 0.4·b·w + 0.4·c/den, 0.3·(1−th²)·E/den, −0.4·c/den − 0.8·c·d·w·g, −2·c·g), ∂u/∂w = D
//	∂log D/∂o = (0, 0.4, −0.6·(1−th²)·E·d·g/D, −0.8·c·d²·w·g′/D, −2·c·d·g′/D), ∂log D/∂w = −2·c·d²·g′/D
//
// NLSqGrad32s does it for runs of scalars with the same operations in the
// same order.
func NLSqGrad(b, d, th, E, f, w, du, dl float64) (do1, do2, do3, do4, dw float64) {
	cc := th * E
	s := d*w + f
	inv := 1 / (1 + s*s) // 1/den: two divisions in all
	inv2 := inv * inv
	g := s * inv2
	gp := (1 - 3*s*s) * inv2 * inv
	D := b - 2*cc*d*g
	k := dl / D
	dth := NLSqTanhRate * (1 - th*th) * E
	ci := cc * inv
	do1 = du*(NLSqExpRate*b*w+NLSqExpRate*ci) + dl*NLSqExpRate
	do2 = du*dth*inv - k*2*dth*d*g
	do3 = du*(-NLSqExpRate*ci-2*NLSqExpRate*cc*d*w*g) - k*2*NLSqExpRate*cc*d*d*w*gp
	do4 = -du*2*cc*g - k*2*cc*d*gp
	dw = du*D - k*2*cc*d*d*gp
	return do1, do2, do3, do4, dw
}

// NLSqGrad32s does NLSqGrad for n scalars: in [8n] holds runs of n float32
// values of b, d, E, th, f, w, du and dl (in that order), and out [5n]
// receives runs of do1, do2, do3, do4 and dw, each computed in float64 and
// rounded to float32. The assembly does four scalars at a time in AVX2
// float64 lanes, NLSqGrad's operations in its order without fused
// multiply-adds, so the results are NLSqGrad's bits.
func NLSqGrad32s(out, in []float32, n int) {
	checkLen("NLSqGrad32s", "in", len(in), 8*n)
	checkLen("NLSqGrad32s", "out", len(out), 5*n)
	j := nlsqGradVec(out, in, n)
	for ; j < n; j++ {
		v := func(c int) float64 { return float64(in[c*n+j]) }
		d1, d2, d3, d4, dw := NLSqGrad(v(0), v(1), v(3), v(2), v(4), v(5), v(6), v(7))
		out[j], out[n+j], out[2*n+j], out[3*n+j], out[4*n+j] = float32(d1), float32(d2), float32(d3), float32(d4), float32(dw)
	}
}
