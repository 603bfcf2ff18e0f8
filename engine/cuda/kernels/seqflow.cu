// SeqFlow's element-wise kernels, the GPU side of engine/train's fused ops (lstmop.go, couplingop.go):
// rows are row-major, as on the CPU, and each kernel computes what its CPU counterpart computes, in the
// same order, so that parity tests can hold them to float32 rounding. Products go through cuBLAS.
// Compiled at run time by NVRTC (engine/cuda), with no header but NVRTC's built-ins.

// The NLSq transform's constants come from Go (kernels.NLSqLogA, NLSqExpRate, NLSqTanhRate) as NVRTC
// definitions (engine/cuda.KernelDefines), never retyped here.
#if !defined(NFBO_NLSQ_LOG_A) || !defined(NFBO_NLSQ_EXP_RATE) || !defined(NFBO_NLSQ_TANH_RATE)
#error "compile with engine/cuda.KernelDefines: the NLSq constants are defined in Go"
#endif

__device__ __forceinline__ float nfbo_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// bias_act adds the bias b [w] to every row of y [n, w] and, when relu != 0, applies ReLU.
extern "C" __global__ void bias_act(float* y, const float* b, int n, int w, int relu) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	float v = y[i] + b[i % w];
	y[i] = relu && v < 0.0f ? 0.0f : v;
}

// lstm_cell_step is one step of an LSTM layer for B sequences, in training (engine/gpustep) and in encoding and
// decoding (engine/gpuflow), as kernels.LSTMCellForward32 computes it on the CPU:
// act [B, 4H] holds x·Wih + h·Whh (gates i, f, g, o) and receives the activations; bias is [B or 1, 4H]
// (biasPerRow); cPrev [B, H] is the previous cell state; it writes c = σ(f)·cPrev + σ(i)·tanh(g), tc = tanh(c)
// and h = σ(o)·tc ([B, H]), each product and the sum rounded as the CPU rounds them. c may alias cPrev (each
// thread reads its cPrev entry before writing its c entry). One thread per (sequence, unit).
extern "C" __global__ void lstm_cell_step(float* act, const float* bias, int biasPerRow, const float* cPrev,
	float* c, float* tc, float* h, int B, int H) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= B * H) return;
	int b = i / H, u = i % H;
	float* a = act + (long)b * 4 * H;
	const float* br = bias + (biasPerRow ? (long)b * 4 * H : 0);
	float ig = nfbo_sigmoid(__fadd_rn(a[u], br[u]));
	float fg = nfbo_sigmoid(__fadd_rn(a[H + u], br[H + u]));
	float gg = tanhf(__fadd_rn(a[2 * H + u], br[2 * H + u]));
	float og = nfbo_sigmoid(__fadd_rn(a[3 * H + u], br[3 * H + u]));
	a[u] = ig;
	a[H + u] = fg;
	a[2 * H + u] = gg;
	a[3 * H + u] = og;
	float cp = cPrev[i];
	float cn = __fadd_rn(__fmul_rn(fg, cp), __fmul_rn(ig, gg));
	float t = tanhf(cn);
	c[i] = cn;
	tc[i] = t;
	h[i] = __fmul_rn(og, t);
}

// nlsq_fwd transforms the n rows of w [n, half] with the raw parameters o [n, half, 5] (parameter index
// fastest) and writes out [n, half+1]: u, then the row's sum of log du/dw (couplingop.go's output layout).
// The map is computed in double, as transformForward does.
extern "C" __global__ void nlsq_fwd(float* out, const float* o, const float* w, int n, int half) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	double ld = 0;
	for (int i = 0; i < half; i++) {
		const float* p = o + ((long)r * half + i) * 5;
		double a = p[0], bb = exp(NFBO_NLSQ_EXP_RATE * (double)p[1]), dd = exp(NFBO_NLSQ_EXP_RATE * (double)p[3]), f = p[4];
		double cc = tanh(NFBO_NLSQ_TANH_RATE * (double)p[2]) * exp((double)NFBO_NLSQ_LOG_A + NFBO_NLSQ_EXP_RATE * (double)p[1] - NFBO_NLSQ_EXP_RATE * (double)p[3]);
		double x = w[(long)r * half + i];
		double s = dd * x + f, den = 1 + s * s;
		out[(long)r * (half + 1) + i] = (float)(a + bb * x + cc / den);
		ld += log(bb - 2 * cc * dd * s / (den * den));
	}
	out[(long)r * (half + 1) + half] = (float)ld;
}

// lstm_cell_bwd is one step of lstmSeq.backward for B sequences: act [B, 4H] the activated gates of the step,
// tc [B, H] its tanh(c), cprev [B, H] the cell state before it, dout [B, H] the loss gradient of its output h;
// dh and dc [B, H] carry the gradients from the later steps in and (dc) the one for the earlier step out.
// It writes the pre-activation gradients dg [B, 4H]; dh for the earlier step is then dg·Whhᵀ (cuBLAS).
extern "C" __global__ void lstm_cell_bwd(float* dg, const float* act, const float* tc, const float* cprev,
	const float* dout, const float* dh, float* dc, int B, int H) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= B * H) return;
	int b = i / H, u = i % H;
	const float* a = act + (long)b * 4 * H;
	float ig = a[u], fg = a[H + u], gg = a[2 * H + u], og = a[3 * H + u];
	float t = tc[i];
	float dht = dout[i] + dh[i];
	float dct = dht * og * (1.0f - t * t) + dc[i];
	float* d = dg + (long)b * 4 * H;
	d[u] = dct * gg * ig * (1.0f - ig);
	d[H + u] = dct * cprev[i] * fg * (1.0f - fg);
	d[2 * H + u] = dct * ig * (1.0f - gg * gg);
	d[3 * H + u] = dht * t * og * (1.0f - og);
	dc[i] = dct * fg;
}

// nlsq_bwd is couplingop.go's transformBackward for n rows: given the raw parameters o [n, half, 5], the input
// w [n, half] and the gradient dout [n, half+1] of nlsq_fwd's output (u, then the row's log-det sum), it writes
// the gradients do [n, half, 5] and dw [n, half], in double as the CPU does.
extern "C" __global__ void nlsq_bwd(float* dO, float* dw, const float* o, const float* w, const float* dout,
	int n, int half) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	double dl = dout[(long)r * (half + 1) + half];
	for (int i = 0; i < half; i++) {
		long k = (long)r * half + i;
		const float* p = o + k * 5;
		double du = dout[(long)r * (half + 1) + i];
		double bb = exp(NFBO_NLSQ_EXP_RATE * (double)p[1]), dd = exp(NFBO_NLSQ_EXP_RATE * (double)p[3]), f = p[4];
		double th = tanh(NFBO_NLSQ_TANH_RATE * (double)p[2]);
		double E = exp((double)NFBO_NLSQ_LOG_A + NFBO_NLSQ_EXP_RATE * (double)p[1] - NFBO_NLSQ_EXP_RATE * (double)p[3]);
		double cc = th * E, x = w[k];
		double s = dd * x + f, den = 1 + s * s;
		double g = s / (den * den), gp = (1 - 3 * s * s) / (den * den * den);
		double D = bb - 2 * cc * dd * g, kk = dl / D, dth = NFBO_NLSQ_TANH_RATE * (1 - th * th) * E;
		float* q = dO + k * 5;
		q[0] = (float)du;
		q[1] = (float)(du * (NFBO_NLSQ_EXP_RATE * bb * x + NFBO_NLSQ_EXP_RATE * cc / den) + dl * NFBO_NLSQ_EXP_RATE);
		q[2] = (float)(du * dth / den - kk * 2 * dth * dd * g);
		q[3] = (float)(du * (-NFBO_NLSQ_EXP_RATE * cc / den - 2 * NFBO_NLSQ_EXP_RATE * cc * dd * x * g) - kk * 2 * NFBO_NLSQ_EXP_RATE * cc * dd * dd * x * gp);
		q[4] = (float)(-du * 2 * cc * g - kk * 2 * cc * dd * gp);
		dw[k] = (float)(du * D - kk * 2 * cc * dd * dd * gp);
	}
}

// nearest_token writes, for each of n vectors y [n, F], the id of the unit embedding unit [V, F] with the
// largest dot product, which is the decoder's cosine argmax (kernels.NearestCosineTo): the first on ties, and
// index 0 for a zero or NaN row, as on the CPU. The CPU's products are float32 sgemm, these are double: two
// tokens within float32 rounding of each other may come out differently, which the GPU's decode parity test
// (tokens equal to pure Go on 1,000 sequences) measures.
extern "C" __global__ void nearest_token(int* ids, const float* y, const float* unit, int n, int V, int F) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	const float* v = y + (long)r * F;
	double best = -1e300;
	int arg = 0;
	for (int j = 0; j < V; j++) {
		const float* e = unit + (long)j * F;
		double d = 0;
		for (int k = 0; k < F; k++) d += (double)e[k] * (double)v[k];
		if (d > best) {
			best = d;
			arg = j;
		}
	}
	ids[r] = arg;
}

// The decoder's kernels (engine/gpuflow, model.Flow.inverse on the CPU).

// nfbo_col returns the address of scalar k of columns [off, off+half) of y [n, F], counted row by row.
__device__ __forceinline__ float* nfbo_col(float* y, long k, int F, int off, int half) {
	return y + (k / half) * F + off + (int)(k % half);
}

// nfbo_nlsq_pseudo reads one scalar's raw parameters p [5] as kernels.NLSqPseudo does: b, c and d rounded to
// float32, then all five in double.
__device__ __forceinline__ void nfbo_nlsq_pseudo(const float* p, double* a, double* b, double* c, double* d,
	double* f) {
	*a = p[0];
	*b = (float)exp(NFBO_NLSQ_EXP_RATE * (double)p[1]);
	*d = (float)exp(NFBO_NLSQ_EXP_RATE * (double)p[3]);
	*c = (float)(tanh(NFBO_NLSQ_TANH_RATE * (double)p[2]) * exp((double)NFBO_NLSQ_LOG_A + NFBO_NLSQ_EXP_RATE * (double)p[1] - NFBO_NLSQ_EXP_RATE * (double)p[3]));
	*f = p[4];
}

// fill_rows copies the vector v [w] into each of the n rows of y [n, w]: the LSTM's initial states.
extern "C" __global__ void fill_rows(float* y, const float* v, int n, int w) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	y[i] = v[i % w];
}

// relu sets the negative entries of y [n] to zero.
extern "C" __global__ void relu(float* y, long n) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && y[i] < 0.0f) y[i] = 0.0f;
}

// gather_cols copies columns [off, off+w) of src [n, srcW] into dst [n, w]: a coupling's conditioning half of
// y, or its part of the coupling nets' shared context product.
extern "C" __global__ void gather_cols(float* dst, const float* src, int n, int srcW, int off, int w) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	long r = i / w;
	dst[i] = src[r * srcW + off + i % w];
}

// nlsq_inv inverts the NLSq map in place on columns [off, off+half) of y [n, F], with the raw parameters
// raw [n, half, 5], as kernels.NLSqInverseTo: the pseudo-parameters b, c, d rounded to float32 (NLSqPseudo),
// then the closed-form cubic in double (NLSqInverse64).
extern "C" __global__ void nlsq_inv(float* y, const float* raw, int n, int F, int off, int half) {
	long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (long)n * half) return;
	double a, b, c, d, f;
	nfbo_nlsq_pseudo(raw + k * 5, &a, &b, &c, &d, &f);
	float* w = nfbo_col(y, k, F, off, half);
	double ua = (double)*w - a, f2 = 1 + f * f;
	double A = -b * d * d, B = ua * d * d - 2 * b * d * f, C = 2 * ua * d * f - b * f2, Dc = ua * f2 - c;
	double P = (3 * A * C - B * B) / (3 * A * A);
	double Q = (2 * B * B * B - 9 * A * B * C + 27 * A * A * Dc) / (27 * A * A * A);
	double t;
	if (P > 0) {
		t = -2 * sqrt(P / 3) * sinh(asinh((3 * Q / (2 * P)) * sqrt(3 / P)) / 3);
	} else if (P < 0) {
		double ap = -P, arg = (-3 * fabs(Q) / (2 * P)) * sqrt(3 / ap) - 1;
		double sq = Q > 0 ? 1 : (Q < 0 ? -1 : 0);
		t = -2 * sq * sqrt(ap / 3) * cosh(acosh(fabs(arg) + 1) / 3);
	} else {
		t = -cbrt(Q);
	}
	*w = (float)(t - B / (3 * A));
}

// affine_inv inverts the affine map in place on columns [off, off+half) of y [n, F], raw [n, half, 2], as
// kernels.AffineInverseTo: w = (u − o0)·exp(−0.5·o1) in double.
extern "C" __global__ void affine_inv(float* y, const float* raw, int n, int F, int off, int half) {
	long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (long)n * half) return;
	float* w = nfbo_col(y, k, F, off, half);
	double s = 0.5 * (double)raw[k * 2 + 1];
	*w = (float)(((double)*w - (double)raw[k * 2]) * exp(-s));
}

// nlsq_fwd_cols applies the NLSq map in place on columns [off, off+half) of y [n, F], raw [n, half, 5], as
// kernels.NLSqForwardTo (the encoder's direction): b, c, d rounded to float32, then the map in double.
extern "C" __global__ void nlsq_fwd_cols(float* y, const float* raw, int n, int F, int off, int half) {
	long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (long)n * half) return;
	double a, b, c, d, f;
	nfbo_nlsq_pseudo(raw + k * 5, &a, &b, &c, &d, &f);
	float* w = nfbo_col(y, k, F, off, half);
	double x = *w, s = d * x + f;
	*w = (float)(a + b * x + c / (1 + s * s));
}

// affine_fwd_cols applies the affine map in place on columns [off, off+half) of y [n, F], raw [n, half, 2], as
// kernels.AffineForwardTo: u = o0 + exp(0.5·o1)·w in double.
extern "C" __global__ void affine_fwd_cols(float* y, const float* raw, int n, int F, int off, int half) {
	long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (long)n * half) return;
	float* w = nfbo_col(y, k, F, off, half);
	*w = (float)((double)raw[k * 2] + exp(0.5 * (double)raw[k * 2 + 1]) * (double)*w);
}
