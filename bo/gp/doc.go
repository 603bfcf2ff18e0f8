// Package gp holds the NF-BO surrogate: a sparse variational Gaussian process (SVGP) with a deep kernel, in
// float64 with analytic gradients for every parameter.
//
// The model follows the reference's GPModelDKL (mlvlab/NFBO surrogate_model/model/deepGP/ppgpr.py) on gpytorch
// 1.8.1:
//
//	φ(x)   = swish(W2·swish(W1·x + b1) + b2)            feature net D → P → P (P = 64), swish(h) = h·σ(h)
//	k(a,b) = s·exp(−‖a−b‖² / (2ℓ²))                     scaled RBF on features, one lengthscale
//	Kuu    = k(Z,Z) + εu·I,  L = chol(Kuu)              Z: M×P inducing points in feature space, εu = 1e-3
//	q(v)   = N(m, S), S = R·Rᵀ, R lower triangular     whitened: u − μ = L·v, prior v ~ N(0, I)
//	mean(x) = μ + k(x,Z)·L⁻ᵀ·m
//	var(x)  = s + εp − aᵀa + aᵀ·S·a,  a = L⁻¹·k(Z,x)   εp = 1e-4
//	y | f  ~ N(f, σ²),  σ² = floor + softplus(ρσ)       floor = 1e-4
//
// s, ℓ are softplus of raw parameters (raw 0 gives 0.693, gpytorch's start). The loss is the negative
// predictive log likelihood (gpytorch PredictiveLogLikelihood) of a minibatch of B points,
//
//	loss = −(1/B)·Σᵢ log N(yᵢ; mean(xᵢ), var(xᵢ) + σ²) + KL(q(v) ‖ N(0, I)) / numData,
//
// with numData = B as the reference does (KLBatch), or numData = N, the size of the whole training set, the
// standard ELBO scaling (KLData). The variational ELBO's expected log likelihood is offered as LossELBO.
//
// Every parameter lives in one flat float64 vector (see Layout), so Adam, gradient clipping, checkpoints and
// finite-difference checks treat all of them alike. Gradients are written by hand, the Cholesky backward by the
// symmetric formula of Murray (2016, "Differentiation of the Cholesky decomposition", eq. 10):
// Σ̄ = sym(L⁻ᵀ·Φ(Lᵀ·L̄)·L⁻¹), Φ taking the lower triangle with the diagonal halved.
//
// The feature net is written by hand in float64 rather than in gorgonia (go_stack.md's bridge): measured on
// the same MLP, gorgonia float32 costs 1.4–1.7× the CPU before the extra forward pass the bridge needs, fixes
// the batch shape per compiled graph (every minibatch size and candidate-set size would need its own graph),
// and keeps its Adam state private; float64 also lets the finite-difference checks cover the whole loss.
// See BENCHMARKS.md (## Optimiser).
//
// Linear algebra goes through gonum's blas64, blocked (tri.go) so that the flops land in Dgemm. A program that
// calls blas64.Use(netlib.Implementation{}) (the openblas build tag elsewhere) runs all of it on OpenBLAS;
// this package never selects a BLAS itself.
package gp
