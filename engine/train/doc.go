// Package train pretrains and fine-tunes a SeqFlow (model.Params) with
// gorgonia on the CPU in float32: the training loss of the reference
// (github.com/mlvlab/NFBO, lstm_flow.py, AFPrior.forward), a hand-written
// Adam with global gradient-norm clipping whose state is checkpointed, and a
// trainer that resumes bit for bit.
//
// # Loss
//
// For a batch of B token sequences of length T the loss is
//
//	(1/B) Σ_b Σ_t [ −log p(v̂_{b,t} | v̂_{b,<t}) + λ·S_{b,t} ]
//
// with v̂ = E[x]/‖E[x]‖ + σ·n, n ~ N(0, I_F) redrawn (up to 100 times, in Go,
// before the graph runs) until the cosine-nearest embedding of v̂ is the true
// token, the log density through all blocks and couplings as in
// model.Flow.LogDensityTo, and the similarity loss
// S = (1 − cos(v̂, e_x)) + max(0, cos(v̂, e_j)) for one uniformly drawn token
// j (0 when j = x). The noise enters the graph as an input, so the gradient
// reaches E through E[x]/‖E[x]‖. λ = Config.SimCoef, σ = Config.Noise.
// Dropout (Config.Dropout) applies, in training only, between LSTM layers
// and to the LSTM outputs used as coupling context; its masks are inputs,
// drawn in Go on every core from streams seeded by the trainer's random
// source, so runs are reproducible whatever the number of cores.
//
// # Graphs
//
// gorgonia graphs have fixed shapes, so the trainer compiles one graph and
// tape machine per batch size (T is the config's) and reuses it; a short
// batch is padded with rows of weight 0. Gradients are symbolic nodes
// (gorgonia.Grad) read after each run, and evaluation uses a separate
// forward-only graph. Every weight node shares its float32 memory with the
// model.Params, so Adam's in-place updates are the graph's weights.
//
// Each LSTM layer is one gorgonia op over all T−1 steps (lstmop.go): one
// [(T−1)·B, In]·[In, 4H] product for the inputs, then the recurrence (gates
// fused, order i, f, g, o), each core running it for its own sequences with
// one [B/cores, H]·[H, 4H] product per step, and a hand-written backward
// pass that accumulates the weight gradients in one product over all steps.
// Each coupling (net and transform) is one op too (couplingop.go), and the
// fused graph copies blocks of matrices with its own ops (blockop.go)
// rather than gorgonia's strided slices and concatenations; the elementary
// graph (Options.CouplingNodes, Options.UnrolledLSTM) keeps gorgonia's
// nodes and is the oracle the fused ops are tested against. Options.UnrolledLSTM selects the alternative of
// per-step gorgonia nodes (fused gates sliced into i, f, g, o), which gives
// the same loss and gradients but compiles ~20× slower and keeps a weight-
// gradient copy per step. The positional half of layer 0's input is a
// one-hot code with two ones, so its contribution c_{t+1}·Wih[F:] is the
// sum of two rows of Wih[F:], gathered per step and sequence (posop.go),
// instead of a dense [B, F+P] input per step. The embedding lookups of the
// true and the negative tokens are row gathers too in the fused graph
// (embedop.go); the elementary graph multiplies one-hot inputs, its oracle.
//
// gorgonia v0.9.18 merges slice nodes of one parent whose bounds agree
// modulo 256 (it hashes them as bytes), silently; slices here are built so
// that no two of one node can collide (see builder.pick).
//
// # Devices
//
// engine/step writes the same training step once against a small device
// interface, for the CPU and a GPU alike. CPU (device.go) is its CPU
// implementation, whose kernels are this package's fused loops (the
// functions the ops above call: gemm, transformRows, gatherRows,
// scatterAddRows, copyCols, mulRows) and kernels'. With Options.Device a
// Trainer runs its steps through engine/step on that device, drawing the
// same inputs (prepareBatch, dropoutMasks) from the same random stream as
// the graph, so that the two agree to float32 rounding
// (TestStepMatchesGraph, TestTrainerDeviceMatchesGraph); evaluation stays
// on the graph.
//
// # Checkpoints
//
// Trainer.MarshalState holds the step count, the data position, the random
// source's state and the Adam state; Trainer.Checkpoint stores it in the
// model.Checkpoint's optimiser section under OptimKey, and Restore resumes
// from it. Pretraining N steps, checkpointing and resuming for N more gives
// the same weights, bit for bit, as 2N steps in one run.
//
// # BLAS
//
// Pure-Go gonum BLAS by default; build with -tags openblas and
// CGO_LDFLAGS=-lopenblas to run gorgonia's products on OpenBLAS. With one
// OpenBLAS thread (the default, NFBO_BLAS_THREADS) the fused ops split each
// large product over the cores themselves (gemm.go): OpenBLAS's own idle
// threads spin and take cores from the element-wise loops between products.
package train
