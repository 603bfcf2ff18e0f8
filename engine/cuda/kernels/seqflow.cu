// SeqFlow's element-wise kernels, the GPU side of engine/train's fused ops (lstmop.go, couplingop.go):
// rows are row-major, as on the CPU, and each kernel computes what its CPU counterpart computes, in the
// same order, so that parity tests can hold them to float32 rounding. Products go through cuBLAS.
// Compiled at run time by NVRTC (engine/cuda), with no header but NVRTC's built-ins.

#define NFBO_LOG_A 0.3985081094410609 /* log(8·√3/9 − 0.05), logA in engine/train */

__device__ __forceinline__ float nfbo_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// bias_act adds the bias b [w] to every row of y [n, w] and, when relu != 0, applies ReLU.
extern "C" __global__ void bias_act(float* y, const float* b, int n, int w, int relu) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	float v = y[i] + b[i % w];
	y[i] = relu && v < 0.0f ? 0.0f : v;
}

// lstm_cell_fwd runs one LSTM step for B sequences: g [B, 4H] holds x·Wih + h·Whh (gate order i, f, g, o),
// bias [B or 1, 4H] the biases (a row per sequence for layer 0, whose positional part differs per sequence),
// c [B, H] the cell state, updated in place. The activated gates replace g; tc [B, H] receives tanh(c) and
// h [B, H] the output, as lstmSeq.forward keeps them for the backward pass.
extern "C" __global__ void lstm_cell_fwd(float* g, const float* bias, int biasPerRow, float* c, float* tc,
	float* h, int B, int H) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= B * H) return;
	int b = i / H, u = i % H;
	float* gb = g + (long)b * 4 * H;
	const float* br = bias + (biasPerRow ? (long)b * 4 * H : 0);
	float ig = nfbo_sigmoid(gb[u] + br[u]);
	float fg = nfbo_sigmoid(gb[H + u] + br[H + u]);
	float gg = tanhf(gb[2 * H + u] + br[2 * H + u]);
	float og = nfbo_sigmoid(gb[3 * H + u] + br[3 * H + u]);
	gb[u] = ig;
	gb[H + u] = fg;
	gb[2 * H + u] = gg;
	gb[3 * H + u] = og;
	float cn = fg * c[i] + ig * gg;
	float t = tanhf(cn);
	c[i] = cn;
	tc[i] = t;
	h[i] = og * t;
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
		double a = p[0], bb = exp(0.4 * (double)p[1]), dd = exp(0.4 * (double)p[3]), f = p[4];
		double cc = tanh(0.3 * (double)p[2]) * exp((double)NFBO_LOG_A + 0.4 * (double)p[1] - 0.4 * (double)p[3]);
		double x = w[(long)r * half + i];
		double s = dd * x + f, den = 1 + s * s;
		out[(long)r * (half + 1) + i] = (float)(a + bb * x + cc / den);
		ld += log(bb - 2 * cc * dd * s / (den * den));
	}
	out[(long)r * (half + 1) + half] = (float)ld;
}

// adam_step applies one Adam update to n parameters p with the arithmetic of engine/train's Adam.Step (in
// double, the moments stored in float): gradients g scaled by *clip (the clipping factor, computed on the
// device so the host never waits), moments m and v, stepSize = lr / (1 − β1^t) and bc2Sqrt = √(1 − β2^t).
extern "C" __global__ void adam_step(float* p, const float* g, float* m, float* v, const float* clip, long n,
	double stepSize, double bc2Sqrt, double b1, double b2, double eps) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	double gi = (double)g[i] * (double)clip[0];
	float mi = (float)(b1 * (double)m[i] + (1 - b1) * gi);
	float vi = (float)(b2 * (double)v[i] + (1 - b2) * gi * gi);
	m[i] = mi;
	v[i] = vi;
	p[i] = (float)((double)p[i] - stepSize * (double)mi / (sqrt((double)vi) / bc2Sqrt + eps));
}
