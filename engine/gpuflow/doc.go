// Package gpuflow runs SeqFlow's encoder and decoder on an NVIDIA GPU through engine/cuda, as model.Flow
// computes them on the CPU, with cuBLAS (pedantic float32) for the products and the kernels of
// engine/cuda/kernels for the rest. Encoding runs every position of a block at once (teacher forcing, the LSTM's
// recurrence step by step); decoding is the inverse flow per position (blocks in reverse, couplings in reverse,
// the LSTM stepped on the recovered vector), then the cosine-nearest token. Training is engine/gpustep's.
//
// An Engine is one open GPU with its compiled kernels; a LatentCodec is one flow's weights on it, a
// model.LatentCodec that engine/seqflow switches to with Backend "cuda". A build without cgo has the same API
// and returns cuda.ErrNoCUDA from Open.
package gpuflow

// DefaultBatch is the number of sequences a LatentCodec decodes per pass when NewLatentCodec is given 0: large
// enough that the GEMMs fill an H100 and the launches are amortised, small enough for any preset's buffers (well
// under 1 GiB).
const DefaultBatch = 4096
