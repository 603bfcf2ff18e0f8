package kernels

// LSTMStepTo advances a batch of n LSTM states by one step, with fused gates
// in PyTorch's order i, f, g, o (input, forget, cell candidate, output):
//
//	gates = x·wx + hPrev·wh + bias            (n×4H)
//	c = σ(f)⊙cPrev + σ(i)⊙tanh(g),  h = σ(o)⊙tanh(c)
//
// x is n×in, wx in×4H, hPrev and cPrev n×H, wh H×4H, bias 4H (the sum of
// PyTorch's two biases plus any input that is the same for every row, such
// as a positional code); h and c are n×H and gates is n×4H scratch. h may
// alias hPrev and c may alias cPrev (the update is then in place); neither
// may alias x, and gates aliases nothing.
func LSTMStepTo(h, c, gates, x, wx, hPrev, wh, cPrev, bias []float32, n, in, hid int) {
	checkDims("LSTMStepTo", n, in, hid)
	g := 4 * hid
	checkLen("LSTMStepTo", "gates", len(gates), n*g)
	checkLen("LSTMStepTo", "bias", len(bias), g)
	for i := 0; i < n; i++ {
		copy(gates[i*g:(i+1)*g], bias[:g])
	}
	MulAddTo(gates, x, wx, n, in, g)
	MulAddTo(gates, hPrev, wh, n, hid, g)
	LSTMCellTo(h, c, gates, cPrev, n, hid)
}

// LSTMCellTo applies the LSTM nonlinearities to pre-activation gates
// (n×4H, order i, f, g, o) and the previous cell state cPrev (n×H), writing
// the new hidden state h and cell state c (both n×H). gates is overwritten
// (it holds the activations afterwards, and tanh(c) in the candidate's
// place). c may alias cPrev; h may alias anything but gates and c. The
// sigmoids and tanh are float32 (Sigmoid32s, Tanh32s: eight lanes at a time
// where the assembly runs, within a few units in the last place of the
// float64 functions), as ONNX Runtime's are.
func LSTMCellTo(h, c, gates, cPrev []float32, n, hid int) {
	checkDims("LSTMCellTo", n, hid)
	checkLen("LSTMCellTo", "h", len(h), n*hid)
	checkLen("LSTMCellTo", "c", len(c), n*hid)
	checkLen("LSTMCellTo", "cPrev", len(cPrev), n*hid)
	checkLen("LSTMCellTo", "gates", len(gates), n*4*hid)
	for r := 0; r < n; r++ {
		gr := gates[r*4*hid : (r+1)*4*hid]
		Sigmoid32s(gr[:2*hid], gr[:2*hid])
		Tanh32s(gr[2*hid:3*hid], gr[2*hid:3*hid])
		Sigmoid32s(gr[3*hid:], gr[3*hid:])
		gi, gf, gg, go_ := gr[:hid], gr[hid:2*hid], gr[2*hid:3*hid], gr[3*hid:4*hid]
		hr, cr, cp := h[r*hid:(r+1)*hid], c[r*hid:(r+1)*hid], cPrev[r*hid:(r+1)*hid]
		for j := range cr {
			cr[j] = gf[j]*cp[j] + gi[j]*gg[j]
		}
		Tanh32s(gg, cr) // the candidate is spent: its place takes tanh(c)
		for j := range hr {
			hr[j] = go_[j] * gg[j]
		}
	}
}
