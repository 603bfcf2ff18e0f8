package model

// FlowFLOPs returns the floating-point operations, counting a multiply-add
// as 2, of the matrix products of one pass of the flow over one sequence of
// length T, as Flow's EncodeTo (density direction) and DecodeTo (generation
// direction, before the token search) run them; both directions multiply the
// same matrices, the encoder for all positions at once and the decoder one
// position at a time. With K = Blocks, L = LSTMLayers, C = Couplings,
// D = CouplingDepth, h = F/2 and np = Transform.NumParams():
//
//	FLOPs = 2·K·[ (T−1)·4H·(F + H + (L−1)·2H)                  LSTM
//	            + T·(H·C·U + C·(h·U + (D−1)·U² + U·h·np)) ]   couplings
//
// The LSTM takes T−1 steps per block: the context of position 0 is the
// initial state, and the output of the last step would only be the context
// of position T. Each step multiplies layer 0's input y_t by the first F rows
// of Wih, every deeper layer's input by its H×4H Wih, and every layer's h by
// its H×4H Whh. Each coupling net's first layer multiplies the F/2
// conditioning dims and the H-wide context; Flow does the context part of
// all C couplings as one H×(C·U) product, which has the same count.
//
// Left out, because they do not run per sequence or are not matrix
// products: the initial-state MLP and the Wih rows met by the one-hot
// positional code, which NewFlow folds into per-block constants once per set
// of weights (so neither V nor MaxT appears above); biases, the LSTM gate
// nonlinearities, ReLU, the NLSq or affine map and the NLSq inverse's cubic;
// the embedding lookup and its normalisation; and the decoder's
// cosine-nearest search, which DecodeSearchFLOPs counts.
//
// Other backends may multiply more to get the same result: the ONNX encoder
// feeds layer 0 a (T−1)-wide one-hot step code, the ONNX decoder advances
// the LSTM at the last position too, and the tests' gorgonia graph
// multiplies one-hot token matrices by the embedding. Those products are overhead of
// the backend, not work of the flow, so they are not counted here.
func (c Config) FlowFLOPs() int64 {
	T, F, H, U := int64(c.T), int64(c.F), int64(c.H), int64(c.U)
	L, C, D := int64(c.LSTMLayers), int64(c.Couplings), int64(c.CouplingDepth)
	h, np := int64(c.Half()), int64(c.Transform.NumParams())
	lstm := (T - 1) * 4 * H * (F + H + (L-1)*2*H)
	coupling := T * (H*C*U + C*(h*U+(D-1)*U*U+U*h*np))
	return 2 * int64(c.Blocks) * (lstm + coupling)
}

// DecodeSearchFLOPs returns the floating-point operations (a multiply-add
// counted as 2) of DecodeTo's cosine-nearest token search for one sequence:
// the T×F latent-side vectors times the F×V unit-norm embedding, 2·T·V·F.
// The row norms and the argmax are left out. A decode's total is
// FlowFLOPs + DecodeSearchFLOPs.
func (c Config) DecodeSearchFLOPs() int64 {
	return 2 * int64(c.T) * int64(c.V) * int64(c.F)
}
