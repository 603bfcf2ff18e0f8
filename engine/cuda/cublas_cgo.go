//go:build cgo

package cuda

/*
#include <stdlib.h>

typedef int cublasStatus_t;

static cublasStatus_t nfbo_cublasCreate(void* f, void** h) { return ((cublasStatus_t (*)(void**))f)(h); }
static cublasStatus_t nfbo_cublasDestroy(void* f, void* h) { return ((cublasStatus_t (*)(void*))f)(h); }
static cublasStatus_t nfbo_cublasGetVersion(void* f, void* h, int* v) { return ((cublasStatus_t (*)(void*, int*))f)(h, v); }
static cublasStatus_t nfbo_cublasSetMathMode(void* f, void* h, int mode) { return ((cublasStatus_t (*)(void*, int))f)(h, mode); }
static const char* nfbo_cublasGetStatusString(void* f, cublasStatus_t s) { return ((const char* (*)(cublasStatus_t))f)(s); }

typedef cublasStatus_t (*pfn_cublasSgemm)(void*, int, int, int, int, int, const float*, const float*, int,
	const float*, int, const float*, float*, int);

// Host alpha and beta (the default pointer mode): read before the call returns.
static cublasStatus_t nfbo_cublasSgemm(void* f, void* h, int ta, int tb, int m, int n, int k, float alpha,
	unsigned long long A, int lda, unsigned long long B, int ldb, float beta, unsigned long long C, int ldc) {
	return ((pfn_cublasSgemm)f)(h, ta, tb, m, n, k, &alpha, (const float*)A, lda, (const float*)B, ldb, &beta,
		(float*)C, ldc);
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"unsafe"
)

// cublasSonames are the cuBLAS libraries accepted, newest first; cuBLASLt comes from the same folder.
var cublasSonames = []string{"libcublas.so.13", "libcublas.so.12"}

// cublasMathPedantic is CUBLAS_PEDANTIC_MATH: no TF32 or other reduced-precision shortcuts, for the parity
// with the CPU that exact reconstruction needs; cublasMathTF32 is CUBLAS_TF32_TENSOR_OP_MATH, float32 products on
// the tensor cores with 10-bit mantissas (SetTF32, an option measured for accuracy, off by default).
const (
	cublasMathPedantic = 2
	cublasMathTF32     = 3
)

// BLAS is a cuBLAS handle bound to a Device's context, in pedantic (full float32) math.
type BLAS struct {
	d       *Device
	lib     *library
	h       unsafe.Pointer
	Version int
	Path    string

	create, destroy, version, mathMode, statusString, sgemm unsafe.Pointer
}

// OpenBLAS loads cuBLAS (libcublas.so.13 or .12, with libcublasLt from the same folder loaded first, globally)
// from env's search and creates a handle on the device goroutine.
func (d *Device) OpenBLAS(env Env) (*BLAS, error) {
	lib, err := openFirst("cuBLAS", cublasSonames, SearchDirs(env), func(dir string) {
		if lts, _ := filepath.Glob(filepath.Join(dir, "libcublasLt.so.1[23]")); len(lts) > 0 {
			dlopen(lts[0], true)
		}
	})
	if err != nil {
		return nil, err
	}
	b := &BLAS{d: d, lib: lib, Path: lib.path}
	for _, s := range []struct {
		name string
		dst  *unsafe.Pointer
	}{{"cublasCreate_v2", &b.create}, {"cublasDestroy_v2", &b.destroy}, {"cublasGetVersion_v2", &b.version},
		{"cublasSetMathMode", &b.mathMode}, {"cublasGetStatusString", &b.statusString}, {"cublasSgemm_v2", &b.sgemm}} {
		if *s.dst, err = lib.sym(s.name); err != nil {
			return nil, err
		}
	}
	err = d.do(func() error {
		if err := b.check("cublasCreate_v2", C.nfbo_cublasCreate(b.create, &b.h)); err != nil {
			return err
		}
		var v C.int
		if err := b.check("cublasGetVersion_v2", C.nfbo_cublasGetVersion(b.version, b.h, &v)); err != nil {
			return err
		}
		b.Version = int(v)
		return b.check("cublasSetMathMode", C.nfbo_cublasSetMathMode(b.mathMode, b.h, cublasMathPedantic))
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *BLAS) check(call string, s C.cublasStatus_t) error {
	if s == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (%d)", call, C.GoString(C.nfbo_cublasGetStatusString(b.statusString, s)), int(s))
}

// SetTF32 lets the products use TF32 tensor cores (on) or keeps them in full float32 (off, the default).
func (b *BLAS) SetTF32(on bool) error {
	mode := C.int(cublasMathPedantic)
	if on {
		mode = cublasMathTF32
	}
	return b.d.do(func() error { return b.check("cublasSetMathMode", C.nfbo_cublasSetMathMode(b.mathMode, b.h, mode)) })
}

// Close destroys the handle.
func (b *BLAS) Close() error {
	return b.d.do(func() error { return b.check("cublasDestroy_v2", C.nfbo_cublasDestroy(b.destroy, b.h)) })
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32 matrices on the device, with the shapes
// of engine/train's gemm: A is ar×ac, B is br×bc, op transposes when tA or tB is set, C is m×n. cuBLAS is
// column-major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ on the same memory: the operands swap, m and n swap, and
// nothing is copied.
func (b *BLAS) Gemm(tA, tB bool, alpha float32, A Ptr, ar, ac int, B Ptr, br, bc int, beta float32, Cm Ptr) error {
	return b.d.do(func() error { return b.gemm(tA, tB, alpha, A, ar, ac, B, br, bc, beta, Cm) })
}

// gemm is Gemm on the device goroutine; cuBLAS queues the product on the default stream and returns.
func (b *BLAS) gemm(tA, tB bool, alpha float32, A Ptr, ar, ac int, B Ptr, br, bc int, beta float32, Cm Ptr) error {
	m, k := ar, ac
	if tA {
		m, k = ac, ar
	}
	n, kb := bc, br
	if tB {
		n, kb = br, bc
	}
	if k != kb {
		return fmt.Errorf("cuda: Gemm: inner dimensions %d and %d differ", k, kb)
	}
	op := func(t bool) C.int {
		if t {
			return 1 // CUBLAS_OP_T
		}
		return 0
	}
	return b.check("cublasSgemm_v2", C.nfbo_cublasSgemm(b.sgemm, b.h, op(tB), op(tA), C.int(n), C.int(m), C.int(k),
		C.float(alpha), C.ulonglong(B), C.int(bc), C.ulonglong(A), C.int(ac), C.float(beta), C.ulonglong(Cm), C.int(n)))
}
