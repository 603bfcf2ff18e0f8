package gpustep

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unsafe"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/kernels"
)

// The emulator is a backend whose memory is Go memory at made-up device addresses and whose kernels are float64
// references in Go, one per CUDA kernel the Device launches: the oracle of the GPU kernel tests (TestGPUKernels
// runs each launch on both) and, on any machine, the device the whole Device runs on against train.CPU
// (TestEmulatedStepMatchesCPU). Every launch is checked first against the CUDA source's signature (argument
// count and types, as engine/cuda passes them), its grid against the threads the kernel needs, and every
// pointer's extent against its allocation, so a Device that passes here fails on a GPU only through the CUDA C.

// argKind is a kernel parameter's type as the launch passes it.
type argKind int

const (
	kPtr    argKind = iota // any pointer: cuda.Ptr
	kInt                   // int: Go int or int32
	kLong                  // long: int64
	kFloat                 // float: float32
	kDouble                // double: float64
)

func (k argKind) String() string { return [...]string{"pointer", "int", "long", "float", "double"}[k] }

var signatureRE = regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`)

// kernelSignatures parses every embedded kernel source's extern "C" entry points.
func kernelSignatures() map[string][]argKind {
	sigs := map[string][]argKind{}
	for _, src := range cuda.Kernels() {
		for _, m := range signatureRE.FindAllStringSubmatch(src.Code, -1) {
			var kinds []argKind
			for _, p := range strings.Split(m[2], ",") {
				p = strings.TrimSpace(p)
				if strings.Contains(p, "*") {
					kinds = append(kinds, kPtr)
					continue
				}
				f := strings.Fields(p)
				switch f[len(f)-2] {
				case "int":
					kinds = append(kinds, kInt)
				case "long":
					kinds = append(kinds, kLong)
				case "float":
					kinds = append(kinds, kFloat)
				case "double":
					kinds = append(kinds, kDouble)
				default:
					panic(fmt.Sprintf("%s: kernel %s: parameter %q of a type the emulator does not know", src.Name, m[1], p))
				}
			}
			sigs[m[1]] = kinds
		}
	}
	return sigs
}

// goKind returns the parameter type a launch argument fills.
func goKind(a any) (argKind, bool) {
	switch a.(type) {
	case cuda.Ptr:
		return kPtr, true
	case int, int32:
		return kInt, true
	case int64:
		return kLong, true
	case float32:
		return kFloat, true
	case float64:
		return kDouble, true
	}
	return 0, false
}

// emuAlloc is one allocation: bytes at base, backed by 8-byte words so that every view is aligned.
type emuAlloc struct {
	base  cuda.Ptr
	bytes int
	words []uint64
}

// emu is the emulated backend. fail, when set, is the error of the launch of that kernel (and of every later
// call), to test the Device's sticky errors.
type emu struct {
	allocs   []*emuAlloc // by base
	next     cuda.Ptr
	sigs     map[string][]argKind
	launches map[string]int
	fail     func(kernel string) error
	after    func(e *emu, kernel string, a args) // run after each kernel's reference (tests of the tests)
	failed   error
	closed   bool
	// dry runs no kernel and backs no allocation: every launch is still
	// checked against its kernel's signature and every copy against its
	// allocation's extent, but memory is one scratch area that all regions
	// share. It counts a paper-preset step without its gigabytes.
	dry     bool
	scratch []byte
}

func newEmu() *emu {
	return &emu{next: 1 << 20, sigs: kernelSignatures(), launches: map[string]int{}}
}

// region returns the n bytes at p, panicking unless they lie within one allocation.
func (e *emu) region(p cuda.Ptr, n int) []byte {
	i := sort.Search(len(e.allocs), func(i int) bool { return e.allocs[i].base > p }) - 1
	if i < 0 || n < 0 || p+cuda.Ptr(n) > e.allocs[i].base+cuda.Ptr(e.allocs[i].bytes) {
		panic(fmt.Sprintf("emu: %d bytes at %#x are not within an allocation", n, uint64(p)))
	}
	a := e.allocs[i]
	if n == 0 {
		return nil
	}
	if e.dry {
		if len(e.scratch) < n {
			e.scratch = make([]byte, n)
		}
		return e.scratch[:n]
	}
	all := unsafe.Slice((*byte)(unsafe.Pointer(&a.words[0])), 8*len(a.words))
	off := int(p - a.base)
	return all[off : off+n]
}

func (e *emu) f32(p cuda.Ptr, n int) []float32 {
	b := e.region(p, 4*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

func (e *emu) i32(p cuda.Ptr, n int) []int32 {
	b := e.region(p, 4*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), n)
}

func (e *emu) f64(p cuda.Ptr, n int) []float64 {
	if p%8 != 0 {
		panic(fmt.Sprintf("emu: double array at %#x, not 8-byte aligned", uint64(p)))
	}
	b := e.region(p, 8*n)
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), n)
}

func (e *emu) alloc(bytes int) (cuda.Ptr, error) {
	if e.failed != nil {
		return 0, e.failed
	}
	a := &emuAlloc{base: e.next, bytes: bytes}
	if !e.dry {
		a.words = make([]uint64, (bytes+7)/8)
	}
	e.next += cuda.Ptr((bytes+255)/256*256 + 256) // a gap: an overrun is never in the next allocation
	e.allocs = append(e.allocs, a)
	return a.base, nil
}

func (e *emu) free(p cuda.Ptr) error {
	for i, a := range e.allocs {
		if a.base == p {
			e.allocs = append(e.allocs[:i], e.allocs[i+1:]...)
			return nil
		}
	}
	panic(fmt.Sprintf("emu: free of %#x, not an allocation", uint64(p)))
}

func (e *emu) upload(dst cuda.Ptr, src []float32) error {
	copy(e.f32(dst, len(src)), src)
	return e.failed
}
func (e *emu) uploadInt32(dst cuda.Ptr, src []int32) error {
	copy(e.i32(dst, len(src)), src)
	return e.failed
}
func (e *emu) download(dst []float32, src cuda.Ptr) error {
	copy(dst, e.f32(src, len(dst)))
	return e.failed
}
func (e *emu) downloadFloat64(dst []float64, src cuda.Ptr) error {
	copy(dst, e.f64(src, len(dst)))
	return e.failed
}
func (e *emu) zero(dst cuda.Ptr, n int) error { clear(e.region(dst, 4*n)); return e.failed }
func (e *emu) copy(dst, src cuda.Ptr, n int) error {
	copy(e.region(dst, 4*n), e.region(src, 4*n))
	return e.failed
}
func (e *emu) close() error            { e.closed = true; return nil }
func (e *emu) do(f func() error) error { return f() }
func (e *emu) sync() error             { return e.failed }
func (e *emu) setTF32(bool) error      { return nil }

// gemm is the row-major product in float64.
func (e *emu) gemm(tA, tB bool, alpha float32, a cuda.Ptr, ar, ac int, b cuda.Ptr, br, bc int, beta float32, c cuda.Ptr) error {
	m, k, n := ar, ac, bc
	if tA {
		m, k = ac, ar
	}
	if tB {
		n = br
	}
	A, B, C := e.f32(a, ar*ac), e.f32(b, br*bc), e.f32(c, m*n)
	if e.dry {
		e.launches["gemm"]++
		return e.failed
	}
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				var x, y float32 // op(A)[i][l] is A[l][i] when transposed
				if tA {
					x = A[l*ac+i]
				} else {
					x = A[i*ac+l]
				}
				if tB {
					y = B[j*bc+l]
				} else {
					y = B[l*bc+j]
				}
				s += float64(x) * float64(y)
			}
			out[i*n+j] = float64(alpha) * s
			if beta != 0 {
				out[i*n+j] += float64(beta) * float64(C[i*n+j])
			}
		}
	}
	for i, v := range out {
		C[i] = float32(v)
	}
	e.launches["gemm"]++
	return e.failed
}

// args reads a launch's arguments by position.
type args []any

func (a args) p(i int) cuda.Ptr { return a[i].(cuda.Ptr) }
func (a args) d(i int) float64  { return a[i].(float64) }
func (a args) i(i int) int {
	switch v := a[i].(type) {
	case int:
		return v
	case int32:
		return int(v)
	case int64:
		return int(v)
	}
	panic(fmt.Sprintf("emu: argument %d is %T, not an integer", i, a[i]))
}

// cover panics unless g is a legal launch of at least need threads.
func cover(name string, g cuda.Grid, need int) {
	if g.Threads <= 0 || g.Threads > 1024 || g.Blocks < 0 || g.Blocks*g.Threads < need {
		panic(fmt.Sprintf("emu: %s: %d blocks of %d threads for %d threads", name, g.Blocks, g.Threads, need))
	}
}

func (e *emu) launch(kernel string, g cuda.Grid, a ...any) error {
	if e.failed != nil {
		return e.failed
	}
	sig, ok := e.sigs[kernel]
	if !ok {
		panic(fmt.Sprintf("emu: no CUDA kernel %s", kernel))
	}
	if len(a) != len(sig) {
		panic(fmt.Sprintf("emu: %s takes %d arguments, launched with %d", kernel, len(sig), len(a)))
	}
	for i, v := range a {
		if k, ok := goKind(v); !ok || k != sig[i] {
			panic(fmt.Sprintf("emu: %s argument %d: %T for a %v parameter", kernel, i, v, sig[i]))
		}
	}
	ref, ok := refs[kernel]
	if !ok {
		panic(fmt.Sprintf("emu: no reference for kernel %s", kernel))
	}
	if e.dry {
		e.launches[kernel]++
		return nil
	}
	if e.fail != nil {
		if err := e.fail(kernel); err != nil {
			e.failed = err
			return err
		}
	}
	ref(e, kernel, g, args(a))
	if e.after != nil {
		e.after(e, kernel, args(a))
	}
	e.launches[kernel]++
	return nil
}

func sigm(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// nlsqValues returns b, d, th = tanh(0.3·o2), E and f of one scalar's raw NLSq parameters, in float64.
func nlsqValues(p []float32) (b, d, th, E, f float64) {
	const r, rt = kernels.NLSqExpRate, kernels.NLSqTanhRate
	o1, o2, o3 := float64(p[1]), float64(p[2]), float64(p[3])
	return math.Exp(r * o1), math.Exp(r * o3), math.Tanh(rt * o2), math.Exp(kernels.NLSqLogA + r*o1 - r*o3), float64(p[4])
}

// simDots returns ‖v‖, v·ex and v·ej in float64.
func simDots(v, ex, ej []float32) (nv, p, q float64) {
	var ss float64
	for i, x := range v {
		ss += float64(x) * float64(x)
		p += float64(x) * float64(ex[i])
		q += float64(x) * float64(ej[i])
	}
	return math.Sqrt(ss), p, q
}

// refs are the float64 references of the kernels, by name; each reads its arguments as the CUDA source declares
// them (the launch has checked their types) and computes in float64 from the float32 inputs, rounding once.
var refs = map[string]func(e *emu, name string, g cuda.Grid, a args){
	"add_n": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(3)
		cover(name, g, n)
		D, A, B := e.f32(a.p(0), n), e.f32(a.p(1), n), e.f32(a.p(2), n)
		for i := range n {
			D[i] = float32(float64(A[i]) + float64(B[i]))
		}
	},
	"mul_n": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(3)
		cover(name, g, n)
		D, A, B := e.f32(a.p(0), n), e.f32(a.p(1), n), e.f32(a.p(2), n)
		for i := range n {
			D[i] = float32(float64(A[i]) * float64(B[i]))
		}
	},
	"relu_grad": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(2)
		cover(name, g, n)
		D, H := e.f32(a.p(0), n), e.f32(a.p(1), n)
		for i, h := range H {
			if h == 0 {
				D[i] = 0
			}
		}
	},
	"col_sums_part": func(e *emu, name string, g cuda.Grid, a args) {
		n, w := a.i(2), a.i(3)
		tiles, chunks := (w+31)/32, max(1, (n+255)/256)
		if g.Threads != 256 || g.Blocks != tiles*chunks {
			panic(fmt.Sprintf("emu: %s: %d blocks of %d threads, want %d of 256", name, g.Blocks, g.Threads, tiles*chunks))
		}
		P, X := e.f32(a.p(0), chunks*w), e.f32(a.p(1), n*w)
		for c := range chunks {
			for j := range w {
				var lanes [8]float32
				for l := range 8 {
					for r := c*256 + l; r < min((c+1)*256, n); r += 8 {
						lanes[l] += X[r*w+j]
					}
				}
				t := lanes[0]
				for _, v := range lanes[1:] {
					t += v
				}
				P[c*w+j] = t
			}
		}
	},
	"col_sums_fin": func(e *emu, name string, g cuda.Grid, a args) {
		chunks, w := a.i(2), a.i(3)
		cover(name, g, w)
		D, P := e.f32(a.p(0), w), e.f32(a.p(1), chunks*w)
		for j := range w {
			s := P[j]
			for c := 1; c < chunks; c++ {
				s += P[c*w+j]
			}
			D[j] = s
		}
	},
	"copy_cols": func(e *emu, name string, g cuda.Grid, a args) {
		dstW, dstOff, srcW, srcOff, n, w, acc := a.i(1), a.i(2), a.i(4), a.i(5), a.i(6), a.i(7), a.i(8)
		cover(name, g, n*w)
		D, S := e.f32(a.p(0), (n-1)*dstW+dstOff+w), e.f32(a.p(3), (n-1)*srcW+srcOff+w)
		for r := range n {
			for j := range w {
				d, s := &D[r*dstW+dstOff+j], S[r*srcW+srcOff+j]
				if acc != 0 {
					*d = float32(float64(*d) + float64(s))
				} else {
					*d = s
				}
			}
		}
	},
	"gather_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, k, w := a.i(3), a.i(4), a.i(5)
		cover(name, g, n*w)
		D, idx := e.f32(a.p(0), n*w), e.i32(a.p(2), n*k)
		for r := range n {
			sum := make([]float64, w)
			for _, t := range idx[r*k : (r+1)*k] {
				if t < 0 {
					continue
				}
				for j, v := range e.f32(a.p(1)+cuda.Ptr(4*int(t)*w), w) {
					sum[j] += float64(v)
				}
			}
			for j, v := range sum {
				D[r*w+j] = float32(v)
			}
		}
	},
	"scatter_add_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, k, w := a.i(3), a.i(4), a.i(5)
		rows := g.Blocks // a block per row of dst
		if g.Threads > 256 || g.Threads <= 0 {
			panic(fmt.Sprintf("emu: %s: %d threads per block, at most 256", name, g.Threads))
		}
		D, S, idx := e.f32(a.p(0), rows*w), e.f32(a.p(1), n*w), e.i32(a.p(2), n*k)
		sum := make([]float64, rows*w)
		for i, v := range D {
			sum[i] = float64(v)
		}
		for q, t := range idx {
			if t < 0 {
				continue
			}
			if int(t) >= rows {
				panic(fmt.Sprintf("emu: %s: index %d, dst has %d rows", name, t, rows))
			}
			r := q / k
			for j := range w {
				sum[int(t)*w+j] += float64(S[r*w+j])
			}
		}
		for i, v := range sum {
			D[i] = float32(v)
		}
	},
	"bias_act": func(e *emu, name string, g cuda.Grid, a args) {
		n, w, relu := a.i(2), a.i(3), a.i(4)
		cover(name, g, n*w)
		Y, B := e.f32(a.p(0), n*w), e.f32(a.p(1), w)
		for i := range Y {
			v := float32(float64(Y[i]) + float64(B[i%w]))
			if relu != 0 && v < 0 {
				v = 0
			}
			Y[i] = v
		}
	},
	"lstm_cell_step": func(e *emu, name string, g cuda.Grid, a args) {
		perRow, B, H := a.i(2), a.i(7), a.i(8)
		cover(name, g, B*H)
		brows := 1
		if perRow != 0 {
			brows = B
		}
		act, bias := e.f32(a.p(0), B*4*H), e.f32(a.p(1), brows*4*H)
		cp, c, tc, h := e.f32(a.p(3), B*H), e.f32(a.p(4), B*H), e.f32(a.p(5), B*H), e.f32(a.p(6), B*H)
		for b := range B {
			br := bias[perRow*b*4*H:]
			ga := act[b*4*H:]
			for u := range H {
				pre := func(q int) float64 { return float64(ga[q*H+u]) + float64(br[q*H+u]) }
				i, f, gg, o := sigm(pre(0)), sigm(pre(1)), math.Tanh(pre(2)), sigm(pre(3))
				ga[u], ga[H+u], ga[2*H+u], ga[3*H+u] = float32(i), float32(f), float32(gg), float32(o)
				k := b*H + u
				cn := f*float64(cp[k]) + i*gg // cp before c: they may alias
				c[k], tc[k], h[k] = float32(cn), float32(math.Tanh(cn)), float32(o*math.Tanh(cn))
			}
		}
	},
	"lstm_cell_bwd": func(e *emu, name string, g cuda.Grid, a args) {
		B, H := a.i(7), a.i(8)
		cover(name, g, B*H)
		dg, act := e.f32(a.p(0), B*4*H), e.f32(a.p(1), B*4*H)
		tc, cp, dout, dh, dc := e.f32(a.p(2), B*H), e.f32(a.p(3), B*H), e.f32(a.p(4), B*H), e.f32(a.p(5), B*H), e.f32(a.p(6), B*H)
		for b := range B {
			for u := range H {
				r, k := b*4*H, b*H+u
				i, f, gg, o := float64(act[r+u]), float64(act[r+H+u]), float64(act[r+2*H+u]), float64(act[r+3*H+u])
				t := float64(tc[k])
				dht := float64(dout[k]) + float64(dh[k])
				d := dht*o*(1-t*t) + float64(dc[k])
				dg[r+u] = float32(d * gg * i * (1 - i))
				dg[r+H+u] = float32(d * float64(cp[k]) * f * (1 - f))
				dg[r+2*H+u] = float32(d * i * (1 - gg*gg))
				dg[r+3*H+u] = float32(dht * t * o * (1 - o))
				dc[k] = float32(d * f)
			}
		}
	},
	"nlsq_fwd": func(e *emu, name string, g cuda.Grid, a args) {
		n, half := a.i(3), a.i(4)
		cover(name, g, n)
		out, o, w := e.f32(a.p(0), n*(half+1)), e.f32(a.p(1), n*half*5), e.f32(a.p(2), n*half)
		for r := range n {
			var ld float64
			for i := range half {
				k := r*half + i
				b, d, th, E, f := nlsqValues(o[k*5:])
				x := float64(w[k])
				s := d*x + f
				den := 1 + s*s
				out[r*(half+1)+i] = float32(float64(o[k*5]) + b*x + th*E/den)
				ld += math.Log(b - 2*th*E*d*s/(den*den))
			}
			out[r*(half+1)+half] = float32(ld)
		}
	},
	"nlsq_bwd": func(e *emu, name string, g cuda.Grid, a args) {
		n, half := a.i(5), a.i(6)
		cover(name, g, n)
		dO, dw, o := e.f32(a.p(0), n*half*5), e.f32(a.p(1), n*half), e.f32(a.p(2), n*half*5)
		w, dOut := e.f32(a.p(3), n*half), e.f32(a.p(4), n*(half+1))
		for r := range n {
			dl := float64(dOut[r*(half+1)+half])
			for i := range half {
				k := r*half + i
				b, d, th, E, f := nlsqValues(o[k*5:])
				du := float64(dOut[r*(half+1)+i])
				d1, d2, d3, d4, dx := kernels.NLSqGrad(b, d, th, E, f, float64(w[k]), du, dl)
				dO[k*5], dO[k*5+1], dO[k*5+2], dO[k*5+3], dO[k*5+4] = float32(du), float32(d1), float32(d2), float32(d3), float32(d4)
				dw[k] = float32(dx)
			}
		}
	},
	"affine_fwd_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, half := a.i(3), a.i(4)
		cover(name, g, n)
		out, o, w := e.f32(a.p(0), n*(half+1)), e.f32(a.p(1), n*half*2), e.f32(a.p(2), n*half)
		for r := range n {
			var ld float64
			for i := range half {
				k := r*half + i
				s := 0.5 * float64(o[2*k+1])
				out[r*(half+1)+i] = float32(float64(o[2*k]) + math.Exp(s)*float64(w[k]))
				ld += s
			}
			out[r*(half+1)+half] = float32(ld)
		}
	},
	"affine_bwd_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, half := a.i(5), a.i(6)
		cover(name, g, n*half)
		dO, dw, o := e.f32(a.p(0), n*half*2), e.f32(a.p(1), n*half), e.f32(a.p(2), n*half*2)
		w, dOut := e.f32(a.p(3), n*half), e.f32(a.p(4), n*(half+1))
		for r := range n {
			dl := float64(dOut[r*(half+1)+half])
			for i := range half {
				k := r*half + i
				ex, du := math.Exp(0.5*float64(o[2*k+1])), float64(dOut[r*(half+1)+i])
				dO[2*k], dO[2*k+1] = float32(du), float32(du*0.5*ex*float64(w[k])+0.5*dl)
				dw[k] = float32(du * ex)
			}
		}
	},
	"normalize_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, w := a.i(2), a.i(3)
		cover(name, g, n)
		D, S := e.f32(a.p(0), n*w), e.f32(a.p(1), n*w)
		for r := range n {
			var ss float64
			for _, v := range S[r*w : (r+1)*w] {
				ss += float64(v) * float64(v)
			}
			for j := range w {
				if ss == 0 {
					D[r*w+j] = 0
				} else {
					D[r*w+j] = float32(float64(S[r*w+j]) / math.Sqrt(ss))
				}
			}
		}
	},
	"normalize_rows_grad": func(e *emu, name string, g cuda.Grid, a args) {
		n, w := a.i(3), a.i(4)
		cover(name, g, n)
		DX, DY, X := e.f32(a.p(0), n*w), e.f32(a.p(1), n*w), e.f32(a.p(2), n*w)
		row := make([]float32, w)
		for r := range n {
			var ss, xd float64
			for j, v := range X[r*w : (r+1)*w] {
				ss += float64(v) * float64(v)
				xd += float64(v) * float64(DY[r*w+j])
			}
			for j, v := range X[r*w : (r+1)*w] {
				row[j] = 0
				if ss != 0 {
					row[j] = float32((float64(DY[r*w+j]) - float64(v)*xd/ss) / math.Sqrt(ss))
				}
			}
			copy(DX[r*w:], row) // dx may alias dy
		}
	},
	"similarity": func(e *emu, name string, g cuda.Grid, a args) {
		n, f := a.i(4), a.i(5)
		cover(name, g, n)
		sim, v, ex, ej := e.f32(a.p(0), n), e.f32(a.p(1), n*f), e.f32(a.p(2), n*f), e.f32(a.p(3), n*f)
		for r := range n {
			nv, p, q := simDots(v[r*f:(r+1)*f], ex[r*f:(r+1)*f], ej[r*f:(r+1)*f])
			sim[r] = float32(1 - p/nv + math.Max(0, q/nv))
		}
	},
	"similarity_grad": func(e *emu, name string, g cuda.Grid, a args) {
		n, f := a.i(7), a.i(8)
		cover(name, g, n)
		dex, dej, dv := e.f32(a.p(0), n*f), e.f32(a.p(1), n*f), e.f32(a.p(2), n*f)
		v, ex, ej, coef := e.f32(a.p(3), n*f), e.f32(a.p(4), n*f), e.f32(a.p(5), n*f), e.f32(a.p(6), n)
		gx, gj := make([]float32, f), make([]float32, f)
		for r := range n {
			o := r * f
			nv, p, q := simDots(v[o:o+f], ex[o:o+f], ej[o:o+f])
			c := float64(coef[r])
			for i := range f {
				vh := float64(v[o+i]) / nv
				gv := -(float64(ex[o+i]) - p/nv*vh) / nv
				jj := 0.0
				if q > 0 {
					gv += (float64(ej[o+i]) - q/nv*vh) / nv
					jj = vh
				}
				gx[i], gj[i] = float32(float64(dv[o+i])+c*(gv-vh)), float32(c*jj)
			}
			copy(dex[o:], gx) // dex may alias dv
			copy(dej[o:], gj)
		}
	},
	"gauss_nll": func(e *emu, name string, g cuda.Grid, a args) {
		n, f, c := a.i(3), a.i(4), a.d(5)
		cover(name, g, n)
		nll, y, ld := e.f32(a.p(0), n), e.f32(a.p(1), n*f), e.f32(a.p(2), n)
		for r := range n {
			var ss float64
			for _, v := range y[r*f : (r+1)*f] {
				ss += float64(v) * float64(v)
			}
			nll[r] = float32(0.5*ss + c - float64(ld[r]))
		}
	},
	"scale_rows": func(e *emu, name string, g cuda.Grid, a args) {
		n, f := a.i(3), a.i(4)
		cover(name, g, n*f)
		D, X, S := e.f32(a.p(0), n*f), e.f32(a.p(1), n*f), e.f32(a.p(2), n)
		for i := range n * f {
			D[i] = float32(float64(S[i/f]) * float64(X[i]))
		}
	},
	"sum_squares_part": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(2)
		if g.Threads != 256 || g.Blocks < 1 {
			panic(fmt.Sprintf("emu: %s: %d blocks of %d threads, want blocks of 256", name, g.Blocks, g.Threads))
		}
		part, x := e.f64(a.p(0), g.Blocks), e.f32(a.p(1), n)
		clear(part)
		for i, v := range x { // entry i falls to block (i/256) mod G
			part[(i/256)%g.Blocks] += float64(v) * float64(v)
		}
	},
	"sum_part_add": func(e *emu, name string, g cuda.Grid, a args) {
		m := a.i(2)
		if g.Threads != 256 || g.Blocks != 1 {
			panic(fmt.Sprintf("emu: %s: %d blocks of %d threads, want one of 256", name, g.Blocks, g.Threads))
		}
		out, part := e.f64(a.p(0), 1), e.f64(a.p(1), m)
		var s float64
		for _, v := range part {
			s += v
		}
		out[0] += s
	},
	"adam_clipped": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(4)
		cover(name, g, n)
		lossSlot, sqSlot := a.i(6), a.i(7)
		acc := e.f64(a.p(5), max(lossSlot, sqSlot)+1)
		if !step.Finite(acc[lossSlot], acc[sqSlot]) {
			return
		}
		c := kernels.AdamCoeffs{Scale: step.ClipScale(acc[sqSlot], a.d(8)), Beta1: a.d(9), Beta2: a.d(10), StepSize: a.d(11), BC2Sqrt: a.d(12), Eps: a.d(13)}
		adamRef(e.f32(a.p(0), n), e.f32(a.p(1), n), e.f32(a.p(2), n), e.f32(a.p(3), n), c)
	},
	"batch_layout": func(e *emu, name string, g cuda.Grid, a args) {
		B, T, maxT, real := a.i(6), a.i(7), a.i(8), a.i(9)
		N := T * B
		cover(name, g, max(N, B*2*maxT))
		step.LayoutTo(e.f32(a.p(0), N), e.f32(a.p(1), N), e.f32(a.p(2), N), e.i32(a.p(3), 2*(T-1)*B), e.f32(a.p(4), B*2*maxT),
			e.i32(a.p(5), B), T, maxT, real, a[10].(float32))
	},
	"draw_negatives": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(3)
		cover(name, g, n)
		step.NegativesTo(e.i32(a.p(0), n), e.i32(a.p(1), n), e.f32(a.p(2), n), a.i(4), kernels.KeyOf(uint64(a[5].(int64))))
	},
	"draw_noise": func(e *emu, name string, g cuda.Grid, a args) {
		n, F, V := a.i(4), a.i(5), a.i(6)
		cover(name, g, n)
		rej := step.NoiseTo(e.f32(a.p(0), n*F), e.i32(a.p(1), n), e.f32(a.p(2), n), e.f32(a.p(3), V*F), F, a.d(7), a.i(8),
			kernels.KeyOf(uint64(a[9].(int64))))
		e.f64(a.p(10), a.i(11)+1)[a.i(11)] += float64(rej)
	},
	"draw_dropout": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(1)
		cover(name, g, (n+3)/4)
		m := e.f32(a.p(0), n)
		step.DropoutTo(m, a.d(2), kernels.KeyOf(uint64(a[4].(int64))), a.i(5))
		if keep := a[3].(float32); n > 0 && keep != step.DropoutScale(a.d(2)) {
			panic(fmt.Sprintf("emu: %s: kept value %g for rate %g", name, keep, a.d(2)))
		}
	},
	"sum_loss": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(5)
		if g.Threads != 256 || g.Blocks != 1 {
			panic(fmt.Sprintf("emu: %s: %d blocks of %d threads, want one of 256", name, g.Blocks, g.Threads))
		}
		l, ns, ss, rows := step.LossSums(e.f32(a.p(2), n), e.f32(a.p(3), n), e.f32(a.p(4), n), a.d(6))
		s := e.f64(a.p(0), a.i(1)+4)[a.i(1):]
		s[0] += l
		s[1] += ns
		s[2] += ss
		s[3] += rows
	},
	"adam_update": func(e *emu, name string, g cuda.Grid, a args) {
		n := a.i(4)
		cover(name, g, n)
		scale, b1, b2, stepSize, bc2, eps := a.d(5), a.d(6), a.d(7), a.d(8), a.d(9), a.d(10)
		adamRef(e.f32(a.p(0), n), e.f32(a.p(1), n), e.f32(a.p(2), n), e.f32(a.p(3), n),
			kernels.AdamCoeffs{Scale: scale, Beta1: b1, Beta2: b2, StepSize: stepSize, BC2Sqrt: bc2, Eps: eps})
	},
}

// adamRef is one Adam update in float64 on float32 storage (kernels.AdamUpdate's formula).
func adamRef(P, G, M, V []float32, c kernels.AdamCoeffs) {
	for i := range P {
		gi := float64(G[i]) * c.Scale
		M[i] = float32(c.Beta1*float64(M[i]) + (1-c.Beta1)*gi)
		V[i] = float32(c.Beta2*float64(V[i]) + (1-c.Beta2)*gi*gi)
		P[i] = float32(float64(P[i]) - c.StepSize*float64(M[i])/(math.Sqrt(float64(V[i]))/c.BC2Sqrt+c.Eps))
	}
}
