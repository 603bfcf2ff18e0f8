// Package train pretrains and fine-tunes a SeqFlow (model.Params) in
// float32: the training loss of the reference (github.com/mlvlab/NFBO,
// lstm_flow.py, AFPrior.forward), Adam with global gradient-norm clipping
// whose state is checkpointed, and a trainer that resumes bit for bit.
//
// # Loss
//
// For a batch of B token sequences of length T the loss is
//
//	(1/B) Σ_b Σ_t [ −log p(v̂_{b,t} | v̂_{b,<t}) + λ·S_{b,t} ]
//
// with v̂ = E[x]/‖E[x]‖ + σ·n, n ~ N(0, I_F) redrawn (up to 100 times)
// until the cosine-nearest embedding of v̂ is the true token, the log
// density through all blocks and couplings as in model.Flow.LogDensityTo,
// and the similarity loss S = (1 − cos(v̂, e_x)) + max(0, cos(v̂, e_j)) for
// one uniformly drawn token j (0 when j = x). The noise is an input of the
// step, so the gradient reaches E through E[x]/‖E[x]‖. λ = Config.SimCoef,
// σ = Config.Noise. Dropout (Config.Dropout) applies, in training only,
// between LSTM layers and to the LSTM outputs used as coupling context.
//
// # The step
//
// The training step is engine/step's, written once against a small device
// interface: a Trainer runs every step and every validation through it, on
// CPU (device.go: this machine's cores) unless Options.Device names another
// (engine/gpustep's GPU). A step's random inputs (noise, negative tokens,
// dropout masks) are drawn on the device by a counter-based generator under
// a key the Trainer takes from its random source (engine/step/draw.go), so
// runs are reproducible whatever the device's number of cores, and a CPU
// run checks a GPU run. The weights and Adam's moments stay on the device
// between steps (devicestep.go); the Params the Trainer was made with are
// brought up to date when read (Params, Sync, checkpoints, the end of
// Pretrain and FineTune). A short batch is padded with sequences of
// weight 0.
//
// CPU's kernels are float32 loops split over the cores (loops.go, gemm.go,
// parallel.go) and kernels' (the LSTM cell and its recurrence on a packed
// Whh, Adam, the loss's row-wise parts). Their backward passes are written
// by hand; the tests check them against gorgonia's automatic
// differentiation: the test files oracle_*_test.go build the same loss as a
// gorgonia graph (elementary nodes, and fused ops with hand-written
// gradients checked against those nodes), and TestStepMatchesGraph holds
// the step's loss, gradients and Adam update to the graph's on the same
// inputs, for both transforms, one and two LSTM layers, dropout, padding,
// random padded lengths and frozen embeddings. The graph itself is held to
// float64 loop references and to model.Flow's log density.
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
// Pure-Go gonum BLAS by default, whose float32 products the step runs on
// kernels' packed AVX2/FMA micro-kernel where it has assembly; build with
// -tags openblas and CGO_LDFLAGS=-lopenblas to run them on OpenBLAS. With
// one OpenBLAS thread (the default, NFBO_BLAS_THREADS) gemm splits each
// large product over the cores itself (gemm.go): OpenBLAS's own idle
// threads spin and take cores from the element-wise loops between products.
package train
