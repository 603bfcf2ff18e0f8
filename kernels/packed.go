package kernels

import "fmt"

// PanelCols is the width of a Packed matrix's panels, the number of columns
// of the product the micro-kernel computes at once (two 8-float vectors).
const PanelCols = 16

// kernelRows is the number of rows of the product the micro-kernel computes
// at once: 4 rows × 16 columns are 8 vector accumulators, enough to hide the
// fused multiply-add's latency on the cores measured.
const kernelRows = 4

// wideKernelRows is the AVX-512 micro-kernel's: 8 rows × 16 columns, one
// 512-bit accumulator a row (wideKernel says where it runs).
const wideKernelRows = 8

// Packed is a K×N matrix laid out for MulPackedTo: ⌈N/16⌉ panels of 16
// columns, each K rows of 16 contiguous values, the last panel padded with
// zeros. A matrix that is multiplied many times in a row (an LSTM's
// recurrent weights, once per step) is packed once; a BLAS packs its
// operands again on every call, which for the 16-32-row products of a
// recurrence costs about as much as the arithmetic.
//
// The zero value is an empty matrix; Pack sizes it, reusing its storage.
type Packed struct {
	K, N int
	data []float32 // ⌈N/16⌉·K·16
}

// Pack stores op(b) in p: b is K×N with row stride ldb, or with trans, b is
// N×K (row stride ldb) and op(b) = bᵀ.
func (p *Packed) Pack(b []float32, ldb, k, n int, trans bool) {
	checkDims("Packed.Pack", k, n)
	rows, cols := k, n
	if trans {
		rows, cols = n, k
	}
	if ldb < cols {
		panic(fmt.Sprintf("kernels: Packed.Pack: ldb = %d < %d columns", ldb, cols))
	}
	if rows > 0 {
		checkLen("Packed.Pack", "b", len(b), (rows-1)*ldb+cols)
	}
	panels := (n + PanelCols - 1) / PanelCols
	p.K, p.N = k, n
	if cap(p.data) < panels*k*PanelCols {
		p.data = make([]float32, panels*k*PanelCols)
	}
	p.data = p.data[:panels*k*PanelCols]
	for j := range panels {
		j0 := j * PanelCols
		w := min(PanelCols, n-j0)
		panel := p.data[j*k*PanelCols : (j+1)*k*PanelCols]
		for r := range k {
			dst := panel[r*PanelCols : (r+1)*PanelCols]
			if trans {
				for c := range w {
					dst[c] = b[(j0+c)*ldb+r]
				}
			} else {
				copy(dst[:w], b[r*ldb+j0:r*ldb+j0+w])
			}
			clear(dst[w:])
		}
	}
}

// panel returns the j-th panel, K×16.
func (p *Packed) panel(j int) []float32 {
	return p.data[j*p.K*PanelCols : (j+1)*p.K*PanelCols]
}

// MulPackedTo computes dst = a·p, or dst += a·p when add is true, for a m×K
// with row stride lda and dst m×N with row stride ldc. dst must not alias a
// or p. It runs on the calling goroutine; callers split rows over cores.
//
// On amd64 with AVX2 and FMA (PackedAccelerated) the work is an assembly
// micro-kernel over 4×16 blocks of dst, 8×16 blocks in AVX-512 where the CPU
// has it (PackedKernel); elsewhere the same 4×16 blocks in Go.
// Each entry of dst is the sum over k in increasing order, so the result is
// the same on every call, though not bit for bit a BLAS's.
func MulPackedTo(dst []float32, ldc int, a []float32, lda, m int, p *Packed, add bool) {
	mulPacked("MulPackedTo", dst, ldc, a, lda, m, p, add, false)
}

// MulPackedTransTo is MulPackedTo for a stored transposed: it computes
// dst = aᵀ·p (or dst += aᵀ·p) for a K×m with row stride lda, the product
// of a weight gradient (Xᵀ·dY) without copying X.
func MulPackedTransTo(dst []float32, ldc int, a []float32, lda, m int, p *Packed, add bool) {
	mulPacked("MulPackedTransTo", dst, ldc, a, lda, m, p, add, true)
}

// mulPacked is MulPackedTo (trans false: a is m×K) and MulPackedTransTo
// (trans: a is K×m). Row i of op(a) starts at a[i·rs] and steps by ks.
func mulPacked(fn string, dst []float32, ldc int, a []float32, lda, m int, p *Packed, add, trans bool) {
	k, n := p.K, p.N
	checkDims(fn, m, k, n)
	if m == 0 || n == 0 {
		return
	}
	rows, cols := m, k // a's shape
	if trans {
		rows, cols = k, m
	}
	if lda < cols || ldc < n {
		panic(fmt.Sprintf("kernels: %s: lda = %d below %d, or ldc = %d below N = %d", fn, lda, cols, ldc, n))
	}
	checkLen(fn, "dst", len(dst), (m-1)*ldc+n)
	if k == 0 {
		if !add {
			for i := range m {
				clear(dst[i*ldc:][:n])
			}
		}
		return
	}
	checkLen(fn, "a", len(a), (rows-1)*lda+cols)
	rs := lda // where row i of op(a) starts: a[i·rs]
	if trans {
		rs = 1
	}
	var addFlag int
	if add {
		addFlag = 1
	}
	// Panel by panel, all row blocks of a panel in turn: each panel is read
	// from memory once and then from the core's cache, which matters when
	// the packed matrix is larger than the cache (paper's Whh is 4 MB).
	full := n / PanelCols // panels whose 16 columns all lie in dst
	// Rows in blocks of 8 where the AVX-512 kernel runs (a not transposed), then of 4. Both kernels sum each
	// entry in the same order with the same fused multiply-adds.
	var m8 int
	if wideKernel() && !trans {
		m8 = m / wideKernelRows * wideKernelRows
	}
	mBlocks := m8 + (m-m8)/kernelRows*kernelRows
	for j := range full {
		pan := p.panel(j)
		for i := 0; i < m8; i += wideKernelRows {
			kernel8x16(k, a[i*rs:], lda, pan, dst[i*ldc+j*PanelCols:], ldc, addFlag)
		}
		for i := m8; i < mBlocks; i += kernelRows {
			kern4x16(trans, k, a[i*rs:], lda, pan, dst[i*ldc+j*PanelCols:], ldc, addFlag)
		}
	}
	if full*PanelCols < n {
		// The last panel is narrower than 16 columns: compute it into a
		// whole tile and keep the columns that exist.
		var tile [kernelRows * PanelCols]float32
		w := n - full*PanelCols
		for i := 0; i < mBlocks; i += kernelRows {
			kern4x16(trans, k, a[i*rs:], lda, p.panel(full), tile[:], PanelCols, 0)
			for r := range kernelRows {
				addRow(dst[(i+r)*ldc+full*PanelCols:][:w], tile[r*PanelCols:][:w], add)
			}
		}
	}
	if mBlocks < m {
		mulPackedLast(dst, ldc, a, lda, m, mBlocks, p, add, trans)
	}
}

// mulPackedLast computes mulPacked's rows from mBlocks to m, fewer than a
// block of the micro-kernel.
func mulPackedLast(dst []float32, ldc int, a []float32, lda, m, mBlocks int, p *Packed, add, trans bool) {
	k, n := p.K, p.N
	rs, ks := lda, 1
	if trans {
		rs, ks = 1, lda
	}
	left := m - mBlocks
	if m >= kernelRows {
		// The last 1-3 rows: the block of the last four rows, which overlaps
		// the one before, computed into a tile of which those rows are kept.
		// Each entry is the micro-kernel's sum, as in the blocks above, so a
		// row's result does not depend on where the batch puts it.
		var tile [kernelRows * PanelCols]float32
		i := m - kernelRows
		for j := range (n + PanelCols - 1) / PanelCols {
			kern4x16(trans, k, a[i*rs:], lda, p.panel(j), tile[:], PanelCols, 0)
			w := min(PanelCols, n-j*PanelCols)
			for r := kernelRows - left; r < kernelRows; r++ {
				addRow(dst[(i+r)*ldc+j*PanelCols:][:w], tile[r*PanelCols:][:w], add)
			}
		}
		return
	}
	if !trans {
		// Fewer than 4 rows in all: each row alone on the micro-kernel, with a
		// row stride of 0 so that its four rows are that one (three computed in
		// vain, still several times faster than the loop below, and the same
		// bits as in any other block).
		var tile [kernelRows * PanelCols]float32
		for i := range m {
			for j := range (n + PanelCols - 1) / PanelCols {
				kern4x16(trans, k, a[i*rs:], 0, p.panel(j), tile[:], PanelCols, 0)
				w := min(PanelCols, n-j*PanelCols)
				addRow(dst[i*ldc+j*PanelCols:][:w], tile[:w], add)
			}
		}
		return
	}
	// Fewer than 4 rows of a stored transposed: one row at a time.
	for i := mBlocks; i < m; i++ {
		for j := range (n + PanelCols - 1) / PanelCols {
			var acc [PanelCols]float32
			pan := p.panel(j)
			for kk := range k {
				v := a[i*rs+kk*ks]
				row := pan[kk*PanelCols : (kk+1)*PanelCols]
				for c := range acc {
					acc[c] += v * row[c]
				}
			}
			w := min(PanelCols, n-j*PanelCols)
			addRow(dst[i*ldc+j*PanelCols:][:w], acc[:w], add)
		}
	}
}

// kern4x16 is the 4×16 micro-kernel for a (trans false) or a stored
// transposed. A direct call, not a function value: through one, escape
// analysis would move the callers' tiles to the heap on every call.
func kern4x16(trans bool, k int, a []float32, lda int, b, c []float32, ldc, add int) {
	if trans {
		kernel4x16T(k, a, lda, b, c, ldc, add)
	} else {
		kernel4x16(k, a, lda, b, c, ldc, add)
	}
}

// addRow sets dst to src, or adds src to it.
func addRow(dst, src []float32, add bool) {
	if !add {
		copy(dst, src)
		return
	}
	for c, v := range src {
		dst[c] += v
	}
}

// kernel4x16Go is the micro-kernel in Go: the 4×16 block c (row stride ldc)
// is set to (add = 0) or incremented by (add = 1) a[4×k, row stride lda] times
// the packed panel b (k×16). The assembly kernel computes the same sums in
// the same order, with fused multiply-adds.
func kernel4x16Go(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	kernel4x16StridedGo(k, a, lda, 1, b, c, ldc, add)
}

// kernel4x16TGo is kernel4x16Go for a stored transposed: row r of the block's
// left operand is column r of a (k×4 and more, row stride lda).
func kernel4x16TGo(k int, a []float32, lda int, b []float32, c []float32, ldc int, add int) {
	kernel4x16StridedGo(k, a, 1, lda, b, c, ldc, add)
}

// kernel4x16StridedGo is the Go micro-kernel with a's element (r, kk) at
// a[r·rs + kk·ks].
func kernel4x16StridedGo(k int, a []float32, rs, ks int, b []float32, c []float32, ldc int, add int) {
	var acc [kernelRows][PanelCols]float32
	for kk := range k {
		row := b[kk*PanelCols : (kk+1)*PanelCols]
		for r := range kernelRows {
			v := a[r*rs+kk*ks]
			for j := range PanelCols {
				acc[r][j] += v * row[j]
			}
		}
	}
	for r := range kernelRows {
		addRow(c[r*ldc:][:PanelCols], acc[r][:], add == 1)
	}
}
