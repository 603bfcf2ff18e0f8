package model

import "github.com/nfbo/nfbo/kernels"

// matrix is a weight matrix of the flow, in×out row-major, as its products
// use it: packed once for kernels.MulPackedTo where the assembly
// micro-kernel runs (kernels.PackedAccelerated), else handed to
// kernels.MulAddTo (the BLAS). Encoding and decoding multiply by every
// matrix T times a call, in blocks of up to a chunk's rows.
type matrix struct {
	w       []float32
	in, out int
	p       *kernels.Packed // nil where the BLAS runs the products
}

// newMatrix returns w (in×out) ready for products; w is not copied, so it
// must not change while the matrix is in use.
func newMatrix(w []float32, in, out int) matrix {
	m := matrix{w: w[:in*out], in: in, out: out}
	if kernels.PackedAccelerated() {
		m.p = new(kernels.Packed)
		m.p.Pack(m.w, out, in, out, false)
	}
	return m
}

// mulAdd computes dst += x·w for x n×in and dst n×out.
func (m *matrix) mulAdd(dst, x []float32, n int) {
	if m.p == nil {
		kernels.MulAddTo(dst, x, m.w, n, m.in, m.out)
		return
	}
	kernels.MulPackedTo(dst, m.out, x, m.in, n, m.p, true)
}

// dense computes dst = x·w + b (b of length out) for x n×in and dst n×out.
func (m *matrix) dense(dst, x, b []float32, n int) {
	for i := range n {
		copy(dst[i*m.out:(i+1)*m.out], b[:m.out])
	}
	m.mulAdd(dst, x, n)
}
