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
// cubic in float64, each value is rounded to float32.
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

// nlsqSolve is NLSqInverse64's root w, without the log-derivative.
func nlsqSolve(u, a, b, c, d, f float64) (w float64) {
	ua := u - a
	f2 := 1 + f*f
	A := -b * d * d
	B := ua*d*d - 2*b*d*f
	C := 2*ua*d*f - b*f2
	Dc := ua*f2 - c
	p := (3*A*C - B*B) / (3 * A * A)
	q := (2*B*B*B - 9*A*B*C + 27*A*A*Dc) / (27 * A * A * A)
	var t float64
	switch {
	case p > 0:
		t = -2 * math.Sqrt(p/3) * math.Sinh(math.Asinh((3*q/(2*p))*math.Sqrt(3/p))/3)
	case p < 0:
		ap := -p
		arg := (-3*math.Abs(q)/(2*p))*math.Sqrt(3/ap) - 1
		t = -2 * sign(q) * math.Sqrt(ap/3) * math.Cosh(math.Acosh(math.Abs(arg)+1)/3)
	default:
		t = -math.Cbrt(q)
	}
	return t - B/(3*A)
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
	for i := 0; i < n; i++ {
		a, b, c, d, f := NLSqPseudo(raw[i*NLSqParams : i*NLSqParams+NLSqParams])
		u, ld := NLSqForward64(float64(w[i]), a, b, c, d, f)
		dst[i] = float32(u)
		logDet += ld
	}
	return logDet
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
	for i := 0; i < n; i++ {
		a, b, c, d, f := NLSqPseudo(raw[i*NLSqParams : i*NLSqParams+NLSqParams])
		w := nlsqSolve(float64(u[i]), a, b, c, d, f)
		dst[i] = float32(w)
		if logDet {
			sum += nlsqLogDeriv(w, b, c, d, f)
		}
	}
	return sum
}
