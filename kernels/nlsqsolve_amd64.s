//go:build amd64 && !purego

#include "textflag.h"

// func nlsqSolve4(m int, dst, u *float32, p *nlsqPseudos, c *[nlsqSolveConsts][4]float64) (fallback uint64)
//
// nlsqSolve for scalars [0, m) (m > 0, a multiple of 4, at most 64), four float64 lanes at a time, with the
// operations of nlsqSolve, nlsqDepressed, sinhThirdAsinh, coshThirdAcosh and math.Cbrt in their order (Go
// evaluates left to right and, below GOAMD64=v3, fuses no multiply-add), so that every lane is rounded as the
// scalar code rounds it. Both of the root's branches are computed and blended on p > 0; their one cube root is
// taken of the blended argument. A lane where the scalar code takes another branch (p = 0, q = 0, |x| or the
// cosh branch's argument at or above 2⁵⁰⁰, NaN) gets dst = u and its bit in fallback, for the caller to solve.
// Cbrt's first estimate needs the argument's bits divided by 3 as an integer, done per lane in the general
// registers (the multiply-high by 0xAAAAAAAAAAAAAAAB).
//
// Registers across the loop: R9 scalars left, CX the group's first lane, SI u, DI dst, R8 the pseudos' a
// (b, c, d and f are 256, 512, 768 and 1024 bytes on), R10 the constants, R11 and R12 the division's magic
// and Cbrt's B1<<32, R14 the fallback bits, Y15 the sign bit.
#define cOne    0(R10)
#define cTwo    32(R10)
#define cThree  64(R10)
#define cMTwo   96(R10)
#define cMThree 128(R10)
#define cNine   160(R10)
#define c27     192(R10)
#define cBig    224(R10)
#define cSign   256(R10)
#define cHalf   288(R10)
#define cbrtC   320(R10)
#define cbrtD   352(R10)
#define cbrtE   384(R10)
#define cbrtF   416(R10)
#define cbrtG   448(R10)
#define cChop   480(R10)
#define cRound  512(R10)

// ROUGH divides the 64-bit lane at off(SP) by 3 and adds B1<<32: Cbrt's rough estimate's bits.
#define ROUGH(off) \
	MOVQ off(SP), AX \
	MULQ R11         \
	SHRQ $1, DX      \
	ADDQ R12, DX     \
	MOVQ DX, off(SP)

TEXT ·nlsqSolve4(SB), NOSPLIT, $32-48
	MOVQ    m+0(FP), R9
	MOVQ    dst+8(FP), DI
	MOVQ    u+16(FP), SI
	MOVQ    p+24(FP), R8
	MOVQ    c+32(FP), R10
	MOVQ    $0xAAAAAAAAAAAAAAAB, R11
	MOVQ    $0x2A9F789300000000, R12 // 715094163 << 32
	XORQ    R14, R14
	XORQ    CX, CX
	VMOVUPD cSign, Y15

nsloop:
	// The depressed cubic (nlsqDepressed): p in Y1, q in Y3, shift in Y2.
	VCVTPS2PD (SI), Y0        // u
	VCVTPS2PD 0(R8), Y1       // a
	VCVTPS2PD 256(R8), Y2     // b
	VCVTPS2PD 512(R8), Y3     // c
	VCVTPS2PD 768(R8), Y4     // d
	VCVTPS2PD 1024(R8), Y5    // f
	VSUBPD    Y1, Y0, Y0      // ua = u − a
	VMULPD    Y5, Y5, Y1      // f2 = 1 + f·f
	VADDPD    cOne, Y1, Y1
	VMULPD    Y4, Y2, Y6      // A = −b·d·d
	VMULPD    Y4, Y6, Y6
	VXORPD    Y15, Y6, Y6
	VMULPD    Y4, Y0, Y7      // B = ua·d·d − 2·b·d·f
	VMULPD    Y4, Y7, Y7
	VMULPD    cTwo, Y2, Y8
	VMULPD    Y4, Y8, Y8
	VMULPD    Y5, Y8, Y8
	VSUBPD    Y8, Y7, Y7
	VMULPD    cTwo, Y0, Y8    // C = 2·ua·d·f − b·f2
	VMULPD    Y4, Y8, Y8
	VMULPD    Y5, Y8, Y8
	VMULPD    Y1, Y2, Y9
	VSUBPD    Y9, Y8, Y8
	VMULPD    Y1, Y0, Y9      // Dc = ua·f2 − c
	VSUBPD    Y3, Y9, Y9
	VMULPD    cThree, Y6, Y0  // p = (3A·C − B·B)/(3A·A)
	VMULPD    Y8, Y0, Y1
	VMULPD    Y7, Y7, Y2
	VSUBPD    Y2, Y1, Y1
	VMULPD    Y6, Y0, Y2
	VDIVPD    Y2, Y1, Y1
	VXORPD    Y15, Y7, Y2     // shift = −B/(3A)
	VDIVPD    Y0, Y2, Y2
	VMULPD    cTwo, Y7, Y3    // q = (2B·B·B − 9A·B·C + 27A·A·Dc)/(27A·A·A)
	VMULPD    Y7, Y3, Y3
	VMULPD    Y7, Y3, Y3
	VMULPD    cNine, Y6, Y4
	VMULPD    Y7, Y4, Y4
	VMULPD    Y8, Y4, Y4
	VSUBPD    Y4, Y3, Y3
	VMULPD    c27, Y6, Y4
	VMULPD    Y6, Y4, Y4
	VMULPD    Y9, Y4, Y5
	VADDPD    Y5, Y3, Y3
	VMULPD    Y6, Y4, Y4
	VDIVPD    Y4, Y3, Y3

	// The sinh branch (p > 0): x = (3q/(2p))·√(3/p) in Y4, |x| in Y6, g in Y7, Cbrt's argument 1 + g in Y8.
	VMULPD  cThree, Y3, Y4
	VMULPD  cTwo, Y1, Y5      // 2p, for both branches
	VDIVPD  Y5, Y4, Y4
	VMOVUPD cThree, Y6
	VDIVPD  Y1, Y6, Y6
	VSQRTPD Y6, Y6
	VMULPD  Y6, Y4, Y4
	VANDNPD Y4, Y15, Y6
	VMULPD  Y6, Y6, Y7        // g = |x| + |x|·|x|/(1 + √(1 + |x|·|x|))
	VADDPD  cOne, Y7, Y8
	VSQRTPD Y8, Y8
	VADDPD  cOne, Y8, Y8
	VDIVPD  Y8, Y7, Y7
	VADDPD  Y7, Y6, Y7
	VADDPD  cOne, Y7, Y8

	// The cosh branch (p < 0): x = |(−3|q|/(2p))·√(3/−p) − 1| + 1 in Y10, Cbrt's argument x + √((x−1)(x+1)) in Y11.
	VXORPD  Y15, Y1, Y9       // −p
	VANDNPD Y3, Y15, Y10
	VMULPD  cMThree, Y10, Y10
	VDIVPD  Y5, Y10, Y10
	VMOVUPD cThree, Y11
	VDIVPD  Y9, Y11, Y11
	VSQRTPD Y11, Y11
	VMULPD  Y11, Y10, Y10
	VSUBPD  cOne, Y10, Y10
	VANDNPD Y10, Y15, Y10
	VADDPD  cOne, Y10, Y10
	VSUBPD  cOne, Y10, Y11
	VADDPD  cOne, Y10, Y12
	VMULPD  Y12, Y11, Y11
	VSQRTPD Y11, Y11
	VADDPD  Y11, Y10, Y11

	// Y13: p > 0. Y14: the lanes the scalar code solves the same way (p ≠ 0, q ≠ 0, the branch's argument
	// below 2⁵⁰⁰, none NaN). Y8: Cbrt's argument X of the lane's branch.
	VXORPD    Y12, Y12, Y12
	VCMPPD    $0x1e, Y12, Y1, Y13 // GT_OQ
	VCMPPD    $0x0c, Y12, Y1, Y14 // NEQ_OQ
	VCMPPD    $0x0c, Y12, Y3, Y0
	VANDPD    Y0, Y14, Y14
	VBLENDVPD Y13, Y6, Y10, Y12
	VMOVUPD   cBig, Y0
	VCMPPD    $0x11, Y0, Y12, Y12 // LT_OQ
	VANDPD    Y12, Y14, Y14
	VBLENDVPD Y13, Y8, Y11, Y8

	// Y0: −2·√(p/3) (sinh) or −2·sign(q)·√(−p/3) (cosh).
	VDIVPD    cThree, Y1, Y0
	VDIVPD    cThree, Y9, Y1
	VBLENDVPD Y13, Y0, Y1, Y0
	VSQRTPD   Y0, Y0
	VANDPD    Y15, Y3, Y1
	VXORPD    Y15, Y1, Y1
	VORPD     cTwo, Y1, Y1
	VMOVUPD   cMTwo, Y9
	VBLENDVPD Y13, Y9, Y1, Y1
	VMULPD    Y0, Y1, Y0

	// c = Cbrt(X) in Y1 (X ≥ 1 in the lanes kept): the rough estimate, then math.cbrt's steps.
	VMOVUPD Y8, 0(SP)
	ROUGH(0)
	ROUGH(8)
	ROUGH(16)
	ROUGH(24)
	VMOVUPD 0(SP), Y1
	VMULPD  Y1, Y1, Y3        // r = t·t/X
	VDIVPD  Y8, Y3, Y3
	VMULPD  Y1, Y3, Y5        // s = C + r·t
	VADDPD  cbrtC, Y5, Y5
	VMOVUPD cbrtD, Y6         // t *= G + F/(s + E + D/s)
	VDIVPD  Y5, Y6, Y6
	VADDPD  cbrtE, Y5, Y9
	VADDPD  Y6, Y9, Y9
	VMOVUPD cbrtF, Y6
	VDIVPD  Y9, Y6, Y6
	VADDPD  cbrtG, Y6, Y6
	VMULPD  Y6, Y1, Y1
	VANDPD  cChop, Y1, Y1     // chop to 22 bits, rounded up
	VPADDQ  cRound, Y1, Y1
	VMULPD  Y1, Y1, Y3        // r = X/(t·t)
	VDIVPD  Y3, Y8, Y3
	VADDPD  Y1, Y1, Y5        // w = t + t
	VSUBPD  Y1, Y3, Y6        // r = (r − t)/(w + r)
	VADDPD  Y3, Y5, Y5
	VDIVPD  Y5, Y6, Y6
	VMULPD  Y6, Y1, Y6        // t = t + t·r
	VADDPD  Y6, Y1, Y1

	// sinh(asinh(x)/3) = g·(c+1)/(2c·(c·c + c + 1)), signed as x, in Y3; cosh(acosh(x)/3) = (c + 1/c)/2 in Y5.
	VADDPD    cOne, Y1, Y3
	VMULPD    Y3, Y7, Y3
	VMULPD    Y1, Y1, Y5
	VADDPD    Y1, Y5, Y5
	VADDPD    cOne, Y5, Y5
	VMULPD    cTwo, Y1, Y6
	VMULPD    Y5, Y6, Y6
	VDIVPD    Y6, Y3, Y3
	VANDPD    Y15, Y4, Y4
	VANDNPD   Y3, Y15, Y3
	VORPD     Y4, Y3, Y3
	VMOVUPD   cOne, Y5
	VDIVPD    Y1, Y5, Y5
	VADDPD    Y5, Y1, Y5
	VMULPD    cHalf, Y5, Y5
	VBLENDVPD Y13, Y3, Y5, Y3

	// w = t + shift, u where the lane falls back; the fallback bits from lane CX on.
	VMULPD     Y3, Y0, Y0
	VADDPD     Y2, Y0, Y0
	VCVTPS2PD  (SI), Y1
	VBLENDVPD  Y14, Y0, Y1, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (DI)
	VMOVMSKPD  Y14, AX
	XORQ       $15, AX
	SHLQ       CX, AX
	ORQ        AX, R14

	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $16, R8
	ADDQ $4, CX
	SUBQ $4, R9
	JNZ  nsloop
	VZEROUPPER
	MOVQ R14, fallback+40(FP)
	RET
