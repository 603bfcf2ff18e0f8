package gpustep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/engine/step"
	"github.com/nfbo/nfbo/kernels"
)

// backend is what the Device needs of a GPU: memory in bytes, copies, the row-major GEMM of engine/cuda.BLAS and
// a kernel launch by name with engine/cuda's argument rules (Ptr for pointers, int for int, int64 for long,
// float32, float64). engine/cuda's is the one Open uses; the tests' emulator is the other.
type backend interface {
	alloc(bytes int) (cuda.Ptr, error)
	free(p cuda.Ptr) error
	upload(dst cuda.Ptr, src []float32) error
	uploadInt32(dst cuda.Ptr, src []int32) error
	download(dst []float32, src cuda.Ptr) error
	downloadFloat64(dst []float64, src cuda.Ptr) error
	// zero sets n 4-byte words to 0; copy copies n 4-byte words (no overlap).
	zero(dst cuda.Ptr, n int) error
	copy(dst, src cuda.Ptr, n int) error
	gemm(tA, tB bool, alpha float32, a cuda.Ptr, ar, ac int, b cuda.Ptr, br, bc int, beta float32, c cuda.Ptr) error
	launch(kernel string, g cuda.Grid, args ...any) error
	// do runs f, every call inside it made from the thread that owns the GPU (one crossing).
	do(f func() error) error
	// sync waits for every call queued (the profile's phases).
	sync() error
	// setTF32 switches the products between full float32 and TF32 tensor cores.
	setTF32(on bool) error
	close() error
}

// kernelNames are the kernels the Device launches; Open checks that the compiled sources define each one.
var kernelNames = []string{
	"add_n", "mul_n", "relu_grad", "col_sums_part", "col_sums_fin", "copy_cols", "gather_rows", "scatter_add_rows", "bias_act",
	"lstm_cell_step", "lstm_cell_bwd", "nlsq_fwd", "nlsq_bwd", "affine_fwd_rows", "affine_bwd_rows",
	"normalize_rows", "normalize_rows_grad", "similarity", "similarity_grad", "gauss_nll", "scale_rows",
	"sum_squares_part", "sum_part_add", "adam_update", "adam_clipped",
	"batch_layout", "draw_negatives", "draw_noise", "draw_dropout", "sum_loss",
}

// Launch shapes. threads is the block size of the element-wise kernels; rowThreads that of the kernels with a
// thread per row, which loop over a row (fewer threads per block keep more blocks in flight for small n).
const (
	threads    = 256
	rowThreads = 128
	// scatterThreads is scatter_add_rows's largest block (NFBO_SCATTER_THREADS in train.cu).
	scatterThreads = 256
	// colSumRows and colSumLanes are col_sums_part's rows per chunk and row lanes per block
	// (NFBO_COLSUM_ROWS, NFBO_COLSUM_LANES in train.cu).
	colSumRows  = 256
	colSumLanes = 8
	// normThreads is the norm's block size (NFBO_NORM_THREADS in train.cu); normBlocks its most blocks, and
	// normPerThread the entries each thread sums at least before a block is added.
	normThreads   = 256
	normBlocks    = 1024
	normPerThread = 8
)

// Counts are what a Device has asked of the GPU: bytes copied each way, the calls that made the host wait for
// the GPU (downloads: a step's one read of its sums), the work queued on the GPU (kernels, cuBLAS products,
// fills and device-to-device copies) and the allocations. They are counted where the Device calls its backend,
// so the emulator's counts are the GPU's; their differences over a step are the step's cost
// (BENCHMARKS.md "GPU training step: what a step asks of the host").
type Counts struct {
	H2D, D2H                int64 // bytes
	Syncs, Launches, Allocs int64
}

// Sub returns c − o, field by field: the counts between two readings.
func (c Counts) Sub(o Counts) Counts {
	return Counts{H2D: c.H2D - o.H2D, D2H: c.D2H - o.D2H, Syncs: c.Syncs - o.Syncs, Launches: c.Launches - o.Launches,
		Allocs: c.Allocs - o.Allocs}
}

// String formats c as the counting test and nfbo pretrain -profile print it.
func (c Counts) String() string {
	return fmt.Sprintf("h2d=%d d2h=%d syncs=%d launches=%d allocs=%d", c.H2D, c.D2H, c.Syncs, c.Launches, c.Allocs)
}

// Device is the training step's Device on a GPU (see the package doc). Its methods must be called from one
// goroutine at a time, as engine/step does.
type Device struct {
	b       backend
	info    cuda.DeviceInfo
	err     error
	live    map[cuda.Ptr]bool // allocations not yet freed, freed by Close
	part    cuda.Ptr          // the norm's normBlocks partial sums (float64)
	normAc  step.Acc          // Norm's accumulator
	colPart step.Buf          // ColSums's partial sums, grown as needed
	norm    []float64
	counts  Counts
	prof    profile
}

// profile is the time the GPU spends in each phase of a step, measured by waiting at each phase's end: slower
// than a step without it, so only with SetProfile (nfbo pretrain -profile).
type profile struct {
	on     bool
	mark   time.Time
	phases []Phase
}

// Phase is the GPU time of one phase of the training step, summed over the steps since SetProfile.
type Phase struct {
	Name  string
	Time  time.Duration
	Count int
}

var _ step.Device = (*Device)(nil)

// newDevice returns a Device on b, allocating the norm's scratch.
func newDevice(b backend, info cuda.DeviceInfo) (*Device, error) {
	d := &Device{b: b, info: info, live: map[cuda.Ptr]bool{}, norm: make([]float64, 1)}
	p, err := b.alloc(8 * (normBlocks + 1))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("gpustep: %w", err), b.close())
	}
	d.part = p
	d.normAc = d.AllocAcc(1)
	return d, nil
}

// Do runs f, whose calls of the Device reach the GPU from the thread that owns it without a goroutine hop each:
// engine/train submits a training step so. The Device's methods must not be called from another goroutine
// meanwhile.
func (d *Device) Do(f func() error) error { return d.b.do(f) }

// SetTF32 lets cuBLAS's products use TF32 tensor cores (on) or keeps them in full float32 (off, the default:
// the CPU's parity and exact reconstruction need it). TF32 is an option measured for accuracy
// (TestGPUStepTF32, nfbo pretrain -tf32).
func (d *Device) SetTF32(on bool) error {
	if err := d.b.setTF32(on); err != nil {
		return fmt.Errorf("gpustep: %w", err)
	}
	return nil
}

// SetProfile turns the per-phase timing of Phase on or off and clears what it has summed. Its waits are not
// counted in Counts.
func (d *Device) SetProfile(on bool) { d.prof = profile{on: on, mark: time.Now()} }

// Phase ends the step's phase name (engine/step calls it; "" starts a step): with SetProfile on it waits for the
// GPU and adds the time since the last mark to the phase, otherwise it does nothing.
func (d *Device) Phase(name string) {
	p := &d.prof
	if !p.on {
		return
	}
	d.run(d.b.sync)
	now := time.Now()
	if name != "" {
		i := slices.IndexFunc(p.phases, func(ph Phase) bool { return ph.Name == name })
		if i < 0 {
			p.phases = append(p.phases, Phase{Name: name})
			i = len(p.phases) - 1
		}
		p.phases[i].Time += now.Sub(p.mark)
		p.phases[i].Count++
	}
	p.mark = now
}

// Phases returns the phases' times summed since SetProfile, in the order the step ran them.
func (d *Device) Phases() []Phase { return slices.Clone(d.prof.phases) }

// ownBuffers returns the number of live buffers the Device allocated for itself (Norm's accumulator, ColSums's
// scratch), which it frees on Close.
func (d *Device) ownBuffers() int {
	if d.colPart.Len() > 0 {
		return 2
	}
	return 1
}

// Counts returns what the Device has asked of the GPU since it was opened.
func (d *Device) Counts() Counts { return d.counts }

// Info describes the GPU.
func (d *Device) Info() cuda.DeviceInfo { return d.info }

// Close frees every buffer not yet freed and releases the GPU. Steps made on the Device must not be used after.
func (d *Device) Close() error {
	var errs []error
	for p := range d.live {
		errs = append(errs, d.b.free(p))
	}
	clear(d.live)
	errs = append(errs, d.b.free(d.part), d.b.close())
	return errors.Join(errs...)
}

// fail keeps the first error.
func (d *Device) fail(err error) {
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("gpustep: %w", err)
	}
}

// run runs f unless an earlier call failed.
func (d *Device) run(f func() error) {
	if d.err == nil {
		d.fail(f())
	}
}

// launch launches kernel unless an earlier call failed; a launch of no threads does nothing.
func (d *Device) launch(kernel string, g cuda.Grid, args ...any) {
	if g.Blocks == 0 {
		return
	}
	d.counts.Launches++
	d.run(func() error { return d.b.launch(kernel, g, args...) })
}

// view is a step.Buf or step.IntBuf: both hold 4-byte elements.
type view interface {
	Len() int
	Mem() any
	Off() int
}

// at returns the device address of b's view, panicking with the method and argument names when b holds fewer
// than n elements or is not a buffer of a GPU Device.
func at[B view](fn, name string, b B, n int) cuda.Ptr {
	if b.Len() < n {
		panic(fmt.Sprintf("gpustep: Device.%s: %s has %d elements, want at least %d", fn, name, b.Len(), n))
	}
	p, ok := b.Mem().(cuda.Ptr)
	if !ok {
		panic(fmt.Sprintf("gpustep: Device.%s: %s is not a GPU buffer (%T)", fn, name, b.Mem()))
	}
	return p + cuda.Ptr(4*b.Off())
}

// flag is a C int for a bool.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// alloc returns n zeroed 4-byte words (at least one, so every buffer has an address of its own).
func (d *Device) alloc(n int) cuda.Ptr {
	if n < 0 {
		panic(fmt.Sprintf("gpustep: Device.Alloc(%d)", n))
	}
	if d.err != nil {
		return 0
	}
	p, err := d.b.alloc(4 * max(1, n))
	d.counts.Allocs++
	if err != nil {
		d.fail(fmt.Errorf("allocating %d bytes: %w", 4*max(1, n), err))
		return 0
	}
	d.live[p] = true
	d.counts.Launches++
	d.run(func() error { return d.b.zero(p, max(1, n)) })
	return p
}

// Alloc returns a new buffer of n zeros in device memory.
func (d *Device) Alloc(n int) step.Buf { return step.NewBuf(d.alloc(n), n) }

// AllocInt returns a new buffer of n int32 zeros.
func (d *Device) AllocInt(n int) step.IntBuf { return step.NewIntBuf(d.alloc(n), n) }

// free releases the allocation p.
func (d *Device) free(fn string, p cuda.Ptr) {
	if p == 0 { // allocated after a failure
		return
	}
	if !d.live[p] {
		panic(fmt.Sprintf("gpustep: Device.%s: %#x is not a live allocation of this Device", fn, uint64(p)))
	}
	delete(d.live, p)
	d.run(func() error { return d.b.free(p) })
}

// Free releases b's whole allocation.
func (d *Device) Free(b step.Buf) { d.free("Free", at("Free", "b", b, 0)-cuda.Ptr(4*b.Off())) }

// FreeInt releases b's whole allocation.
func (d *Device) FreeInt(b step.IntBuf) {
	d.free("FreeInt", at("FreeInt", "b", b, 0)-cuda.Ptr(4*b.Off()))
}

// Upload copies src into dst.
func (d *Device) Upload(dst step.Buf, src []float32) {
	p := at("Upload", "dst", dst, len(src))
	d.counts.H2D += 4 * int64(len(src))
	d.run(func() error { return d.b.upload(p, src) })
}

// UploadInt copies src into dst.
func (d *Device) UploadInt(dst step.IntBuf, src []int32) {
	p := at("UploadInt", "dst", dst, len(src))
	d.counts.H2D += 4 * int64(len(src))
	d.run(func() error { return d.b.uploadInt32(p, src) })
}

// Download copies src into dst and returns the Device's error, if any call has failed.
func (d *Device) Download(dst []float32, src step.Buf) error {
	p := at("Download", "src", src, len(dst))
	d.counts.D2H += 4 * int64(len(dst))
	d.counts.Syncs++
	d.run(func() error { return d.b.download(dst, p) })
	return d.err
}

// Zero sets dst to zeros.
func (d *Device) Zero(dst step.Buf) {
	p := at("Zero", "dst", dst, dst.Len())
	d.counts.Launches++
	d.run(func() error { return d.b.zero(p, dst.Len()) })
}

// Copy copies src into dst (equal lengths, no overlap).
func (d *Device) Copy(dst, src step.Buf) {
	if dst.Len() != src.Len() {
		panic(fmt.Sprintf("gpustep: Device.Copy: %d elements into %d", src.Len(), dst.Len()))
	}
	q, p := at("Copy", "dst", dst, dst.Len()), at("Copy", "src", src, src.Len())
	d.counts.Launches++
	d.run(func() error { return d.b.copy(q, p, dst.Len()) })
}

// Gemm sets c = alpha·op(a)·op(b) + beta·c through cuBLAS.
func (d *Device) Gemm(tA, tB bool, alpha float32, a step.Buf, ar, ac int, b step.Buf, br, bc int, beta float32, c step.Buf) {
	m, n, k, ok := step.GemmShape(tA, tB, ar, ac, br, bc)
	if !ok {
		panic(fmt.Sprintf("gpustep: Device.Gemm: a %d×%d (transposed %t) times b %d×%d (transposed %t)", ar, ac, tA, br, bc, tB))
	}
	pa, pb, pc := at("Gemm", "a", a, ar*ac), at("Gemm", "b", b, br*bc), at("Gemm", "c", c, m*n)
	switch {
	case m == 0 || n == 0:
	case k == 0 && beta == 0:
		d.counts.Launches++
		d.run(func() error { return d.b.zero(pc, m*n) })
	case k == 0 && beta != 1:
		panic(fmt.Sprintf("gpustep: Device.Gemm: inner dimension 0 with beta %g", beta))
	case k == 0:
	default:
		d.counts.Launches++
		d.run(func() error { return d.b.gemm(tA, tB, alpha, pa, ar, ac, pb, br, bc, beta, pc) })
	}
}

// Add sets dst = a + b over n elements.
func (d *Device) Add(dst, a, b step.Buf, n int) {
	d.launch("add_n", cuda.GridFor(n, threads), at("Add", "dst", dst, n), at("Add", "a", a, n), at("Add", "b", b, n), int64(n))
}

// Mul sets dst = a⊙b over n elements.
func (d *Device) Mul(dst, a, b step.Buf, n int) {
	d.launch("mul_n", cuda.GridFor(n, threads), at("Mul", "dst", dst, n), at("Mul", "a", a, n), at("Mul", "b", b, n), int64(n))
}

// BiasAct adds the row bias to every row of y (n×w), then clamps at zero with relu.
func (d *Device) BiasAct(y, bias step.Buf, n, w int, relu bool) {
	d.launch("bias_act", cuda.GridFor(n*w, threads), at("BiasAct", "y", y, n*w), at("BiasAct", "bias", bias, w), n, w, flag(relu))
}

// ReLUGrad zeroes d[i] wherever h[i] is zero, over n elements.
func (d *Device) ReLUGrad(dd, h step.Buf, n int) {
	d.launch("relu_grad", cuda.GridFor(n, threads), at("ReLUGrad", "d", dd, n), at("ReLUGrad", "h", h, n), int64(n))
}

// ColSums sets dst [w] to the column sums of x (n×w): partial sums of chunks of colSumRows rows by blocks of 32
// columns (col_sums_part), then the chunks' sums in order (col_sums_fin), in the Device's scratch, grown the
// first time a shape needs more.
func (d *Device) ColSums(dst, x step.Buf, n, w int) {
	pd, px := at("ColSums", "dst", dst, w), at("ColSums", "x", x, n*w)
	if w == 0 {
		return
	}
	chunks := max(1, (n+colSumRows-1)/colSumRows)
	if need := chunks * w; need > d.colPart.Len() {
		if d.colPart.Len() > 0 {
			d.Free(d.colPart)
		}
		d.colPart = d.Alloc(need)
	}
	part := at("ColSums", "scratch", d.colPart, chunks*w)
	d.launch("col_sums_part", cuda.Grid{Blocks: chunks * ((w + 31) / 32), Threads: 32 * colSumLanes}, part, px, n, w)
	d.launch("col_sums_fin", cuda.GridFor(w, rowThreads), pd, part, chunks, w)
}

// CopyCols copies (or, with acc, adds) columns [srcOff, srcOff+w) of n rows of src to columns [dstOff, dstOff+w)
// of dst; a copy of whole rows is one device-to-device copy.
func (d *Device) CopyCols(dst step.Buf, dstW, dstOff int, src step.Buf, srcW, srcOff, n, w int, acc bool) {
	if n == 0 || w == 0 {
		return
	}
	if dstOff < 0 || srcOff < 0 || dstOff+w > dstW || srcOff+w > srcW {
		panic(fmt.Sprintf("gpustep: Device.CopyCols: columns [%d, %d) of %d into [%d, %d) of %d", srcOff, srcOff+w, srcW, dstOff, dstOff+w, dstW))
	}
	q := at("CopyCols", "dst", dst, (n-1)*dstW+dstOff+w)
	p := at("CopyCols", "src", src, (n-1)*srcW+srcOff+w)
	if !acc && dstW == w && srcW == w {
		d.counts.Launches++
		d.run(func() error { return d.b.copy(q, p, n*w) })
		return
	}
	d.launch("copy_cols", cuda.GridFor(n*w, threads), q, dstW, dstOff, p, srcW, srcOff, n, w, flag(acc))
}

// GatherRows sets row r of dst (n×w) to the sum of the table rows idx[k·r .. k·r+k), −1 adding nothing. The
// indices must be within the table, which the GPU does not check.
func (d *Device) GatherRows(dst, table step.Buf, idx step.IntBuf, n, k, w int) {
	d.launch("gather_rows", cuda.GridFor(n*w, threads), at("GatherRows", "dst", dst, n*w), at("GatherRows", "table", table, 0),
		at("GatherRows", "idx", idx, n*k), n, k, w)
}

// ScatterAddRows adds row r of src (n×w) to each row idx[k·r .. k·r+k) of dst, skipping −1: a block per row of
// dst (scatter_add_rows), deterministic, a narrow row's adds split over groups of the block's threads. An index
// past dst's rows is skipped, where the CPU panics.
func (d *Device) ScatterAddRows(dst, src step.Buf, idx step.IntBuf, n, k, w int) {
	if w <= 0 {
		return
	}
	rows := dst.Len() / w
	g := cuda.Grid{Blocks: rows, Threads: scatterThreads}
	d.launch("scatter_add_rows", g, at("ScatterAddRows", "dst", dst, rows*w), at("ScatterAddRows", "src", src, n*w),
		at("ScatterAddRows", "idx", idx, n*k), n, k, w)
}

// LSTMCellForward is one step of an LSTM layer for B sequences (lstm_cell_step).
func (d *Device) LSTMCellForward(act, bias step.Buf, biasRows int, cPrev, c, tc, h step.Buf, B, H int) {
	if biasRows != 1 && biasRows != B {
		panic(fmt.Sprintf("gpustep: Device.LSTMCellForward: %d bias rows for %d sequences", biasRows, B))
	}
	const fn = "LSTMCellForward"
	d.launch("lstm_cell_step", cuda.GridFor(B*H, rowThreads), at(fn, "act", act, B*4*H), at(fn, "bias", bias, biasRows*4*H),
		flag(biasRows > 1), at(fn, "cPrev", cPrev, B*H), at(fn, "c", c, B*H), at(fn, "tc", tc, B*H),
		at(fn, "h", h, B*H), B, H)
}

// LSTMCellBackward is one step of its gradient (lstm_cell_bwd).
func (d *Device) LSTMCellBackward(dg, dc, act, tc, cPrev, dout, dh step.Buf, B, H int) {
	const fn = "LSTMCellBackward"
	d.launch("lstm_cell_bwd", cuda.GridFor(B*H, rowThreads), at(fn, "dg", dg, B*4*H), at(fn, "act", act, B*4*H),
		at(fn, "tc", tc, B*H), at(fn, "cPrev", cPrev, B*H), at(fn, "dout", dout, B*H), at(fn, "dh", dh, B*H), at(fn, "dc", dc, B*H), B, H)
}

// LSTMForward runs the layer's recurrence step by step: a cuBLAS product and lstm_cell_step per step
// (step.RecurrenceForward).
func (d *Device) LSTMForward(act, bias step.Buf, biasRows int, whh, c0, c, tc, out step.Buf, S, B, H int) {
	step.RecurrenceForward(d, act, bias, biasRows, whh, c0, c, tc, out, S, B, H)
}

// LSTMBackward runs the recurrence's gradient step by step: lstm_cell_bwd and a cuBLAS product per step
// (step.RecurrenceBackward).
func (d *Device) LSTMBackward(dG, dh, dc, act, tc, c, c0, whh, dOut step.Buf, S, B, H int) {
	step.RecurrenceBackward(d, dG, dh, dc, act, tc, c, c0, whh, dOut, S, B, H)
}

// NLSqForward transforms w (n×half) with the NLSq parameters o [n, half, 5] (nlsq_fwd, a thread per row).
func (d *Device) NLSqForward(out, o, w step.Buf, n, half int) {
	const fn = "NLSqForward"
	d.launch("nlsq_fwd", cuda.GridFor(n, rowThreads), at(fn, "out", out, n*(half+1)), at(fn, "o", o, n*half*5), at(fn, "w", w, n*half), n, half)
}

// AffineForward transforms w (n×half) with the affine parameters o [n, half, 2] (affine_fwd_rows).
func (d *Device) AffineForward(out, o, w step.Buf, n, half int) {
	const fn = "AffineForward"
	d.launch("affine_fwd_rows", cuda.GridFor(n, rowThreads), at(fn, "out", out, n*(half+1)), at(fn, "o", o, n*half*2), at(fn, "w", w, n*half), n, half)
}

// NLSqBackward is NLSqForward's gradient (nlsq_bwd).
func (d *Device) NLSqBackward(dO, dw, o, w, dOut step.Buf, n, half int) {
	const fn = "NLSqBackward"
	d.launch("nlsq_bwd", cuda.GridFor(n, rowThreads), at(fn, "dO", dO, n*half*5), at(fn, "dw", dw, n*half), at(fn, "o", o, n*half*5),
		at(fn, "w", w, n*half), at(fn, "dOut", dOut, n*(half+1)), n, half)
}

// AffineBackward is AffineForward's gradient (affine_bwd_rows, a thread per scalar).
func (d *Device) AffineBackward(dO, dw, o, w, dOut step.Buf, n, half int) {
	const fn = "AffineBackward"
	d.launch("affine_bwd_rows", cuda.GridFor(n*half, threads), at(fn, "dO", dO, n*half*2), at(fn, "dw", dw, n*half), at(fn, "o", o, n*half*2),
		at(fn, "w", w, n*half), at(fn, "dOut", dOut, n*(half+1)), n, half)
}

// NormalizeRows sets dst (n×w) to the rows of src over their norms.
func (d *Device) NormalizeRows(dst, src step.Buf, n, w int) {
	d.launch("normalize_rows", cuda.GridFor(n, rowThreads), at("NormalizeRows", "dst", dst, n*w), at("NormalizeRows", "src", src, n*w), n, w)
}

// NormalizeRowsGrad is NormalizeRows's gradient.
func (d *Device) NormalizeRowsGrad(dsrc, ddst, src step.Buf, n, w int) {
	const fn = "NormalizeRowsGrad"
	d.launch("normalize_rows_grad", cuda.GridFor(n, rowThreads), at(fn, "dsrc", dsrc, n*w), at(fn, "ddst", ddst, n*w), at(fn, "src", src, n*w), n, w)
}

// Similarity writes the similarity loss of each row.
func (d *Device) Similarity(sim, v, ex, ej step.Buf, n, w int) {
	const fn = "Similarity"
	d.launch("similarity", cuda.GridFor(n, rowThreads), at(fn, "sim", sim, n), at(fn, "v", v, n*w), at(fn, "ex", ex, n*w), at(fn, "ej", ej, n*w), n, w)
}

// SimilarityGrad writes the similarity loss's gradients.
func (d *Device) SimilarityGrad(dex, dej, dv, v, ex, ej, coef step.Buf, n, w int) {
	const fn = "SimilarityGrad"
	d.launch("similarity_grad", cuda.GridFor(n, rowThreads), at(fn, "dex", dex, n*w), at(fn, "dej", dej, n*w), at(fn, "dv", dv, n*w),
		at(fn, "v", v, n*w), at(fn, "ex", ex, n*w), at(fn, "ej", ej, n*w), at(fn, "coef", coef, n), n, w)
}

// GaussNLL writes each row's negative log density less its log-determinant; the constant ½·w·log 2π is
// kernels.GaussNLLTo's, computed here in Go.
func (d *Device) GaussNLL(nll, y, logdet step.Buf, n, w int) {
	c := 0.5 * float64(w) * math.Log(2*math.Pi)
	d.launch("gauss_nll", cuda.GridFor(n, rowThreads), at("GaussNLL", "nll", nll, n), at("GaussNLL", "y", y, n*w), at("GaussNLL", "logdet", logdet, n), n, w, c)
}

// GaussNLLGrad sets dy = s_r·y_r.
func (d *Device) GaussNLLGrad(dy, y, s step.Buf, n, w int) {
	d.launch("scale_rows", cuda.GridFor(n*w, threads), at("GaussNLLGrad", "dy", dy, n*w), at("GaussNLLGrad", "y", y, n*w), at("GaussNLLGrad", "s", s, n), n, w)
}

// normGrid returns the first stage's blocks for n entries: a function of n alone, so the norm's bits are.
func normGrid(n int) int {
	return max(1, min(normBlocks, (n+normThreads*normPerThread-1)/(normThreads*normPerThread)))
}

// Norm returns the L2 norm of x's first n elements (SumSquares into a scratch accumulator, read back): a wait.
func (d *Device) Norm(x step.Buf, n int) (float64, error) {
	d.ZeroAcc(d.normAc)
	d.SumSquares(d.normAc, 0, x, n)
	if err := d.ReadAcc(d.norm, d.normAc); err != nil {
		return 0, err
	}
	return math.Sqrt(d.norm[0]), nil
}

// acc returns the device address of accumulator slot of a, panicking unless a is a GPU Device's with room for
// k slots from slot.
func acc(fn string, a step.Acc, slot, k int) cuda.Ptr {
	p, ok := a.Mem().(cuda.Ptr)
	if !ok || slot < 0 || slot+k > a.Len() {
		panic(fmt.Sprintf("gpustep: Device.%s: slots [%d, %d) of %d accumulators (%T)", fn, slot, slot+k, a.Len(), a.Mem()))
	}
	return p + cuda.Ptr(8*slot)
}

// AllocAcc returns n float64 accumulators, zero.
func (d *Device) AllocAcc(n int) step.Acc { return step.NewAcc(d.alloc(2*n), n) }

// FreeAcc releases a.
func (d *Device) FreeAcc(a step.Acc) { d.free("FreeAcc", acc("FreeAcc", a, 0, 0)) }

// ZeroAcc zeroes a.
func (d *Device) ZeroAcc(a step.Acc) {
	p := acc("ZeroAcc", a, 0, a.Len())
	d.counts.Launches++
	d.run(func() error { return d.b.zero(p, 2*a.Len()) })
}

// ReadAcc copies a into dst once every earlier call is done: the wait of a step.
func (d *Device) ReadAcc(dst []float64, a step.Acc) error {
	p := acc("ReadAcc", a, 0, len(dst))
	d.counts.D2H += 8 * int64(len(dst))
	d.counts.Syncs++
	d.run(func() error { return d.b.downloadFloat64(dst, p) })
	return d.err
}

// SumLoss adds the loss's sums to a[slot..slot+4) (sum_loss: one block, a fixed order).
func (d *Device) SumLoss(a step.Acc, slot int, nll, sim, wt step.Buf, n int, simCoef float64) {
	d.launch("sum_loss", cuda.Grid{Blocks: 1, Threads: normThreads}, acc("SumLoss", a, slot, 4), 0, at("SumLoss", "nll", nll, n),
		at("SumLoss", "sim", sim, n), at("SumLoss", "wt", wt, n), n, simCoef)
}

// SumSquares adds Σ x_i² to a[slot]: float64 partial sums per block, then their sum (sum_squares_part,
// sum_part_add), the blocks a function of n alone, so the sum's bits are.
func (d *Device) SumSquares(a step.Acc, slot int, x step.Buf, n int) {
	p := at("SumSquares", "x", x, n)
	g := normGrid(n)
	d.launch("sum_squares_part", cuda.Grid{Blocks: g, Threads: normThreads}, d.part, p, int64(n))
	d.launch("sum_part_add", cuda.Grid{Blocks: 1, Threads: normThreads}, acc("SumSquares", a, slot, 1), d.part, g)
}

// Layout writes the batch's weights and positional codes from its lengths (batch_layout).
func (d *Device) Layout(wt, negWt, simC step.Buf, pos step.IntBuf, pos0 step.Buf, lens step.IntBuf, B, T, maxT, real int, simCoef float32) {
	const fn = "Layout"
	N := T * B
	d.launch("batch_layout", cuda.GridFor(max(N, B*2*maxT), threads), at(fn, "wt", wt, N), at(fn, "negWt", negWt, N), at(fn, "simC", simC, N),
		at(fn, "pos", pos, 2*(T-1)*B), at(fn, "pos0", pos0, B*2*maxT), at(fn, "lens", lens, B), B, T, maxT, real, simCoef)
}

// seed is a key as the kernels take it: one long, its low word first.
func seed(k kernels.PhiloxKey) int64 { return int64(uint64(k[0]) | uint64(k[1])<<32) }

// DrawNegatives draws the negative tokens (draw_negatives).
func (d *Device) DrawNegatives(neg, tok step.IntBuf, wt step.Buf, n, V int, key kernels.PhiloxKey) {
	const fn = "DrawNegatives"
	d.launch("draw_negatives", cuda.GridFor(n, threads), at(fn, "neg", neg, n), at(fn, "tok", tok, n), at(fn, "wt", wt, n), n, V, seed(key))
}

// DrawNoise draws the rejection-sampled noise, a thread per row (draw_noise).
func (d *Device) DrawNoise(eps step.Buf, tok step.IntBuf, wt, en step.Buf, n, F, V int, sigma float64, rounds int, key kernels.PhiloxKey, a step.Acc, slot int) {
	const fn = "DrawNoise"
	d.launch("draw_noise", cuda.GridFor(n, rowThreads), at(fn, "eps", eps, n*F), at(fn, "tok", tok, n), at(fn, "wt", wt, n), at(fn, "en", en, V*F),
		n, F, V, sigma, rounds, seed(key), acc(fn, a, slot, 1), 0)
}

// DrawDropout draws an inverted-dropout mask, a thread per four entries (draw_dropout).
func (d *Device) DrawDropout(mask step.Buf, n int, p float64, key kernels.PhiloxKey, stream int) {
	d.launch("draw_dropout", cuda.GridFor((n+3)/4, threads), at("DrawDropout", "mask", mask, n), int64(n), p, step.DropoutScale(p), seed(key), stream)
}

// Adam applies one Adam update with the coefficients c (adam_update, the scale passed by value).
func (d *Device) Adam(p, g, m, v step.Buf, n int, c kernels.AdamCoeffs) {
	d.launch("adam_update", cuda.GridFor(n, threads), at("Adam", "p", p, n), at("Adam", "g", g, n), at("Adam", "m", m, n), at("Adam", "v", v, n),
		int64(n), c.Scale, c.Beta1, c.Beta2, c.StepSize, c.BC2Sqrt, c.Eps)
}

// AdamClipped applies Adam with the clipping scale computed on the GPU from a's squared norm, and nothing when a's
// loss or norm is not finite (adam_clipped).
func (d *Device) AdamClipped(p, g, m, v step.Buf, n int, c kernels.AdamCoeffs, clip float64, a step.Acc, lossSlot, sqSlot int) {
	ap := acc("AdamClipped", a, 0, a.Len())
	if lossSlot < 0 || lossSlot >= a.Len() || sqSlot < 0 || sqSlot >= a.Len() {
		panic(fmt.Sprintf("gpustep: Device.AdamClipped: slots %d and %d of %d accumulators", lossSlot, sqSlot, a.Len()))
	}
	d.launch("adam_clipped", cuda.GridFor(n, threads), at("AdamClipped", "p", p, n), at("AdamClipped", "g", g, n), at("AdamClipped", "m", m, n),
		at("AdamClipped", "v", v, n), int64(n), ap, lossSlot, sqSlot, clip, c.Beta1, c.Beta2, c.StepSize, c.BC2Sqrt, c.Eps)
}
