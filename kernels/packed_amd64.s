//go:build amd64 && !purego

#include "textflag.h"

// ZEROBLOCK clears the 4×16 accumulators Y0-Y7; ADDBLOCK adds the block of c
// at DX (row stride R10 bytes, R11 = 3·R10) to them; STOREBLOCK writes them
// there.
#define ZEROBLOCK \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

#define ADDBLOCK \
	VADDPS (DX), Y0, Y0 \
	VADDPS 32(DX), Y1, Y1 \
	VADDPS (DX)(R10*1), Y2, Y2 \
	VADDPS 32(DX)(R10*1), Y3, Y3 \
	VADDPS (DX)(R10*2), Y4, Y4 \
	VADDPS 32(DX)(R10*2), Y5, Y5 \
	VADDPS (DX)(R11*1), Y6, Y6 \
	VADDPS 32(DX)(R11*1), Y7, Y7

#define STOREBLOCK \
	VMOVUPS Y0, (DX) \
	VMOVUPS Y1, 32(DX) \
	VMOVUPS Y2, (DX)(R10*1) \
	VMOVUPS Y3, 32(DX)(R10*1) \
	VMOVUPS Y4, (DX)(R10*2) \
	VMOVUPS Y5, 32(DX)(R10*2) \
	VMOVUPS Y6, (DX)(R11*1) \
	VMOVUPS Y7, 32(DX)(R11*1)

// KSTEP(boff, aoff) adds a[r][kk] · b[kk][0:16] to rows r = 0..3 of the
// block, for the panel row at boff(DI) and the values of a at aoff(SI).
#define KSTEP(boff, aoff) \
	VMOVUPS      boff(DI), Y8 \
	VMOVUPS      boff+32(DI), Y9 \
	VBROADCASTSS aoff(SI), Y10 \
	VBROADCASTSS aoff(SI)(R8*1), Y11 \
	VFMADD231PS  Y8, Y10, Y0 \
	VFMADD231PS  Y9, Y10, Y1 \
	VFMADD231PS  Y8, Y11, Y2 \
	VFMADD231PS  Y9, Y11, Y3 \
	VBROADCASTSS aoff(SI)(R8*2), Y10 \
	VBROADCASTSS aoff(SI)(R9*1), Y11 \
	VFMADD231PS  Y8, Y10, Y4 \
	VFMADD231PS  Y9, Y10, Y5 \
	VFMADD231PS  Y8, Y11, Y6 \
	VFMADD231PS  Y9, Y11, Y7

// func sgemm4x16(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)
//
// c[r][0:16] (+)= Σ_kk a[r][kk] · b[kk][0:16] for r = 0..3, k ≥ 1. Y0-Y7 hold
// the 4×16 block (two vectors a row), Y8-Y9 the panel's row kk, Y10-Y11 the
// broadcast a[r][kk]. The loop runs two values of kk per pass.
TEXT ·sgemm4x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8             // lda in bytes
	LEAQ (R8)(R8*2), R9     // 3·lda
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R10
	SHLQ $2, R10            // ldc in bytes
	LEAQ (R10)(R10*2), R11  // 3·ldc

	ZEROBLOCK

	MOVQ CX, BX
	SHRQ $1, BX             // pairs of kk
	JZ   tail

pairs:
	KSTEP(0, 0)
	KSTEP(64, 4)
	ADDQ $8, SI
	ADDQ $128, DI
	DECQ BX
	JNZ  pairs

tail:
	ANDQ $1, CX
	JZ   store
	KSTEP(0, 0)

store:
	MOVQ add+48(FP), AX
	TESTQ AX, AX
	JZ   write
	ADDBLOCK

write:
	STOREBLOCK
	VZEROUPPER
	RET

// KSTEPT(boff) is KSTEP for a stored transposed: the block's four values
// of a at kk are contiguous at SI.
#define KSTEPT(boff) \
	VMOVUPS      boff(DI), Y8 \
	VMOVUPS      boff+32(DI), Y9 \
	VBROADCASTSS 0(SI), Y10 \
	VBROADCASTSS 4(SI), Y11 \
	VFMADD231PS  Y8, Y10, Y0 \
	VFMADD231PS  Y9, Y10, Y1 \
	VFMADD231PS  Y8, Y11, Y2 \
	VFMADD231PS  Y9, Y11, Y3 \
	VBROADCASTSS 8(SI), Y10 \
	VBROADCASTSS 12(SI), Y11 \
	VFMADD231PS  Y8, Y10, Y4 \
	VFMADD231PS  Y9, Y10, Y5 \
	VFMADD231PS  Y8, Y11, Y6 \
	VFMADD231PS  Y9, Y11, Y7

// func sgemm4x16T(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)
//
// sgemm4x16 with a stored transposed: c[r][0:16] (+)= Σ_kk a[kk][r] ·
// b[kk][0:16] for r = 0..3, k ≥ 1; SI steps down a's rows by R8 = lda bytes.
TEXT ·sgemm4x16T(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8             // lda in bytes
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R10
	SHLQ $2, R10            // ldc in bytes
	LEAQ (R10)(R10*2), R11  // 3·ldc

	ZEROBLOCK

	MOVQ CX, BX
	SHRQ $1, BX             // pairs of kk
	JZ   ttail

tpairs:
	KSTEPT(0)
	ADDQ R8, SI
	KSTEPT(64)
	ADDQ R8, SI
	ADDQ $128, DI
	DECQ BX
	JNZ  tpairs

ttail:
	ANDQ $1, CX
	JZ   tstore
	KSTEPT(0)

tstore:
	MOVQ add+48(FP), AX
	TESTQ AX, AX
	JZ   twrite
	ADDBLOCK

twrite:
	STOREBLOCK
	VZEROUPPER
	RET

// KSTEP8(boff, aoff) adds a[r][kk] · b[kk][0:16] to rows r = 0..7 of an
// 8×16 block, one 16-float vector a row: the panel row at boff(DI) into Z16,
// the values of a broadcast from memory by the fused multiply-adds, rows 0-3
// from SI and 4-7 from R12 (= SI + 4·lda).
#define KSTEP8(boff, aoff) \
	VMOVUPS          boff(DI), Z16 \
	VFMADD231PS.BCST aoff(SI), Z16, Z0 \
	VFMADD231PS.BCST aoff(SI)(R8*1), Z16, Z1 \
	VFMADD231PS.BCST aoff(SI)(R8*2), Z16, Z2 \
	VFMADD231PS.BCST aoff(SI)(R9*1), Z16, Z3 \
	VFMADD231PS.BCST aoff(R12), Z16, Z4 \
	VFMADD231PS.BCST aoff(R12)(R8*1), Z16, Z5 \
	VFMADD231PS.BCST aoff(R12)(R8*2), Z16, Z6 \
	VFMADD231PS.BCST aoff(R12)(R9*1), Z16, Z7

// func sgemm8x16(k int, a *float32, lda int, b *float32, c *float32, ldc int, add int)
//
// sgemm4x16 for 8 rows in AVX-512: c[r][0:16] (+)= Σ_kk a[r][kk] · b[kk][0:16]
// for r = 0..7, k ≥ 1, Z0-Z7 holding the block. Each entry is summed in the
// same order with the same fused multiply-adds as sgemm4x16's, so the two
// kernels give a row the same bits.
TEXT ·sgemm8x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8             // lda in bytes
	LEAQ (R8)(R8*2), R9     // 3·lda
	LEAQ (SI)(R8*4), R12    // row 4
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R10
	SHLQ $2, R10            // ldc in bytes
	LEAQ (R10)(R10*2), R11  // 3·ldc
	LEAQ (DX)(R10*4), R13   // row 4 of c

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

	MOVQ CX, BX
	SHRQ $1, BX             // pairs of kk
	JZ   wtail

wpairs:
	KSTEP8(0, 0)
	KSTEP8(64, 4)
	ADDQ $8, SI
	ADDQ $8, R12
	ADDQ $128, DI
	DECQ BX
	JNZ  wpairs

wtail:
	ANDQ $1, CX
	JZ   wstore
	KSTEP8(0, 0)

wstore:
	MOVQ add+48(FP), AX
	TESTQ AX, AX
	JZ   wwrite
	VADDPS (DX), Z0, Z0
	VADDPS (DX)(R10*1), Z1, Z1
	VADDPS (DX)(R10*2), Z2, Z2
	VADDPS (DX)(R11*1), Z3, Z3
	VADDPS (R13), Z4, Z4
	VADDPS (R13)(R10*1), Z5, Z5
	VADDPS (R13)(R10*2), Z6, Z6
	VADDPS (R13)(R11*1), Z7, Z7

wwrite:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, (DX)(R10*1)
	VMOVUPS Z2, (DX)(R10*2)
	VMOVUPS Z3, (DX)(R11*1)
	VMOVUPS Z4, (R13)
	VMOVUPS Z5, (R13)(R10*1)
	VMOVUPS Z6, (R13)(R10*2)
	VMOVUPS Z7, (R13)(R11*1)
	VZEROUPPER
	RET
