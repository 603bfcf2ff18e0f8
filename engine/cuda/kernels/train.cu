// The training step's kernels (engine/step's Device on a GPU, engine/gpustep) beyond those of seqflow.cu: the
// element-wise passes, the block copies, the row gathers and their deterministic scatter, the LSTM cell's
// training forward, the affine transform in the coupling's [n, half+1] layout, the loss's row-wise parts, the
// two-stage gradient norm and Adam. Each computes what its CPU counterpart in engine/train or kernels computes;
// engine/gpustep's tests hold each to a float64 reference (one per kernel, the same ones that run the whole
// step on the CPU).
//
// Products and sums that the CPU rounds step by step are written with the _rn intrinsics where the compiler
// would otherwise fuse them into one FMA: the CPU's Go and assembly loops never fuse, and these kernels then
// give its bits (element-wise passes, scatters, Adam) or differ only where the CPU uses its float32 exp, tanh and
// sigmoid, or where a sum is split to use the machine (the column sums: a fixed order of their own, the same
// bits on every run).
//
// Indices are long where n·w can pass 2³¹ for the presets' batches; a launch covers n elements with blocks of
// 256 threads unless a kernel says otherwise.

// add_n sets dst = a + b over n elements (dst may be a or b).
extern "C" __global__ void add_n(float* dst, const float* a, const float* b, long n) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dst[i] = __fadd_rn(a[i], b[i]);
}

// mul_n sets dst = a⊙b over n elements (dst may be a or b): a dropout mask and its gradient.
extern "C" __global__ void mul_n(float* dst, const float* a, const float* b, long n) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dst[i] = __fmul_rn(a[i], b[i]);
}

// relu_grad zeroes d[i] wherever the ReLU output h[i] is zero (+0 or −0) over n elements; a NaN keeps d[i]
// (kernels.ReLUGrad32s).
extern "C" __global__ void relu_grad(float* d, const float* h, long n) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && h[i] == 0.0f) d[i] = 0.0f;
}

// NFBO_COLSUM_ROWS is the rows of one chunk of col_sums_part; NFBO_COLSUM_LANES the row lanes of its blocks.
#define NFBO_COLSUM_ROWS 256
#define NFBO_COLSUM_LANES 8

// col_sums_part is the first stage of the column sums of x [n, w] (a bias gradient): block b covers the 32
// columns of tile b mod ceil(w/32) and the NFBO_COLSUM_ROWS rows of chunk b / ceil(w/32); its 32·NFBO_COLSUM_LANES
// threads are lanes of 32 consecutive columns (a warp reads 32 consecutive floats of a row), lane l summing the
// chunk's rows l, l + NFBO_COLSUM_LANES, … in order; the lanes are then added in order, so part[chunk·w + j] has
// the same bits on every run. Thousands of blocks instead of one thread per column walking every row.
extern "C" __global__ void col_sums_part(float* part, const float* x, int n, int w) {
	__shared__ float lanes[NFBO_COLSUM_LANES][33];
	int tiles = (w + 31) / 32;
	int tile = blockIdx.x % tiles, chunk = blockIdx.x / tiles;
	int c = threadIdx.x % 32, lane = threadIdx.x / 32;
	int j = tile * 32 + c;
	int r1 = min((chunk + 1) * NFBO_COLSUM_ROWS, n);
	float s = 0.0f;
	if (j < w)
		for (int r = chunk * NFBO_COLSUM_ROWS + lane; r < r1; r += NFBO_COLSUM_LANES) s = __fadd_rn(s, x[(long)r * w + j]);
	lanes[lane][c] = s;
	__syncthreads();
	if (lane == 0 && j < w) {
		float t = lanes[0][c];
		for (int l = 1; l < NFBO_COLSUM_LANES; l++) t = __fadd_rn(t, lanes[l][c]);
		part[(long)chunk * w + j] = t;
	}
}

// col_sums_fin is the second stage: dst[j] = Σ part[c·w + j] over the chunks c in order, one thread per column.
extern "C" __global__ void col_sums_fin(float* dst, const float* part, int chunks, int w) {
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= w) return;
	float s = part[j];
	for (int c = 1; c < chunks; c++) s = __fadd_rn(s, part[(long)c * w + j]);
	dst[j] = s;
}

// copy_cols copies, for n rows, columns [srcOff, srcOff+w) of src (rows of srcW) to columns [dstOff, dstOff+w)
// of dst (rows of dstW), adding to dst when acc != 0: engine/train's copyCols. One thread per copied element.
extern "C" __global__ void copy_cols(float* dst, int dstW, int dstOff, const float* src, int srcW, int srcOff,
	int n, int w, int acc) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	long r = i / w;
	int j = (int)(i % w);
	float s = src[r * srcW + srcOff + j];
	float* d = dst + r * dstW + dstOff + j;
	*d = acc ? __fadd_rn(*d, s) : s;
}

// gather_rows sets row r of dst [n, w] to the sum of the k rows idx[k·r .. k·r+k) of table (rows of w), in that
// order, an index −1 adding nothing (a zero row when all are −1): engine/train's gatherRows, the embedding lookup
// (k = 1) and layer 0's positional gates (k = 2). One thread per element of dst.
extern "C" __global__ void gather_rows(float* dst, const float* table, const int* idx, int n, int k, int w) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * w) return;
	long r = i / w;
	int j = (int)(i % w);
	float s = 0.0f;
	bool first = true;
	for (int q = 0; q < k; q++) {
		int t = idx[r * k + q];
		if (t < 0) continue;
		float v = table[(long)t * w + j];
		s = first ? v : __fadd_rn(s, v);
		first = false;
	}
	dst[i] = s;
}

// NFBO_SCATTER_THREADS is scatter_add_rows's block size at most: the index chunk it stages in shared memory.
#define NFBO_SCATTER_THREADS 256

// scatter_add_rows adds row r of src [n, w] to each row idx[k·r .. k·r+k) of dst (rows of w), skipping −1:
// gather_rows's gradient. It is deterministic without atomics: block b owns row b of dst (launch one block per
// row of dst, NFBO_SCATTER_THREADS threads) and walks the n·k indices in order, staged a chunk at a time in
// shared memory. A row at least as wide as the block adds the matching source rows to its columns in index
// order, as engine/train's scatterAddRows does, so each entry is the CPU's bits. A narrower row (the embeddings',
// w = F) splits the block into G groups of w (rounded up to a warp) threads: group g adds the matches at chunk
// positions ≡ g (mod G) in order, and the groups' sums are added to the row in group order at the end, so a
// token that fills thousands of rows (the stop token) takes 1/G of the serial adds, in a fixed order.
extern "C" __global__ void scatter_add_rows(float* dst, const float* src, const int* idx, int n, int k, int w) {
	__shared__ int chunk[NFBO_SCATTER_THREADS];
	__shared__ float part[NFBO_SCATTER_THREADS];
	int row = blockIdx.x;
	long m = (long)n * k;
	float* d = dst + (long)row * w;
	int wp = w >= (int)blockDim.x ? (int)blockDim.x : (w + 31) / 32 * 32;
	int G = blockDim.x / wp, g = threadIdx.x / wp, c = threadIdx.x % wp;
	float s = 0.0f;
	for (long base = 0; base < m; base += blockDim.x) {
		long e = base + threadIdx.x;
		chunk[threadIdx.x] = e < m ? idx[e] : -1;
		__syncthreads();
		int cnt = (int)min((long)blockDim.x, m - base);
		if (G == 1) {
			for (int q = 0; q < cnt; q++) {
				if (chunk[q] != row) continue;
				const float* sr = src + ((base + q) / k) * w;
				for (int j = threadIdx.x; j < w; j += blockDim.x) d[j] = __fadd_rn(d[j], sr[j]);
			}
		} else if (g < G && c < w) {
			for (int q = g; q < cnt; q += G)
				if (chunk[q] == row) s = __fadd_rn(s, src[((base + q) / k) * w + c]);
		}
		__syncthreads();
	}
	if (G == 1) return;
	part[threadIdx.x] = s;
	__syncthreads();
	if (g == 0 && c < w) {
		float t = part[c];
		for (int h = 1; h < G; h++) t = __fadd_rn(t, part[h * wp + c]);
		d[c] = __fadd_rn(d[c], t);
	}
}

// affine_fwd_rows transforms the n rows of w [n, half] with the raw parameters o [n, half, 2] and writes out
// [n, half+1]: u = o0 + exp(½·o1)·w, then the row's Σ ½·o1 (engine/train's transformRows for the affine map),
// in double. One thread per row.
extern "C" __global__ void affine_fwd_rows(float* out, const float* o, const float* w, int n, int half) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	double ld = 0;
	for (int i = 0; i < half; i++) {
		long k = (long)r * half + i;
		double s = 0.5 * (double)o[k * 2 + 1];
		out[(long)r * (half + 1) + i] = (float)((double)o[k * 2] + exp(s) * (double)w[k]);
		ld += s;
	}
	out[(long)r * (half + 1) + half] = (float)ld;
}

// affine_bwd_rows is affine_fwd_rows's gradient: from dOut [n, half+1] (u's gradient, then the log-det's) it
// writes dO [n, half, 2] and dw [n, half]: do0 = du, do1 = ½·du·exp(½·o1)·w + ½·dl, dw = du·exp(½·o1). One
// thread per scalar.
extern "C" __global__ void affine_bwd_rows(float* dO, float* dw, const float* o, const float* w, const float* dOut,
	int n, int half) {
	long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (long)n * half) return;
	long r = k / half;
	int i = (int)(k % half);
	double du = dOut[r * (half + 1) + i], dl = dOut[r * (half + 1) + half];
	double e = exp(0.5 * (double)o[k * 2 + 1]);
	dO[k * 2] = (float)du;
	dO[k * 2 + 1] = (float)(du * 0.5 * e * (double)w[k] + dl * 0.5);
	dw[k] = (float)(du * e);
}

// nfbo_dot returns Σ a_j·b_j over f entries in double, in order, each product and sum rounded (no FMA), as the
// CPU's loops sum.
__device__ __forceinline__ double nfbo_dot(const float* a, const float* b, int f) {
	double s = 0;
	for (int j = 0; j < f; j++) s = __dadd_rn(s, __dmul_rn((double)a[j], (double)b[j]));
	return s;
}

// normalize_rows sets dst [n, w] to the rows of src divided by their norms, a zero row staying zero
// (kernels.NormalizeRowsTo). One thread per row.
extern "C" __global__ void normalize_rows(float* dst, const float* src, int n, int w) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	const float* x = src + (long)r * w;
	float* y = dst + (long)r * w;
	double ss = nfbo_dot(x, x, w);
	if (ss == 0) {
		for (int j = 0; j < w; j++) y[j] = 0.0f;
		return;
	}
	double inv = 1 / sqrt(ss);
	for (int j = 0; j < w; j++) y[j] = (float)__dmul_rn((double)x[j], inv);
}

// normalize_rows_grad writes dx [n, w], the gradient with respect to x of Σ dy·y for y = normalize_rows(x):
// dx = (dy − x·(x·dy)/‖x‖²)/‖x‖, zero for a zero row (kernels.NormalizeRowsGradTo). dx may alias dy. One thread
// per row.
extern "C" __global__ void normalize_rows_grad(float* dx, const float* dy, const float* x, int n, int w) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	const float* xr = x + (long)r * w;
	const float* g = dy + (long)r * w;
	float* d = dx + (long)r * w;
	double ss = nfbo_dot(xr, xr, w), xd = nfbo_dot(xr, g, w);
	if (ss == 0) {
		for (int j = 0; j < w; j++) d[j] = 0.0f;
		return;
	}
	double nn = sqrt(ss), k = xd / ss;
	for (int j = 0; j < w; j++) d[j] = (float)(((double)g[j] - (double)xr[j] * k) / nn);
}

// nfbo_sim_dots sets ‖v‖, v·ex and v·ej in double, summed in one pass in order as kernels' simDots sums.
__device__ __forceinline__ void nfbo_sim_dots(const float* v, const float* ex, const float* ej, int f, double* nv,
	double* p, double* q) {
	double ss = 0, pp = 0, qq = 0;
	for (int j = 0; j < f; j++) {
		double a = v[j];
		ss = __dadd_rn(ss, __dmul_rn(a, a));
		pp = __dadd_rn(pp, __dmul_rn(a, (double)ex[j]));
		qq = __dadd_rn(qq, __dmul_rn(a, (double)ej[j]));
	}
	*nv = sqrt(ss);
	*p = pp;
	*q = qq;
}

// similarity writes sim [n] = 1 − cos(v, ex) + max(0, cos(v, ej)), cos(v, e) = v·e/‖v‖, for rows v, ex, ej
// [n, f] (kernels.SimilarityTo). One thread per row.
extern "C" __global__ void similarity(float* sim, const float* v, const float* ex, const float* ej, int n, int f) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	double nv, p, q;
	nfbo_sim_dots(v + (long)r * f, ex + (long)r * f, ej + (long)r * f, f, &nv, &p, &q);
	sim[r] = (float)(1 - p / nv + fmax(0.0, q / nv));
}

// similarity_grad writes dex = dv + coef·(∂sim/∂v + ∂sim/∂ex) and dej = coef·∂sim/∂ej for v = ex + ε
// (kernels.SimilarityGradTo, whose comment has the derivatives), rows [n, f], coef [n]. dex may alias dv. One
// thread per row.
extern "C" __global__ void similarity_grad(float* dex, float* dej, const float* dv, const float* v, const float* ex,
	const float* ej, const float* coef, int n, int f) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	long o = (long)r * f;
	double nv, p, q;
	nfbo_sim_dots(v + o, ex + o, ej + o, f, &nv, &p, &q);
	double c = coef[r], cosP = p / nv, cosN = q / nv;
	bool neg = q > 0;
	for (int i = 0; i < f; i++) {
		double vh = (double)v[o + i] / nv;
		double gv = -((double)ex[o + i] - cosP * vh) / nv;
		double gj = 0;
		if (neg) {
			gv += ((double)ej[o + i] - cosN * vh) / nv;
			gj = vh;
		}
		dex[o + i] = (float)((double)dv[o + i] + c * (gv - vh));
		dej[o + i] = (float)(c * gj);
	}
}

// gauss_nll writes nll [n] = ½·Σ y² + c − logdet for rows y [n, f], c = ½·f·log 2π computed by the caller in
// Go (kernels.GaussNLLTo's constant, passed rather than retyped). One thread per row.
extern "C" __global__ void gauss_nll(float* nll, const float* y, const float* logdet, int n, int f, double c) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	const float* x = y + (long)r * f;
	nll[r] = (float)(0.5 * nfbo_dot(x, x, f) + c - (double)logdet[r]);
}

// scale_rows sets row r of dst [n, f] to s[r] times row r of x (kernels.ScaleRowsTo): the gradient of
// Σ s_r·nll_r with respect to y. dst may alias x.
extern "C" __global__ void scale_rows(float* dst, const float* x, const float* s, int n, int f) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)n * f) return;
	dst[i] = __fmul_rn(s[i / f], x[i]);
}

// NFBO_NORM_THREADS is the block size of both stages of the gradient norm (a power of two).
#define NFBO_NORM_THREADS 256

// nfbo_block_sum returns, in thread 0, the sum of every thread's v over a block of NFBO_NORM_THREADS: a fixed
// tree in shared memory, so the sum's bits do not depend on timing.
__device__ double nfbo_block_sum(double v) {
	__shared__ double part[NFBO_NORM_THREADS];
	part[threadIdx.x] = v;
	__syncthreads();
	for (int s = NFBO_NORM_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	return part[0];
}

// sum_squares_part is the gradient norm's first stage: block b of G (launched with NFBO_NORM_THREADS threads)
// writes part[b], the double sum of x_i² over the i ≡ thread (mod G·NFBO_NORM_THREADS) of its threads. G depends
// only on n (engine/gpustep), so the partial sums, and the norm, are the same on every run.
extern "C" __global__ void sum_squares_part(double* part, const float* x, long n) {
	long stride = (long)gridDim.x * NFBO_NORM_THREADS;
	double s = 0;
	for (long i = (long)blockIdx.x * NFBO_NORM_THREADS + threadIdx.x; i < n; i += stride) {
		double a = x[i];
		s = __dadd_rn(s, __dmul_rn(a, a));
	}
	double t = nfbo_block_sum(s);
	if (threadIdx.x == 0) part[blockIdx.x] = t;
}

// sum_part_add is the second stage: one block of NFBO_NORM_THREADS threads adds Σ part[0..m) to out[0], a step's
// accumulator (engine/step.AccSq).
extern "C" __global__ void sum_part_add(double* out, const double* part, int m) {
	double s = 0;
	for (int i = threadIdx.x; i < m; i += NFBO_NORM_THREADS) s += part[i];
	double t = nfbo_block_sum(s);
	if (threadIdx.x == 0) out[0] += t;
}

// nfbo_adam is entry i's Adam update with gradient scale `scale`: in double on float storage, the moments rounded
// to float before the update, no FMA, so each entry is the CPU's bits (kernels.AdamUpdate).
__device__ __forceinline__ void nfbo_adam(long i, float* p, const float* g, float* m, float* v, double scale,
	double b1, double b2, double stepSize, double bc2Sqrt, double eps) {
	double gi = __dmul_rn((double)g[i], scale);
	float mi = (float)__dadd_rn(__dmul_rn(b1, (double)m[i]), __dmul_rn(1 - b1, gi));
	float vi = (float)__dadd_rn(__dmul_rn(b2, (double)v[i]), __dmul_rn(__dmul_rn(1 - b2, gi), gi));
	m[i] = mi;
	v[i] = vi;
	double denom = __dadd_rn(sqrt((double)vi) / bc2Sqrt, eps);
	p[i] = (float)__dadd_rn((double)p[i], -(__dmul_rn(stepSize, (double)mi) / denom));
}

// adam_update applies one Adam update to n parameters p with gradients g and moments m, v, as kernels.AdamUpdate
// (kernels.AdamCoeffs: scale, β1, β2, stepSize, √(1 − β2^t), ε).
extern "C" __global__ void adam_update(float* p, const float* g, float* m, float* v, long n, double scale,
	double b1, double b2, double stepSize, double bc2Sqrt, double eps) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) nfbo_adam(i, p, g, m, v, scale, b1, b2, stepSize, bc2Sqrt, eps);
}

// adam_clipped is adam_update with the scale of engine/step.ClipScale computed from the squared norm
// acc[sqSlot] and clip, and no update unless acc[lossSlot] and acc[sqSlot] are finite (engine/step.Finite): the
// clipping and the guard where the sums are, so the host need not read them before the update.
extern "C" __global__ void adam_clipped(float* p, const float* g, float* m, float* v, long n, const double* acc,
	int lossSlot, int sqSlot, double clip, double b1, double b2, double stepSize, double bc2Sqrt, double eps) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	double loss = acc[lossSlot], sq = acc[sqSlot];
	if (i >= n || !isfinite(loss) || !isfinite(sq)) return;
	double scale = 1;
	if (clip > 0) {
		double c = clip / (sqrt(sq) + 1e-6);
		if (c < 1) scale = c;
	}
	nfbo_adam(i, p, g, m, v, scale, b1, b2, stepSize, bc2Sqrt, eps);
}
