package kernels

import "math"

// The SeqFlow training loss's row-wise parts, outside the flow: the
// gradient of the embeddings' normalisation, the similarity loss and the
// Gaussian negative log density with their gradients. Each sums and
// divides in float64 and rounds its results to float32. engine/train's
// tests' gorgonia graph builds the same maths from elementary nodes; these
// are what a training step written against a device (engine/step) runs on
// the CPU.

// NormalizeRowsGradTo writes to dx (r×c) the gradient with respect to x
// (r×c) of Σ dy·y for y = NormalizeRowsTo(x): with n = ‖x_i‖ and
// u = x_i/n, dx_i = (dy_i − u·(u·dy_i))/n. A zero row gets a zero
// gradient (NormalizeRowsTo keeps it zero). dx may alias dy.
func NormalizeRowsGradTo(dx, dy, x []float32, r, c int) {
	checkDims("NormalizeRowsGradTo", r, c)
	checkLen("NormalizeRowsGradTo", "dx", len(dx), r*c)
	checkLen("NormalizeRowsGradTo", "dy", len(dy), r*c)
	checkLen("NormalizeRowsGradTo", "x", len(x), r*c)
	for i := range r {
		xr, dyr, dxr := x[i*c:(i+1)*c], dy[i*c:(i+1)*c], dx[i*c:(i+1)*c]
		var ss, xd float64
		for j, v := range xr {
			ss += float64(v) * float64(v)
			xd += float64(v) * float64(dyr[j])
		}
		if ss == 0 {
			clear(dxr)
			continue
		}
		n := math.Sqrt(ss)
		k := xd / ss // (u·dy)/n
		for j, v := range xr {
			dxr[j] = float32((float64(dyr[j]) - float64(v)*k) / n)
		}
	}
}

// SimilarityTo writes to sim [n] the similarity loss of each row of v
// (n×f) against its true embedding ex and its negative one ej (n×f, unit
// rows; a zero row of ej stands for no negative):
//
//	sim = 1 − cos(v, ex) + max(0, cos(v, ej)),  cos(v, e) = v·e/‖v‖
//
// (PyTorch's CosineEmbeddingLoss with margin 0; ‖e‖ = 1 is not divided
// by, which changes no gradient that reaches the embeddings through their
// normalisation).
func SimilarityTo(sim, v, ex, ej []float32, n, f int) {
	checkDims("SimilarityTo", n, f)
	checkLen("SimilarityTo", "sim", len(sim), n)
	for _, s := range [...]struct {
		name string
		n    int
	}{{"v", len(v)}, {"ex", len(ex)}, {"ej", len(ej)}} {
		checkLen("SimilarityTo", s.name, s.n, n*f)
	}
	for r := range n {
		nv, p, q := simDots(v[r*f:(r+1)*f], ex[r*f:(r+1)*f], ej[r*f:(r+1)*f])
		sim[r] = float32(1 - p/nv + max(0, q/nv))
	}
}

// simDots returns ‖v‖, v·ex and v·ej in float64.
func simDots(v, ex, ej []float32) (nv, p, q float64) {
	var ss float64
	for j, x := range v {
		a := float64(x)
		ss += a * a
		p += a * float64(ex[j])
		q += a * float64(ej[j])
	}
	return math.Sqrt(ss), p, q
}

// SimilarityGradTo is the gradient of Σ_r coef_r·sim_r (SimilarityTo) for
// rows v = ex + ε, the noisy true embedding: given dv (n×f), the gradient
// of the rest of the loss with respect to v, it writes dex, the total
// gradient with respect to ex (through v and directly), and dej, that with
// respect to ej (both n×f):
//
//	∂sim/∂v = −(ex − cosP·v̂)/‖v‖ + [q > 0]·(ej − cosN·v̂)/‖v‖,  v̂ = v/‖v‖
//	∂sim/∂ex = −v̂,  ∂sim/∂ej = [q > 0]·v̂
//	dex = dv + coef·(∂sim/∂v + ∂sim/∂ex),  dej = coef·∂sim/∂ej
//
// with q = v·ej (ReLU's gradient at 0 is 0). dex may alias dv.
func SimilarityGradTo(dex, dej, dv, v, ex, ej, coef []float32, n, f int) {
	checkDims("SimilarityGradTo", n, f)
	checkLen("SimilarityGradTo", "coef", len(coef), n)
	for _, s := range [...]struct {
		name string
		n    int
	}{{"dex", len(dex)}, {"dej", len(dej)}, {"dv", len(dv)}, {"v", len(v)}, {"ex", len(ex)}, {"ej", len(ej)}} {
		checkLen("SimilarityGradTo", s.name, s.n, n*f)
	}
	for r := range n {
		vr, xr, jr := v[r*f:(r+1)*f], ex[r*f:(r+1)*f], ej[r*f:(r+1)*f]
		nv, p, q := simDots(vr, xr, jr)
		c := float64(coef[r])
		cosP, cosN := p/nv, q/nv
		neg := q > 0
		for i, x := range vr {
			vh := float64(x) / nv
			gv := -(float64(xr[i]) - cosP*vh) / nv
			gj := 0.0
			if neg {
				gv += (float64(jr[i]) - cosN*vh) / nv
				gj = vh
			}
			k := r*f + i
			dex[k] = float32(float64(dv[k]) + c*(gv-vh))
			dej[k] = float32(c * gj)
		}
	}
}

// GaussNLLTo writes to nll [n] the negative log density of each row's
// latent y (n×f) under the standard normal base, less the row's log
// Jacobian determinant logdet [n]:
//
//	nll = ½·Σ_i y_i² + ½·f·log 2π − logdet.
func GaussNLLTo(nll, y, logdet []float32, n, f int) {
	checkDims("GaussNLLTo", n, f)
	checkLen("GaussNLLTo", "nll", len(nll), n)
	checkLen("GaussNLLTo", "y", len(y), n*f)
	checkLen("GaussNLLTo", "logdet", len(logdet), n)
	c := 0.5 * float64(f) * math.Log(2*math.Pi)
	for r := range n {
		var ss float64
		for _, x := range y[r*f : (r+1)*f] {
			ss += float64(x) * float64(x)
		}
		nll[r] = float32(0.5*ss + c - float64(logdet[r]))
	}
}

// ScaleRowsTo sets row r of dst (n×f) to s[r] times row r of x (n×f): the
// gradient of Σ_r s_r·nll_r (GaussNLLTo) with respect to y. dst may alias
// x.
func ScaleRowsTo(dst, x, s []float32, n, f int) {
	checkDims("ScaleRowsTo", n, f)
	checkLen("ScaleRowsTo", "dst", len(dst), n*f)
	checkLen("ScaleRowsTo", "x", len(x), n*f)
	checkLen("ScaleRowsTo", "s", len(s), n)
	for r := range n {
		k := s[r]
		for i, v := range x[r*f : (r+1)*f] {
			dst[r*f+i] = k * v
		}
	}
}
