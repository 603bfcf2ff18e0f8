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
