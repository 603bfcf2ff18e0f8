// Package gpustep is the SeqFlow training step's Device (engine/step) on an NVIDIA GPU: buffers in device
// memory, the products through cuBLAS in pedantic float32 (engine/cuda.BLAS) and every other call one kernel of
// engine/cuda/kernels (seqflow.cu and train.cu). engine/train trains through it with Options.Device, as it trains
// through its CPU Device (train.CPU) without one: the same step, the same inputs drawn under the same keys, so the
// CPU checks the GPU.
//
// The Device keeps no state of the step: it maps each call to a launch on a small backend (memory, copies, the
// GEMM, a kernel launch by name). Open's backend is engine/cuda's; the tests also run the Device on an emulator of
// that backend whose kernels are float64 references in Go, read against the CUDA sources' signatures at every
// launch, which checks on a machine without a GPU everything but the CUDA C itself, and on a GPU (NFBO_GPU=1)
// the CUDA C against those references and the whole step against train.CPU.
//
// Every launch waits for the GPU (engine/cuda.Kernel.Launch), so an error is known when it happens; it is kept
// and makes every later call do nothing, and Download and Norm return it (step.Device's contract). A failed
// launch leaves the CUDA context unusable, so the Device stays failed: close it.
//
// Not yet here: streams and CUDA graphs (a step is launch-bound at small sizes), TF32, the dequantisation noise
// and dropout masks drawn on the device (they come from the host so that the CPU and the GPU see the same ones).
package gpustep
