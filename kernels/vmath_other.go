//go:build !amd64 || purego

package kernels

// VectorMathAccelerated reports whether Exp32s, Sigmoid32s, Tanh32s and
// Log32s run their assembly on this machine: never in this build.
func VectorMathAccelerated() bool { return false }

// expVec, sigmoidVec, tanhVec and logVec do the leading part of the slice
// forms that the assembly can and return its length: none here.
func expVec(dst, x []float32) int     { return 0 }
func sigmoidVec(dst, x []float32) int { return 0 }
func tanhVec(dst, x []float32) int    { return 0 }
func logVec(dst, x []float32) int     { return 0 }

// adamVec and lstmGradVec do the leading part of AdamUpdate and
// LSTMCellGrad32 that the assembly can and return its length: none here.
func adamVec(p, g, m, v []float32, c *AdamCoeffs) int { return 0 }

func lstmGradVec(dg, dc, act, tc, cp, dout, dh []float32, H int) int { return 0 }
