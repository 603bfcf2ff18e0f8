//go:build amd64 && !purego

#include "textflag.h"

// The element-wise loops of elementwise.go: 8 float32 lanes (AVX), the
// main loop 32 entries at a time, then groups of 8. CX counts the entries
// left, DI, SI, DX walk dst, a, b.

#define BINARY(NAME, OP) \
TEXT NAME(SB), NOSPLIT, $0-32 \
	MOVQ n+0(FP), CX \
	MOVQ dst+8(FP), DI \
	MOVQ a+16(FP), SI \
	MOVQ b+24(FP), DX \
	CMPQ CX, $32 \
	JLT  tail8 \
loop32: \
	VMOVUPS (SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	VMOVUPS 64(SI), Y2 \
	VMOVUPS 96(SI), Y3 \
	OP      (DX), Y0, Y0 \
	OP      32(DX), Y1, Y1 \
	OP      64(DX), Y2, Y2 \
	OP      96(DX), Y3, Y3 \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	ADDQ    $128, SI \
	ADDQ    $128, DX \
	ADDQ    $128, DI \
	SUBQ    $32, CX \
	CMPQ    CX, $32 \
	JGE     loop32 \
tail8: \
	TESTQ   CX, CX \
	JZ      done \
	VMOVUPS (SI), Y0 \
	OP      (DX), Y0, Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ    $32, SI \
	ADDQ    $32, DX \
	ADDQ    $32, DI \
	SUBQ    $8, CX \
	JMP     tail8 \
done: \
	VZEROUPPER \
	RET

// func add8(n int, dst, a, b *float32): dst = a + b
BINARY(·add8, VADDPS)

// func mul8(n int, dst, a, b *float32): dst = a · b
BINARY(·mul8, VMULPS)

// func addReLU8(n int, dst, a, b *float32): dst = max(a + b, 0) as Go's
// max computes it. VMAXPS returns its second source when either is NaN or
// both are zero, so max(0, s) keeps a NaN s and gives s for s = ±0; adding
// +0 then turns −0 into +0 and changes nothing else.
TEXT ·addReLU8(SB), NOSPLIT, $0-32
	MOVQ   n+0(FP), CX
	MOVQ   dst+8(FP), DI
	MOVQ   a+16(FP), SI
	MOVQ   b+24(FP), DX
	VXORPS Y15, Y15, Y15

arloop:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMAXPS  Y0, Y15, Y0   // Go assembler order: VMAXPS src2, src1, dst = max(src1 = 0, src2 = s)
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     arloop
	VZEROUPPER
	RET

// func reluGrad8(n int, d, h *float32): d = 0 where h = ±0. The comparison
// "not equal, unordered" is true for a NaN h, which keeps d.
TEXT ·reluGrad8(SB), NOSPLIT, $0-24
	MOVQ   n+0(FP), CX
	MOVQ   d+8(FP), DI
	MOVQ   h+16(FP), SI
	VXORPS Y15, Y15, Y15

rgloop:
	VMOVUPS (SI), Y0
	VCMPPS  $4, Y15, Y0, Y0 // h ≠ 0 (NEQ_UQ)
	VANDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     rgloop
	VZEROUPPER
	RET

// func nlsqGrad4(m, n int, out, in *float32, c *[8][4]float64)
//
// NLSqGrad32s for scalars [0, m), four float64 lanes at a time, NLSqGrad's
// operations in its order (Go evaluates products left to right; no fused
// multiply-adds). The runs are n floats apart: DX is n·4 bytes, BX 3n·4;
// SI and R8 walk the input runs 0-3 and 4-7, DI and R9 the output runs 0-3
// and 4. Y15 holds 1; the other constants are read from R10.
#define cOne   0(R10)
#define cThree 32(R10)
#define cTwo   64(R10)
#define c04    96(R10)
#define c03    128(R10)
#define c08    160(R10)
#define cM04   192(R10)
#define cSign  224(R10)
TEXT ·nlsqGrad4(SB), NOSPLIT, $0-40
	MOVQ         m+0(FP), CX
	MOVQ         n+8(FP), DX
	MOVQ         out+16(FP), DI
	MOVQ         in+24(FP), SI
	MOVQ         c+32(FP), R10
	SHLQ         $2, DX
	LEAQ         (DX)(DX*2), BX
	LEAQ         (SI)(DX*4), R8
	LEAQ         (DI)(DX*4), R9
	VMOVUPD      cOne, Y15

ngloop:
	VCVTPS2PD (SI), Y0       // b
	VCVTPS2PD (SI)(DX*1), Y1 // d
	VCVTPS2PD (SI)(DX*2), Y2 // E
	VCVTPS2PD (SI)(BX*1), Y3 // th
	VCVTPS2PD (R8), Y4       // f
	VCVTPS2PD (R8)(DX*1), Y5 // w
	VCVTPS2PD (R8)(DX*2), Y6 // du
	VCVTPS2PD (R8)(BX*1), Y7 // dl

	VMULPD Y2, Y3, Y8   // cc = th·E
	VMULPD Y5, Y1, Y9   // s = d·w + f
	VADDPD Y4, Y9, Y9
	VMULPD Y9, Y9, Y10  // inv = 1/(1 + s·s)
	VADDPD Y10, Y15, Y11
	VDIVPD Y11, Y15, Y11
	VMULPD Y11, Y11, Y12 // inv2 = inv·inv
	VMULPD Y12, Y9, Y13  // g = s·inv2
	VMULPD cThree, Y9, Y14 // gp = (1 − 3·s·s)·inv2·inv
	VMULPD Y9, Y14, Y14
	VSUBPD Y14, Y15, Y14
	VMULPD Y12, Y14, Y14
	VMULPD Y11, Y14, Y14
	VMULPD cTwo, Y8, Y10 // D = b − 2·cc·d·g
	VMULPD Y1, Y10, Y10
	VMULPD Y13, Y10, Y10
	VSUBPD Y10, Y0, Y10
	VDIVPD Y10, Y7, Y12  // k = dl/D
	VMULPD Y3, Y3, Y3    // dth = 0.3·(1 − th·th)·E
	VSUBPD Y3, Y15, Y3
	VMULPD c03, Y3, Y3
	VMULPD Y2, Y3, Y3
	VMULPD Y11, Y8, Y2   // ci = cc·inv

	// do1 = du·(0.4·b·w + 0.4·ci) + dl·0.4
	VMULPD c04, Y0, Y4
	VMULPD Y5, Y4, Y4
	VMULPD c04, Y2, Y0
	VADDPD Y0, Y4, Y4
	VMULPD Y4, Y6, Y4
	VMULPD c04, Y7, Y0
	VADDPD Y0, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (DI)

	// do2 = du·dth·inv − k·2·dth·d·g
	VMULPD Y3, Y6, Y4
	VMULPD Y11, Y4, Y4
	VMULPD cTwo, Y12, Y0
	VMULPD Y3, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y13, Y0, Y0
	VSUBPD Y0, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (DI)(DX*1)

	// do3 = du·(−0.4·ci − 0.8·cc·d·w·g) − k·0.8·cc·d·d·w·gp
	VMULPD cM04, Y2, Y4
	VMULPD c08, Y8, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y5, Y0, Y0
	VMULPD Y13, Y0, Y0
	VSUBPD Y0, Y4, Y4
	VMULPD Y4, Y6, Y4
	VMULPD c08, Y12, Y0
	VMULPD Y8, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y5, Y0, Y0
	VMULPD Y14, Y0, Y0
	VSUBPD Y0, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (DI)(DX*2)

	// do4 = −du·2·cc·g − k·2·cc·d·gp
	VXORPD cSign, Y6, Y4
	VMULPD cTwo, Y4, Y4
	VMULPD Y8, Y4, Y4
	VMULPD Y13, Y4, Y4
	VMULPD cTwo, Y12, Y0
	VMULPD Y8, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y14, Y0, Y0
	VSUBPD Y0, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (DI)(BX*1)

	// dw = du·D − k·2·cc·d·d·gp
	VMULPD Y10, Y6, Y4
	VMULPD cTwo, Y12, Y0
	VMULPD Y8, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y1, Y0, Y0
	VMULPD Y14, Y0, Y0
	VSUBPD Y0, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS    X4, (R9)

	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, DI
	ADDQ $16, R9
	SUBQ $4, CX
	JNZ  ngloop
	VZEROUPPER
	RET
