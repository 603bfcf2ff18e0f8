//go:build amd64 && !purego

package kernels

import "math"

// nlsqSolveConst holds the constants of nlsqSolve4, each in four lanes, in the order of its #defines: 1, 2, 3,
// −2, −3, 9, 27, 2⁵⁰⁰, the sign bit, 0.5, math.Cbrt's C, D, E, F and G, its chop mask and the 1<<30 it adds
// (those two as integers).
var nlsqSolveConst = func() (c [nlsqSolveConsts][4]float64) {
	for i, v := range [nlsqSolveConsts]float64{
		1, 2, 3, -2, -3, 9, 27, 0x1p500, negZero, 0.5,
		cbrtC, cbrtD, cbrtE, cbrtF, cbrtG,
		math.Float64frombits(0xFFFFFFFFC << 28), math.Float64frombits(1 << 30),
	} {
		c[i] = [4]float64{v, v, v, v}
	}
	return c
}()

const nlsqSolveConsts = 17

// math.Cbrt's constants (math/cbrt.go, from FreeBSD's s_cbrt.c): its steps after the first estimate.
const (
	cbrtC = 5.42857142857142815906e-01  // 19/35
	cbrtD = -7.05306122448979611050e-01 // -864/1225
	cbrtE = 1.41428571428571436819e+00  // 99/70
	cbrtF = 1.60714285714285720630e+00  // 45/28
	cbrtG = 3.57142857142857150787e-01  // 5/14
)

// nlsqSolve4 does scalars [0, m) of nlsqSolve (m > 0, a multiple of 4, at most nlsqBatch) from u and the
// pseudos p into dst, and returns the bits of the scalars it left to the caller (dst = u there).
//
//go:noescape
func nlsqSolve4(m int, dst, u *float32, p *nlsqPseudos, c *[nlsqSolveConsts][4]float64) (fallback uint64)

// nlsqSolveVec does the leading multiple of four of the m ≤ nlsqBatch scalars of one batch of NLSqSolveTo: it
// returns how many it did and, among them, the bits of those the caller must solve (dst holds u there).
func nlsqSolveVec(dst, u []float32, p *nlsqPseudos, m int) (done int, fallback uint64) {
	done = m &^ 3
	if !packedAsm || done == 0 {
		return 0, 0
	}
	_, _ = dst[done-1], u[done-1]
	return done, nlsqSolve4(done, &dst[0], &u[0], p, &nlsqSolveConst)
}
