// Package step is the SeqFlow training step written once against a small
// device interface: the forward pass with its activations kept, the loss
// (NLL + λ·similarity, weighted per row), the backward pass through the
// couplings, the LSTMs over all T−1 steps, the positional gates, the
// initial-state MLPs, dropout and the normalised embeddings, then the
// gradient norm and Adam. Every device runs the same sequence of calls, so
// the CPU (engine/train.CPU, on kernels and engine/train's fused loops) and
// a GPU (engine/cuda's kernels and cuBLAS) compute one step the same way,
// and the CPU checks the GPU.
//
// A Device holds float32 buffers (Buf, IntBuf: opaque handles with views)
// and one method per kernel, every shape an argument. A Step holds the
// parameters, gradients and Adam's moments of one config and batch size,
// each one flat buffer in model.Params.Tensors order, and the activations,
// all allocated once. Train draws a step's random inputs (noise, negative
// tokens, dropout masks) on the device from a counter-based generator
// (draw.go), so every device draws the same ones; Run takes a Batch drawn
// on the host instead, which is how engine/train's tests give the step and
// their gorgonia graph (the autodiff reference) the same inputs and hold
// the two steps' losses and gradients to float32 rounding of each other.
// engine/train's Trainer trains through this step on every device.
//
// Rows are t-major, as in engine/train: row r = t·B + b holds position t of
// sequence b; N = T·B rows, S = T − 1 LSTM steps, step s reading rows
// s·B .. s·B+B−1.
package step
