//go:build cgo

package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// gpuEnabled reports whether the GPU tests must run: NFBO_GPU=1 says a GPU is there, and then its absence is a
// failure, not a skip.
func gpuEnabled() bool { return os.Getenv("NFBO_GPU") == "1" }

// Without a GPU, opening one is a LoadError (no driver) or a DriverError, never a crash.
func TestOpenDeviceWithoutGPU(t *testing.T) {
	if gpuEnabled() {
		t.Skip("NFBO_GPU=1: the GPU tests cover the device")
	}
	d, err := OpenDevice(fakeEnv(map[string]string{LibDirsEnv: t.TempDir()}, nil), 0)
	if err == nil {
		d.Close()
		t.Skip("a GPU is present; run with NFBO_GPU=1")
	}
	var le *LoadError
	var de *DriverError
	if !errors.As(err, &le) && !errors.As(err, &de) {
		t.Fatalf("OpenDevice without a GPU: %v (%T), want a *LoadError or *DriverError", err, err)
	}
	t.Log(err)
}

// openTestDevice opens GPU 0 and loads the embedded kernels compiled for it.
func openTestDevice(t *testing.T) (*Device, map[string]*Kernel) {
	t.Helper()
	if !gpuEnabled() {
		t.Skip("set NFBO_GPU=1 on a machine with a GPU")
	}
	d, err := OpenDevice(OSEnv(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t.Logf("GPU %+v", d.Info)
	ks, err := d.LoadKernels(loadTestNVRTC(t))
	if err != nil {
		t.Fatal(err)
	}
	return d, ks
}

// buffers uploads each slice to fresh device memory.
func buffers(t *testing.T, d *Device, xs ...[]float32) []Ptr {
	t.Helper()
	ps := make([]Ptr, len(xs))
	for i, x := range xs {
		p, err := d.Alloc(4 * max(1, len(x)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Free(p) })
		if err := d.Upload(p, x); err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	return ps
}

func download(t *testing.T, d *Device, p Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := d.Download(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

func randn(rng *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sd)
	}
	return x
}

func near(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	bad := 0
	for i, w := range want {
		if math.Abs(float64(got[i])-w) > tol*(1+math.Abs(w)) {
			if bad < 5 {
				t.Errorf("%s[%d]: GPU %.9g, reference %.9g", what, i, got[i], w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d entries off", what, bad, len(want))
	}
}

// Each kernel against a float64 reference, on odd shapes past a block multiple.
func TestGPUKernels(t *testing.T) {
	d, ks := openTestDevice(t)
	rng := rand.New(rand.NewPCG(1, 1))

	t.Run("nlsq_fwd", func(t *testing.T) {
		const n, half = 1003, 20
		o, w := randn(rng, n*half*5, 1), randn(rng, n*half, 1)
		p := buffers(t, d, o, w, make([]float32, n*(half+1)))
		if err := ks["nlsq_fwd"].Launch(GridFor(n, 128), p[2], p[0], p[1], n, half); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, n*(half+1))
		logA := math.Log(8*math.Sqrt(3)/9 - 0.05)
		for r := range n {
			var ld float64
			for i := range half {
				q := o[(r*half+i)*5:]
				a, bb, dd, f := float64(q[0]), math.Exp(0.4*float64(q[1])), math.Exp(0.4*float64(q[3])), float64(q[4])
				cc := math.Tanh(0.3*float64(q[2])) * math.Exp(logA+0.4*float64(q[1])-0.4*float64(q[3]))
				x := float64(w[r*half+i])
				s := dd*x + f
				den := 1 + s*s
				want[r*(half+1)+i] = a + bb*x + cc/den
				ld += math.Log(bb - 2*cc*dd*s/(den*den))
			}
			want[r*(half+1)+half] = ld
		}
		near(t, "nlsq", download(t, d, p[2], n*(half+1)), want, 1e-6)
	})

	for _, perRow := range []int{0, 1} {
		t.Run("lstm_cell_step", func(t *testing.T) {
			const B, H = 37, 13
			g, c := randn(rng, B*4*H, 1), randn(rng, B*H, 1)
			brows := 1
			if perRow == 1 {
				brows = B
			}
			bias := randn(rng, brows*4*H, 0.5)
			p := buffers(t, d, g, bias, c, make([]float32, B*H), make([]float32, B*H))
			if err := ks["lstm_cell_step"].Launch(GridFor(B*H, 128), p[0], p[1], perRow, p[2], p[2], p[3], p[4], B, H); err != nil { // c in place, as decoding runs it
				t.Fatal(err)
			}
			sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
			wantG, wantC := make([]float64, B*4*H), make([]float64, B*H)
			wantT, wantH := make([]float64, B*H), make([]float64, B*H)
			for b := range B {
				br := bias[perRow*b*4*H:]
				for u := range H {
					pre := func(k int) float64 { return float64(g[b*4*H+k*H+u]) + float64(br[k*H+u]) }
					i, f, gg, og := sig(pre(0)), sig(pre(1)), math.Tanh(pre(2)), sig(pre(3))
					wantG[b*4*H+u], wantG[b*4*H+H+u], wantG[b*4*H+2*H+u], wantG[b*4*H+3*H+u] = i, f, gg, og
					cn := f*float64(c[b*H+u]) + i*gg
					wantC[b*H+u], wantT[b*H+u], wantH[b*H+u] = cn, math.Tanh(cn), og*math.Tanh(cn)
				}
			}
			near(t, "gates", download(t, d, p[0], B*4*H), wantG, 1e-5)
			near(t, "c", download(t, d, p[2], B*H), wantC, 1e-5)
			near(t, "tanh(c)", download(t, d, p[3], B*H), wantT, 1e-5)
			near(t, "h", download(t, d, p[4], B*H), wantH, 1e-5)
		})
	}

	t.Run("bias_act", func(t *testing.T) {
		const n, w = 1003, 7
		y, b := randn(rng, n*w, 1), randn(rng, w, 1)
		p := buffers(t, d, y, b)
		if err := ks["bias_act"].Launch(GridFor(n*w, 256), p[0], p[1], n, w, 1); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, n*w)
		for i := range want {
			want[i] = math.Max(0, float64(y[i]+b[i%w]))
		}
		near(t, "bias+ReLU", download(t, d, p[0], n*w), want, 0)
	})

	t.Run("lstm_cell_bwd", func(t *testing.T) {
		const B, H = 37, 13
		sig := func(x float64) float32 { return float32(1 / (1 + math.Exp(-x))) }
		act := make([]float32, B*4*H)
		for i := range act {
			if (i/H)%4 == 2 {
				act[i] = float32(math.Tanh(rng.NormFloat64()))
			} else {
				act[i] = sig(rng.NormFloat64())
			}
		}
		tc, cprev, dout, dh, dc := randn(rng, B*H, 0.5), randn(rng, B*H, 1), randn(rng, B*H, 1), randn(rng, B*H, 1), randn(rng, B*H, 1)
		for i := range tc {
			tc[i] = float32(math.Tanh(float64(tc[i])))
		}
		p := buffers(t, d, make([]float32, B*4*H), act, tc, cprev, dout, dh, dc)
		if err := ks["lstm_cell_bwd"].Launch(GridFor(B*H, 128), p[0], p[1], p[2], p[3], p[4], p[5], p[6], B, H); err != nil {
			t.Fatal(err)
		}
		wantG, wantC := make([]float64, B*4*H), make([]float64, B*H)
		for b := range B {
			for u := range H {
				a := func(k int) float64 { return float64(act[b*4*H+k*H+u]) }
				i, f, gg, o := a(0), a(1), a(2), a(3)
				k := b*H + u
				tt := float64(tc[k])
				dht := float64(dout[k]) + float64(dh[k])
				dct := dht*o*(1-tt*tt) + float64(dc[k])
				wantG[b*4*H+u] = dct * gg * i * (1 - i)
				wantG[b*4*H+H+u] = dct * float64(cprev[k]) * f * (1 - f)
				wantG[b*4*H+2*H+u] = dct * i * (1 - gg*gg)
				wantG[b*4*H+3*H+u] = dht * tt * o * (1 - o)
				wantC[k] = dct * f
			}
		}
		near(t, "dgates", download(t, d, p[0], B*4*H), wantG, 1e-5)
		near(t, "dc", download(t, d, p[6], B*H), wantC, 1e-5)
	})

	t.Run("nlsq_bwd", func(t *testing.T) {
		// Against central differences of the float64 forward map.
		const n, half = 131, 20
		o, w, dout := randn(rng, n*half*5, 1), randn(rng, n*half, 1), randn(rng, n*(half+1), 1)
		p := buffers(t, d, make([]float32, n*half*5), make([]float32, n*half), o, w, dout)
		if err := ks["nlsq_bwd"].Launch(GridFor(n, 64), p[0], p[1], p[2], p[3], p[4], n, half); err != nil {
			t.Fatal(err)
		}
		logA := math.Log(8*math.Sqrt(3)/9 - 0.05)
		// L(q, x) = du·u + dl·log u' for one scalar with raw parameters q.
		loss := func(q [5]float64, x, du, dl float64) float64 {
			bb, dd := math.Exp(0.4*q[1]), math.Exp(0.4*q[3])
			cc := math.Tanh(0.3*q[2]) * math.Exp(logA+0.4*q[1]-0.4*q[3])
			s := dd*x + q[4]
			den := 1 + s*s
			return du*(q[0]+bb*x+cc/den) + dl*math.Log(bb-2*cc*dd*s/(den*den))
		}
		wantO, wantW := make([]float64, n*half*5), make([]float64, n*half)
		const h = 1e-6
		for r := range n {
			dl := float64(dout[r*(half+1)+half])
			for i := range half {
				k := r*half + i
				var q [5]float64
				for j := range q {
					q[j] = float64(o[k*5+j])
				}
				x, du := float64(w[k]), float64(dout[r*(half+1)+i])
				for j := range q {
					up, dn := q, q
					up[j] += h
					dn[j] -= h
					wantO[k*5+j] = (loss(up, x, du, dl) - loss(dn, x, du, dl)) / (2 * h)
				}
				wantW[k] = (loss(q, x+h, du, dl) - loss(q, x-h, du, dl)) / (2 * h)
			}
		}
		near(t, "do", download(t, d, p[0], n*half*5), wantO, 1e-4)
		near(t, "dw", download(t, d, p[1], n*half), wantW, 1e-4)
	})

	t.Run("nearest_token", func(t *testing.T) {
		const n, V, F = 1003, 185, 40
		unit := randn(rng, V*F, 1)
		for j := range V {
			var ss float64
			for _, x := range unit[j*F : (j+1)*F] {
				ss += float64(x) * float64(x)
			}
			for k := range F {
				unit[j*F+k] = float32(float64(unit[j*F+k]) / math.Sqrt(ss))
			}
		}
		y := make([]float32, n*F)
		for r := range n {
			j := rng.IntN(V)
			for k := range F {
				y[r*F+k] = unit[j*F+k] + float32(0.1*rng.NormFloat64())
			}
		}
		clear(y[:F]) // a zero row maps to token 0
		p := buffers(t, d, y, unit, make([]float32, n))
		if err := ks["nearest_token"].Launch(GridFor(n, 128), p[2], p[0], p[1], n, V, F); err != nil {
			t.Fatal(err)
		}
		got := make([]int32, n)
		if err := d.DownloadInt32(got, p[2]); err != nil {
			t.Fatal(err)
		}
		for r := range n {
			best, arg := math.Inf(-1), 0
			for j := range V {
				var s float64
				for k := range F {
					s += float64(unit[j*F+k]) * float64(y[r*F+k])
				}
				if s > best {
					best, arg = s, j
				}
			}
			if int(got[r]) != arg {
				t.Errorf("row %d: GPU token %d, reference %d", r, got[r], arg)
			}
		}
	})
}

// cuBLAS's row-major Gemm, all four transpositions, odd shapes, pedantic math against float64 products.
func TestGPUGemm(t *testing.T) {
	d, _ := openTestDevice(t)
	b, err := d.OpenBLAS(OSEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Logf("cuBLAS %d from %s", b.Version, b.Path)
	rng := rand.New(rand.NewPCG(3, 3))
	const m, n, k = 37, 53, 1003
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			A, B, C := randn(rng, m*k, 1), randn(rng, k*n, 1), randn(rng, m*n, 1)
			ar, ac, br, bc := m, k, k, n
			if tA {
				ar, ac = k, m
			}
			if tB {
				br, bc = n, k
			}
			p := buffers(t, d, A, B, C)
			if err := b.Gemm(tA, tB, 0.5, p[0], ar, ac, p[1], br, bc, 2, p[2]); err != nil {
				t.Fatal(err)
			}
			want, bound := make([]float64, m*n), make([]float64, m*n)
			for i := range m {
				for j := range n {
					var s, abs float64
					for l := range k {
						// Index the stored layout only: op(A)[i][l] is A[l][i] when transposed.
						var a, bv float32
						if tA {
							a = A[l*ac+i]
						} else {
							a = A[i*ac+l]
						}
						if tB {
							bv = B[j*bc+l]
						} else {
							bv = B[l*bc+j]
						}
						s += float64(a) * float64(bv)
						abs += math.Abs(float64(a) * float64(bv))
					}
					want[i*n+j] = 0.5*s + 2*float64(C[i*n+j])
					// float32 accumulation of k products: well within 1e-5 of Σ|a·b|.
					bound[i*n+j] = 1e-5 * (0.5*abs + 2*math.Abs(float64(C[i*n+j])))
				}
			}
			got := download(t, d, p[2], m*n)
			for i, w := range want {
				if math.Abs(float64(got[i])-w) > bound[i] {
					t.Fatalf("gemm tA=%v tB=%v: C[%d] = %.9g, reference %.9g (bound %.3g)", tA, tB, i, got[i], w, bound[i])
				}
			}
		}
	}
}
