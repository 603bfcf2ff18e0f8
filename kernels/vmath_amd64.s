//go:build amd64 && !purego

#include "textflag.h"

// Offsets into vconst (vmath_amd64.go): constant i at i·32(R8).
#define vExpMax    0
#define vExpMin    32
#define vLog2e     64
#define vLn2Hi     96
#define vLn2Lo     128
#define vExp0      160
#define vExp1      192
#define vExp2      224
#define vExp3      256
#define vExp4      288
#define vExp5      320
#define vOne       352
#define vInf       384
#define v126       416
#define vSign      448
#define vTwo       480
#define vTanhSmall 512
#define vTanhOne   544
#define vTanh0     576
#define vTanh1     608
#define vTanh2     640
#define vTanh3     672
#define vTanh4     704
#define vMinNormal 736
#define vMaxFloat  768
#define vMantMask  800
#define vHalfExp   832
#define vSqrtHalf  864
#define vHalf      896
#define vLog0      928
#define vLog1      960
#define vLog2      992
#define vLog3      1024
#define vLog4      1056
#define vLog5      1088
#define vLog6      1120
#define vLog7      1152
#define vLog8      1184

// Comparison predicates of VCMPPS.
#define cmpUnord 0x03
#define cmpLT    0x11
#define cmpLE    0x12
#define cmpNGT   0x1A
#define cmpGE    0x1D
#define cmpGT    0x1E

// EXP sets Y0 to Exp32 of each lane of Y0, using Y1-Y4. The input is clamped
// to [expMin, expMax] for the arithmetic and the lanes outside (and NaN) are
// set afterwards, as Exp32's special cases.
#define EXP \
	VMINPS       vExpMax(R8), Y0, Y1 \
	VMAXPS       vExpMin(R8), Y1, Y1 \
	VMULPS       vLog2e(R8), Y1, Y2 \
	VROUNDPS     $0, Y2, Y2 \
	VMOVAPS      Y1, Y3 \
	VFNMADD231PS vLn2Hi(R8), Y2, Y3 \
	VFNMADD231PS vLn2Lo(R8), Y2, Y3 \
	VMOVUPS      vExp0(R8), Y4 \
	VFMADD213PS  vExp1(R8), Y3, Y4 \
	VFMADD213PS  vExp2(R8), Y3, Y4 \
	VFMADD213PS  vExp3(R8), Y3, Y4 \
	VFMADD213PS  vExp4(R8), Y3, Y4 \
	VFMADD213PS  vExp5(R8), Y3, Y4 \
	VMULPS       Y3, Y3, Y1 \
	VFMADD213PS  Y3, Y1, Y4 \
	VADDPS       vOne(R8), Y4, Y4 \
	VCVTPS2DQ    Y2, Y2 \
	VPADDD       v126(R8), Y2, Y2 \
	VPSLLD       $23, Y2, Y2 \
	VMULPS       Y2, Y4, Y4 \
	VADDPS       Y4, Y4, Y4 \
	VCMPPS       $cmpGT, vExpMax(R8), Y0, Y1 \
	VBLENDVPS    Y1, vInf(R8), Y4, Y4 \
	VCMPPS       $cmpLT, vExpMin(R8), Y0, Y1 \
	VANDNPS      Y4, Y1, Y4 \
	VCMPPS       $cmpUnord, Y0, Y0, Y1 \
	VBLENDVPS    Y1, Y0, Y4, Y0

// ARGS loads n, dst, x and the constants' address; NEXT stores Y0 and steps
// to the next eight values.
#define ARGS \
	MOVQ n+0(FP), CX \
	MOVQ dst+8(FP), DI \
	MOVQ x+16(FP), SI \
	MOVQ c+24(FP), R8

#define NEXT \
	VMOVUPS Y0, (DI) \
	ADDQ    $32, SI \
	ADDQ    $32, DI \
	SUBQ    $8, CX

// func exps(n int, dst, x *float32, c *[38][8]float32)
TEXT ·exps(SB), NOSPLIT, $0-32
	ARGS
exploop:
	VMOVUPS (SI), Y0
	EXP
	NEXT
	JNZ exploop
	VZEROUPPER
	RET

// func sigmoids(n int, dst, x *float32, c *[38][8]float32)
//
// 1/(1+e^−x), as Sigmoid32.
TEXT ·sigmoids(SB), NOSPLIT, $0-32
	ARGS
	VMOVUPS vSign(R8), Y6
	VMOVUPS vOne(R8), Y7
sigloop:
	VXORPS  (SI), Y6, Y0
	EXP
	VADDPS  Y7, Y0, Y0
	VDIVPS  Y0, Y7, Y0
	NEXT
	JNZ sigloop
	VZEROUPPER
	RET

// func tanhs(n int, dst, x *float32, c *[38][8]float32)
//
// As Tanh32: for |x| > 0.625, 1 − 2/(e^2|x|+1) (1 above tanhOne) with the
// sign of x; else the odd polynomial. Both are computed and blended. Y5
// holds x, Y6 |x|, Y7 the sign mask.
TEXT ·tanhs(SB), NOSPLIT, $0-32
	ARGS
	VMOVUPS vSign(R8), Y7
tanhloop:
	VMOVUPS      (SI), Y5
	VANDNPS      Y5, Y7, Y6
	VMINPS       vTanhOne(R8), Y6, Y0
	VADDPS       Y0, Y0, Y0
	EXP
	VADDPS       vOne(R8), Y0, Y0
	VMOVUPS      vTwo(R8), Y1
	VDIVPS       Y0, Y1, Y0
	VMOVUPS      vOne(R8), Y1
	VSUBPS       Y0, Y1, Y0
	VCMPPS       $cmpGT, vTanhOne(R8), Y6, Y1
	VBLENDVPS    Y1, vOne(R8), Y0, Y0
	VANDPS       Y5, Y7, Y1
	VORPS        Y1, Y0, Y0
	VMULPS       Y5, Y5, Y2
	VMOVUPS      vTanh0(R8), Y3
	VFMADD213PS  vTanh1(R8), Y2, Y3
	VFMADD213PS  vTanh2(R8), Y2, Y3
	VFMADD213PS  vTanh3(R8), Y2, Y3
	VFMADD213PS  vTanh4(R8), Y2, Y3
	VMULPS       Y2, Y3, Y3
	VFMADD213PS  Y5, Y5, Y3
	VCMPPS       $cmpNGT, vTanhSmall(R8), Y6, Y1
	VBLENDVPS    Y1, Y3, Y0, Y0
	NEXT
	JNZ tanhloop
	VZEROUPPER
	RET

// func logs(n int, dst, x *float32, c *[38][8]float32) int
//
// As Log32 for groups of eight positive normal floats; it returns at the
// first group that holds another value, with the count done.
TEXT ·logs(SB), NOSPLIT, $0-40
	ARGS
	MOVQ CX, DX // n, for the count done
logloop:
	VMOVUPS      (SI), Y0
	VCMPPS       $cmpGE, vMinNormal(R8), Y0, Y1
	VCMPPS       $cmpLE, vMaxFloat(R8), Y0, Y2
	VANDPS       Y2, Y1, Y1
	VMOVMSKPS    Y1, AX
	CMPQ         AX, $0xFF
	JNE          logdone
	VPSRLD       $23, Y0, Y1
	VPSUBD       v126(R8), Y1, Y1
	VANDPS       vMantMask(R8), Y0, Y2
	VORPS        vHalfExp(R8), Y2, Y2
	VCMPPS       $cmpLT, vSqrtHalf(R8), Y2, Y3
	VPADDD       Y3, Y1, Y1
	VANDPS       Y3, Y2, Y4
	VADDPS       Y4, Y2, Y2
	VSUBPS       vOne(R8), Y2, Y2
	VCVTDQ2PS    Y1, Y1
	VMULPS       Y2, Y2, Y3
	VMOVUPS      vLog0(R8), Y4
	VFMADD213PS  vLog1(R8), Y2, Y4
	VFMADD213PS  vLog2(R8), Y2, Y4
	VFMADD213PS  vLog3(R8), Y2, Y4
	VFMADD213PS  vLog4(R8), Y2, Y4
	VFMADD213PS  vLog5(R8), Y2, Y4
	VFMADD213PS  vLog6(R8), Y2, Y4
	VFMADD213PS  vLog7(R8), Y2, Y4
	VFMADD213PS  vLog8(R8), Y2, Y4
	VMULPS       Y2, Y4, Y4
	VMULPS       Y3, Y4, Y4
	VFMADD231PS  vLn2Lo(R8), Y1, Y4
	VFNMADD231PS vHalf(R8), Y3, Y4
	VADDPS       Y4, Y2, Y4
	VFMADD231PS  vLn2Hi(R8), Y1, Y4
	VMOVAPS      Y4, Y0
	NEXT
	JNZ logloop
logdone:
	SUBQ CX, DX
	MOVQ DX, ret+32(FP)
	VZEROUPPER
	RET

// func adam4(n int, p, gr, m, v *float32, c *AdamCoeffs)
//
// AdamUpdate for n values (n > 0, a multiple of 4), four lanes of float64 in
// the Go loop's order of operations, without fused multiply-adds, so that
// every value rounds as there.
TEXT ·adam4(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ p+8(FP), DI
	MOVQ gr+16(FP), SI
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ c+40(FP), R10
	VBROADCASTSD 0(R10), Y8   // Scale
	VBROADCASTSD 8(R10), Y9   // Beta1
	VBROADCASTSD 16(R10), Y10 // Beta2
	VBROADCASTSD 24(R10), Y11 // StepSize
	VBROADCASTSD 32(R10), Y12 // BC2Sqrt
	VBROADCASTSD 40(R10), Y13 // Eps
	MOVQ         $0x3FF0000000000000, AX
	MOVQ         AX, X14
	VBROADCASTSD X14, Y14
	VSUBPD       Y9, Y14, Y15 // 1 − Beta1
	VSUBPD       Y10, Y14, Y14 // 1 − Beta2

adamloop:
	VCVTPS2PD  (SI), Y0 // gj = g·Scale
	VMULPD     Y8, Y0, Y0
	VCVTPS2PD  (R8), Y1 // m = Beta1·m + (1−Beta1)·gj
	VMULPD     Y9, Y1, Y1
	VMULPD     Y0, Y15, Y2
	VADDPD     Y2, Y1, Y1
	VCVTPS2PD  (R9), Y3 // v = Beta2·v + (1−Beta2)·gj·gj
	VMULPD     Y10, Y3, Y3
	VMULPD     Y0, Y14, Y4
	VMULPD     Y0, Y4, Y4
	VADDPD     Y4, Y3, Y3
	VCVTPD2PSY Y1, X1
	VMOVUPS    X1, (R8)
	VCVTPD2PSY Y3, X3
	VMOVUPS    X3, (R9)
	VCVTPS2PD  X1, Y1
	VCVTPS2PD  X3, Y3
	VSQRTPD    Y3, Y3 // √v/BC2Sqrt + Eps
	VDIVPD     Y12, Y3, Y3
	VADDPD     Y13, Y3, Y3
	VMULPD     Y11, Y1, Y1 // p −= StepSize·m/denominator
	VDIVPD     Y3, Y1, Y1
	VCVTPS2PD  (DI), Y5
	VSUBPD     Y1, Y5, Y5
	VCVTPD2PSY Y5, X5
	VMOVUPS    X5, (DI)
	ADDQ       $16, DI
	ADDQ       $16, SI
	ADDQ       $16, R8
	ADDQ       $16, R9
	SUBQ       $4, CX
	JNZ        adamloop
	VZEROUPPER
	RET

// func lstmGrad8(n int, dg, dc, act, tc, cp, dout, dh *float32, H int)
//
// LSTMCellGrad32 for units [0, n) (n > 0, a multiple of 8) in the Go loop's
// order of operations, without fused multiply-adds. DX is H in bytes (the
// gate stride), BX 3H; Y15 holds 1.
TEXT ·lstmGrad8(SB), NOSPLIT, $0-72
	MOVQ n+0(FP), CX
	MOVQ dg+8(FP), DI
	MOVQ dc+16(FP), R8
	MOVQ act+24(FP), SI
	MOVQ tc+32(FP), R9
	MOVQ cp+40(FP), R10
	MOVQ dout+48(FP), R11
	MOVQ dh+56(FP), R12
	MOVQ H+64(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), BX
	MOVQ $0x3F800000, AX
	MOVQ AX, X15
	VBROADCASTSS X15, Y15

lgloop:
	VMOVUPS (SI), Y0        // i
	VMOVUPS (SI)(DX*1), Y1  // f
	VMOVUPS (SI)(DX*2), Y2  // g
	VMOVUPS (SI)(BX*1), Y3  // o
	VMOVUPS (R9), Y4        // tc
	VMOVUPS (R11), Y6       // dht = dout + dh
	VADDPS  (R12), Y6, Y6
	VMULPS  Y4, Y4, Y7      // d = dht·o·(1−tc²) + dc
	VSUBPS  Y7, Y15, Y7
	VMULPS  Y3, Y6, Y8
	VMULPS  Y7, Y8, Y8
	VADDPS  (R8), Y8, Y8
	VMULPS  Y2, Y8, Y9      // d·g·i·(1−i)
	VMULPS  Y0, Y9, Y9
	VSUBPS  Y0, Y15, Y10
	VMULPS  Y10, Y9, Y9
	VMOVUPS Y9, (DI)
	VMULPS  (R10), Y8, Y9   // d·cp·f·(1−f)
	VMULPS  Y1, Y9, Y9
	VSUBPS  Y1, Y15, Y10
	VMULPS  Y10, Y9, Y9
	VMOVUPS Y9, (DI)(DX*1)
	VMULPS  Y0, Y8, Y9      // d·i·(1−g²)
	VMULPS  Y2, Y2, Y10
	VSUBPS  Y10, Y15, Y10
	VMULPS  Y10, Y9, Y9
	VMOVUPS Y9, (DI)(DX*2)
	VMULPS  Y4, Y6, Y9      // dht·tc·o·(1−o)
	VMULPS  Y3, Y9, Y9
	VSUBPS  Y3, Y15, Y10
	VMULPS  Y10, Y9, Y9
	VMOVUPS Y9, (DI)(BX*1)
	VMULPS  Y1, Y8, Y9      // dc = d·f
	VMOVUPS Y9, (R8)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, R10
	ADDQ    $32, R11
	ADDQ    $32, R12
	SUBQ    $8, CX
	JNZ     lgloop
	VZEROUPPER
	RET
