// Package gpuflow runs SeqFlow's decoder on an NVIDIA GPU through engine/cuda: the inverse flow (per position,
// blocks in reverse, couplings in reverse, the LSTM stepped on the recovered vector), then the cosine-nearest
// token, as model.Flow.DecodeTo computes them on the CPU, with cuBLAS (pedantic float32) for the products and
// the kernels of engine/cuda/kernels for the rest. Encoding stays on the CPU: the optimiser encodes a few
// molecules per iteration and decodes thousands.
//
// An Engine is one open GPU with its compiled kernels; a Codec is one flow's weights on it, and implements the
// codec that engine/seqflow switches between (Backend "cuda"). A build without cgo has the same API and returns
// cuda.ErrNoCUDA from Open.
package gpuflow
