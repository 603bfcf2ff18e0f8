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
