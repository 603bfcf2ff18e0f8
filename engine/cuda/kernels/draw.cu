// A training step's random inputs and sums, made on the GPU (engine/step's draws, engine/gpustep): the batch's
// weights and positional codes from its lengths, the negative tokens, the rejection-sampled noise and the dropout
// masks from a counter-based generator, and the loss's sums. Each kernel computes what its Go twin in
// engine/step computes (LayoutTo, NegativesTo, NoiseTo, DropoutTo, LossSums), and engine/gpustep's tests hold it
// to that twin: the same bits, except where the GPU's double log, sin and cos differ from Go's in the last place
// (the noise's Box-Muller), which the float32 rounding of the noise hides all but rarely.
//
// The key of a step's draws comes as one long (its low word first), and each draw's counter is (word, row or
// mask, attempt, purpose), purpose 0 for noise, 1 for negatives, 2 for dropout.

// nfbo_philox is Philox4x32-10 (kernels.Philox4x32): ten rounds of the counter under the key, bumped between.
__device__ __forceinline__ uint4 nfbo_philox(uint4 c, long key) {
	unsigned k0 = (unsigned)key, k1 = (unsigned)((unsigned long long)key >> 32);
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += 0x9E3779B9u;
			k1 += 0xBB67AE85u;
		}
		unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
		unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
		c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
	}
	return c;
}

// nfbo_box_muller is kernels.BoxMuller: two standard normals from two words.
__device__ __forceinline__ void nfbo_box_muller(unsigned x0, unsigned x1, double* z0, double* z1) {
	double u1 = ((double)x0 + 1.0) * (1.0 / 4294967296.0);
	double u2 = (double)x1 * (1.0 / 4294967296.0);
	double r = sqrt(-2.0 * log(u1));
	double s, c;
	sincos(6.283185307179586 * u2, &s, &c);
	*z0 = r * c;
	*z1 = r * s;
}

// batch_layout is step.LayoutTo for B sequences of T positions: thread i writes row i's weight, −weight and
// λ·weight (i < T·B), positional rows 2i and 2i+1 (i < (T−1)·B) and entry i of the initial codes (i < B·2·maxT).
extern "C" __global__ void batch_layout(float* wt, float* negWt, float* simC, int* pos, float* pos0, const int* lens,
	int B, int T, int maxT, int nReal, float simCoef) {
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < (long)T * B) {
		int t = (int)(i / B), b = (int)(i % B);
		float w = (b < nReal && t < lens[b]) ? (float)(1.0 / (double)nReal) : 0.0f;
		wt[i] = w;
		negWt[i] = -w;
		simC[i] = __fmul_rn(simCoef, w);
	}
	if (i < (long)(T - 1) * B) {
		int s = (int)(i / B), b = (int)(i % B);
		pos[2 * i] = s + 1;
		pos[2 * i + 1] = maxT + max(lens[b] - 2 - s, 0);
	}
	int P = 2 * maxT;
	if (i < (long)B * P) {
		int b = (int)(i / P), j = (int)(i % P);
		pos0[i] = (j == 0 || j == maxT + lens[b] - 1) ? 1.0f : 0.0f;
	}
}

// draw_negatives is step.NegativesTo: one thread per row.
extern "C" __global__ void draw_negatives(int* neg, const int* tok, const float* wt, int n, int v, long key) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	neg[r] = -1;
	if (wt[r] == 0.0f) return;
	uint4 x = nfbo_philox(make_uint4(0u, (unsigned)r, 0u, 1u), key);
	int j = (int)__umulhi(x.x, (unsigned)v);
	if (j != tok[r]) neg[r] = j;
}

// nfbo_nearest is step.NearestRow: the row of en [v, f] with the largest dot product with en[x] + e, in double,
// products and sums rounded one by one as Go rounds them.
__device__ int nfbo_nearest(const float* en, int x, const float* e, int f, int v) {
	double best = -1.0 / 0.0;
	int arg = 0;
	for (int k = 0; k < v; k++) {
		double d = 0;
		for (int j = 0; j < f; j++)
			d = __dadd_rn(d, __dmul_rn((double)en[(long)k * f + j], __dadd_rn((double)en[(long)x * f + j], (double)e[j])));
		if (d > best) {
			best = d;
			arg = k;
		}
	}
	return arg;
}

// draw_noise is step.NoiseTo: one thread per row of eps [n, f] draws attempt after attempt into its row until the
// noisy embedding stays nearest to the row's token or rounds are spent, and adds 1 to acc[slot] for a row whose
// every attempt was rejected.
extern "C" __global__ void draw_noise(float* eps, const int* tok, const float* wt, const float* en, int n, int f, int v,
	double sigma, int rounds, long key, double* acc, int slot) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n) return;
	float* e = eps + (long)r * f;
	if (wt[r] == 0.0f) {
		for (int j = 0; j < f; j++) e[j] = 0.0f;
		return;
	}
	int x = tok[r];
	bool ok = false;
	for (int a = 0; a < rounds && !ok; a++) {
		for (int i = 0; 4 * i < f; i++) {
			uint4 w = nfbo_philox(make_uint4((unsigned)i, (unsigned)r, (unsigned)a, 0u), key);
			double z[4];
			nfbo_box_muller(w.x, w.y, &z[0], &z[1]);
			nfbo_box_muller(w.z, w.w, &z[2], &z[3]);
			for (int k = 0; k < 4 && 4 * i + k < f; k++) e[4 * i + k] = (float)(sigma * z[k]);
		}
		ok = nfbo_nearest(en, x, e, f, v) == x;
	}
	if (!ok) atomicAdd(acc + slot, 1.0);
}

// draw_dropout is step.DropoutTo: one thread per four entries of mask [n], keep the kept entries' value.
extern "C" __global__ void draw_dropout(float* mask, long n, double p, float keep, long key, int stream) {
	long q = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (4 * q >= n) return;
	uint4 x = nfbo_philox(make_uint4((unsigned)q, (unsigned)stream, 0u, 2u), key);
	unsigned w[4] = {x.x, x.y, x.z, x.w};
	for (int k = 0; k < 4 && 4 * q + k < n; k++) {
		double u = (double)(w[k] >> 8) * (1.0 / 16777216.0);
		mask[4 * q + k] = u >= p ? keep : 0.0f;
	}
}

// NFBO_SUM_THREADS is sum_loss's block size (a power of two).
#define NFBO_SUM_THREADS 256

// nfbo_tree_sum returns, in thread 0, the sum of every thread's v over the block: a fixed tree in shared memory.
__device__ double nfbo_tree_sum(double v, double* part) {
	__syncthreads();
	part[threadIdx.x] = v;
	__syncthreads();
	for (int s = NFBO_SUM_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	return part[0];
}

// sum_loss adds step.LossSums of rows nll, sim and wt [n] to acc[slot .. slot+4): the loss Σ w·(nll + λ·sim), then
// over the rows of nonzero weight Σ nll, Σ sim and their number. One block of NFBO_SUM_THREADS threads, each
// summing rows i ≡ thread (mod NFBO_SUM_THREADS) in order, then a fixed tree: the same bits on every run.
extern "C" __global__ void sum_loss(double* acc, int slot, const float* nll, const float* sim, const float* wt, int n,
	double simCoef) {
	__shared__ double part[NFBO_SUM_THREADS];
	double s[4] = {0, 0, 0, 0};
	for (int r = threadIdx.x; r < n; r += NFBO_SUM_THREADS) {
		double a = nll[r], b = sim[r], w = wt[r];
		s[0] = __dadd_rn(s[0], __dmul_rn(w, __dadd_rn(a, __dmul_rn(simCoef, b))));
		if (w != 0) {
			s[1] += a;
			s[2] += b;
			s[3] += 1;
		}
	}
	for (int k = 0; k < 4; k++) {
		double t = nfbo_tree_sum(s[k], part);
		if (threadIdx.x == 0) acc[slot + k] += t;
	}
}
