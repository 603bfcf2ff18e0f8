package kernels

import "math"

// NLSq is the non-linear squared flow of Ziegler & Rush (2019), as in NF-BO's
// generative_model/model/seqflow/flows.py (class NLSq). Each transformed
// scalar w has five raw network outputs o0..o4, turned into
//
//	a = o0, b = exp(0.4·o1), d = exp(0.4·o3), f = o4,
//	c = tanh(0.3·o2)·exp(logA + 0.4·o1 − 0.4·o3), logA = log(8√3/9 − 0.05),
//
// and the data-to-base map is u = a + b·w + c/(1 + (d·w + f)²), monotone in w
// because |c|·d < (8√3/9)·b. Raw outputs are laid out [n, 5] with the
// parameter index fastest (scalar i uses raw[5i : 5i+5]).
const NLSqParams = 5

// The NLSq transform's constants, owned here: every implementation (the fused training ops, the ONNX export,
// the CUDA kernels through NVRTC defines, engine/cuda.KernelDefines) takes them from these names.
const (
	// NLSqLogA = log(8√3/9 − 0.05) bounds |c|·d/b so that du/dw > 0 everywhere (TestNLSqLogA checks the digits).
	NLSqLogA = 0.3985081094410609
	// NLSqExpRate scales o1 and o3 in b = exp(NLSqExpRate·o1) and d = exp(NLSqExpRate·o3).
	NLSqExpRate = 0.4
	// NLSqTanhRate scales o2 in c's tanh(NLSqTanhRate·o2).
	NLSqTanhRate = 0.3
)

// NLSqPseudo turns the five raw outputs of one scalar into (a, b, c, d, f).
// Like the reference, which computes them in float32 before solving the
// cubic in float64, each value is rounded to float32: here correctly
// rounded, the float64 reference that the slice kernels' float32 vector
// math (nlsqPseudos) is held to.
func NLSqPseudo(raw []float32) (a, b, c, d, f float64) {
	_ = raw[4]
	o1, o2, o3 := float64(raw[1]), float64(raw[2]), float64(raw[3])
	a = float64(raw[0])
	b = float64(float32(math.Exp(NLSqExpRate * o1)))
	d = float64(float32(math.Exp(NLSqExpRate * o3)))
	c = float64(float32(math.Tanh(NLSqTanhRate*o2) * math.Exp(NLSqLogA+NLSqExpRate*o1-NLSqExpRate*o3)))
	f = float64(raw[4])
	return a, b, c, d, f
}

// NLSqForward64 maps one data-side scalar w to the base side, u = a + b·w +
// c/(1 + (d·w + f)²), and returns log(du/dw).
func NLSqForward64(w, a, b, c, d, f float64) (u, logDet float64) {
	arg := d*w + f
	den := 1 + arg*arg
	u = a + b*w + c/den
	return u, nlsqLogDeriv(w, b, c, d, f)
}

// nlsqLogDeriv returns log(du/dw) = log(b − 2·c·d·(d·w+f)/(1+(d·w+f)²)²).
func nlsqLogDeriv(w, b, c, d, f float64) float64 {
	arg := d*w + f
	den := 1 + arg*arg
	return math.Log(b - 2*c*d*arg/(den*den))
}

// NLSqInverse64 solves u = a + b·w + c/(1 + (d·w + f)²) for w in float64 by
// the closed-form cubic of the reference (flows.py, NLSq.standard), and
// returns log(du/dw) at that w. Multiplying out gives A·w³ + B·w² + C·w + Dc
// = 0 with
//
//	A = −b·d², B = (u−a)·d² − 2·b·d·f, C = 2·(u−a)·d·f − b·(1+f²),
//	Dc = (u−a)·(1+f²) − c;
//
// the depressed cubic t³ + p·t + q = 0 (w = t − B/(3A)) has
//
//	p = (3AC − B²)/(3A²), q = (2B³ − 9ABC + 27A²·Dc)/(27A³),
//
// and its one real root is −2·√(p/3)·sinh(asinh((3q/(2p))·√(3/p))/3) when
// p > 0, else −2·sign(q)·√(|p|/3)·cosh(acosh(|(−3|q|/(2p))·√(3/|p|) − 1| + 1)/3).
// The exact p = 0 case, where both formulas divide by zero, uses t = −∛q.
func NLSqInverse64(u, a, b, c, d, f float64) (w, logDet float64) {
	w = nlsqSolve(u, a, b, c, d, f)
	return w, nlsqLogDeriv(w, b, c, d, f)
}

// nlsqSolve is NLSqInverse64's root w, without the log-derivative. The
// reference's sinh(asinh(x)/3) and cosh(acosh(x)/3) are taken as (c ∓ 1/c)/2
// with c = ∛(x ± √(x² ± 1)), one cube root where the hyperbolic functions
// take a logarithm and an exponential each: the same root, as accurate or
// more (TestNLSqSolveMatchesHyperbolic), in less time.
func nlsqSolve(u, a, b, c, d, f float64) (w float64) {
	p, q, shift := nlsqDepressed(u, a, b, c, d, f)
	var t float64
	switch {
	case p > 0:
		t = -2 * math.Sqrt(p/3) * sinhThirdAsinh((3*q/(2*p))*math.Sqrt(3/p))
	case p < 0:
		ap := -p
		arg := (-3*math.Abs(q)/(2*p))*math.Sqrt(3/ap) - 1
		t = -2 * sign(q) * math.Sqrt(ap/3) * coshThirdAcosh(math.Abs(arg)+1)
	default:
		t = -math.Cbrt(q)
	}
	return t + shift
}

// nlsqDepressed returns the depressed cubic t³ + p·t + q = 0 of NLSqInverse64's A·w³ + B·w² + C·w + Dc = 0 and
// the shift w − t = −B/(3A).
func nlsqDepressed(u, a, b, c, d, f float64) (p, q, shift float64) {
	ua := u - a
	f2 := 1 + f*f
	A := -b * d * d
	B := ua*d*d - 2*b*d*f
	C := 2*ua*d*f - b*f2
	Dc := ua*f2 - c
	p = (3*A*C - B*B) / (3 * A * A)
	q = (2*B*B*B - 9*A*B*C + 27*A*A*Dc) / (27 * A * A * A)
	return p, q, -B / (3 * A)
}

// sinhThirdAsinh returns sinh(asinh(x)/3), the real root y of 4y³ + 3y = x:
// (c − 1/c)/2 with c = ∛(|x| + √(x²+1)), signed as x. The difference is
// taken as g·(c+1)/(2c·(c²+c+1)) with g = c³ − 1 = |x| + x²/(1 + √(1+x²)),
// which cancels nothing for small x.
func sinhThirdAsinh(x float64) float64 {
	ax := math.Abs(x)
	if ax >= 0x1p500 { // √(x²+1) = |x| in float64, and x² would overflow
		c := math.Cbrt(2) * math.Cbrt(ax)
		return math.Copysign((c-1/c)/2, x)
	}
	g := ax + ax*ax/(1+math.Sqrt(1+ax*ax))
	c := math.Cbrt(1 + g)
	return math.Copysign(g*(c+1)/(2*c*(c*c+c+1)), x)
}

// coshThirdAcosh returns cosh(acosh(x)/3) for x ≥ 1: (c + 1/c)/2 with
// c = ∛(x + √((x−1)(x+1))), which has no cancellation.
func coshThirdAcosh(x float64) float64 {
	var c float64
	if x < 0x1p500 {
		c = math.Cbrt(x + math.Sqrt((x-1)*(x+1)))
	} else {
		c = math.Cbrt(2) * math.Cbrt(x)
	}
	return (c + 1/c) / 2
}

// sign returns −1, 0 or +1; the reference computes |q|/q, which is NaN at
// q = 0, where sign 0 gives the root t = 0 of t³ + p·t = 0 instead.
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// NLSqForwardTo maps n data-side scalars w to the base side, dst = u(w), with
// raw holding n×5 coupling-net outputs (parameter index fastest). It returns
// Σ log(du/dw) over the n scalars, accumulated in float64. dst may alias w.
func NLSqForwardTo(dst, w, raw []float32, n int) (logDet float64) {
	checkDims("NLSqForwardTo", n)
	checkLen("NLSqForwardTo", "dst", len(dst), n)
	checkLen("NLSqForwardTo", "w", len(w), n)
	checkLen("NLSqForwardTo", "raw", len(raw), n*NLSqParams)
	var p nlsqPseudos
	for i0 := 0; i0 < n; i0 += nlsqBatch {
		m := min(nlsqBatch, n-i0)
		p.set(raw[i0*NLSqParams:], m)
		for i := range m {
			a, b, c, d, f := p.at(i)
			u, ld := NLSqForward64(float64(w[i0+i]), a, b, c, d, f)
			dst[i0+i] = float32(u)
			logDet += ld
		}
	}
	return logDet
}

// nlsqBatch is the number of scalars whose parameters the slice kernels compute at once, on the stack.
const nlsqBatch = 64

// nlsqPseudos holds the parameters (a, b, c, d, f) of up to nlsqBatch scalars.
type nlsqPseudos struct{ a, b, c, d, f [nlsqBatch]float32 }

// set computes the parameters of the m ≤ nlsqBatch scalars whose raw outputs begin raw (m×5) in float32, as
// the reference's float32 graph and the ONNX export compute them (0.4·o1, then exp; logA + (0.4·o1 − 0.4·o3),
// then exp, times tanh(0.3·o2)), eight lanes at a time (Exp32s, Tanh32s): within a few float32 ulps of
// NLSqPseudo's correctly rounded values, at a fraction of the cost of four float64 calls a scalar.
func (p *nlsqPseudos) set(raw []float32, m int) {
	_ = raw[m*NLSqParams-1]
	var t [nlsqBatch]float32
	for i := range m {
		o := raw[i*NLSqParams : i*NLSqParams+NLSqParams]
		p.a[i], p.f[i] = o[0], o[4]
		p.b[i] = NLSqExpRate * o[1]
		p.d[i] = NLSqExpRate * o[3]
		p.c[i] = NLSqLogA + (p.b[i] - p.d[i])
		t[i] = NLSqTanhRate * o[2]
	}
	Exp32s(p.b[:m], p.b[:m])
	Exp32s(p.d[:m], p.d[:m])
	Exp32s(p.c[:m], p.c[:m])
	Tanh32s(t[:m], t[:m])
	for i := range m {
		p.c[i] *= t[i]
	}
}

// at returns scalar i's parameters in float64, the precision the cubic is solved in.
func (p *nlsqPseudos) at(i int) (a, b, c, d, f float64) {
	return float64(p.a[i]), float64(p.b[i]), float64(p.c[i]), float64(p.d[i]), float64(p.f[i])
}

// NLSqInverseTo maps n base-side scalars u back to the data side,
// dst = w(u), solving the cubic in float64 (see NLSqInverse64); raw is n×5
// as for NLSqForwardTo. It returns Σ log(du/dw) at the solved w. dst may
// alias u.
func NLSqInverseTo(dst, u, raw []float32, n int) (logDet float64) {
	return nlsqInverseTo("NLSqInverseTo", dst, u, raw, n, true)
}

// NLSqSolveTo is NLSqInverseTo without the log-determinant, which decoding
// does not use: dst = w(u), the same values.
func NLSqSolveTo(dst, u, raw []float32, n int) {
	nlsqInverseTo("NLSqSolveTo", dst, u, raw, n, false)
}

// nlsqInverseTo is NLSqInverseTo (fn names the caller in panics), summing
// the log-derivatives only when logDet is set.
func nlsqInverseTo(fn string, dst, u, raw []float32, n int, logDet bool) (sum float64) {
	checkDims(fn, n)
	checkLen(fn, "dst", len(dst), n)
	checkLen(fn, "u", len(u), n)
	checkLen(fn, "raw", len(raw), n*NLSqParams)
	var p nlsqPseudos
	for i0 := 0; i0 < n; i0 += nlsqBatch {
		m := min(nlsqBatch, n-i0)
		p.set(raw[i0*NLSqParams:], m)
		if !logDet {
			// The assembly's roots are nlsqSolve's, bit for bit; it leaves the rare lanes where nlsqSolve
			// takes another branch, and the tail, to the loop below.
			done, fallback := nlsqSolveVec(dst[i0:i0+m], u[i0:i0+m], &p, m)
			for i := range m {
				if i < done && fallback&(1<<i) == 0 {
					continue
				}
				a, b, c, d, f := p.at(i)
				dst[i0+i] = float32(nlsqSolve(float64(u[i0+i]), a, b, c, d, f))
			}
			continue
		}
		for i := range m {
			a, b, c, d, f := p.at(i)
			w := nlsqSolve(float64(u[i0+i]), a, b, c, d, f)
			dst[i0+i] = float32(w)
			sum += nlsqLogDeriv(w, b, c, d, f)
		}
	}
	return sum
}
