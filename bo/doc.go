// Package bo is NF-BO's optimiser: Bayesian optimisation in the latent space of a normalizing flow over token
// sequences (Lee et al., ICLR 2025, Algorithm 1), following the reference implementation mlvlab/NFBO.
//
// One iteration (see Optimizer.iterate), of the reference variant:
//
//  1. fine-tune the flow on the 10 newest and the top TopK (1000) sequences every TrainEvery new objective calls;
//  2. draw N anchors from the data, P(i) ∝ exp(minmax(y)ᵢ/0.01) without replacement (or the N best);
//  3. re-encode the anchors with the current flow: their latents are the trust-region centres;
//  4. per anchor, C candidates in the box centre ± 8·L/2, each latent dimension replaced with probability 0.1,
//     or with TACS min(κ·s_t, 1) from the PMI importance s_t of its token (κ = 0.1·T);
//  5. per anchor, q distinct candidates by Thompson sampling from joint posterior samples of the surrogate;
//  6. decode, canonicalise, drop invalid molecules and every molecule already evaluated;
//  7. evaluate (each paid evaluation is on disk before the optimiser's state changes);
//  8. update the trust-region length (novelty rule, or TuRBO's success/failure rule) and, optionally, the
//     surrogate; write a checkpoint.
//
// The screened variant, the default, swaps steps 5 and 6: it decodes every candidate, adds GA children of the
// best molecules, and picks q new molecules per anchor by Thompson sampling of an exact GP on token counts,
// refitted after every iteration. The two variants are the two implementations of one seam (proposer: steps
// 3-6 and the surrogate's fit), chosen once from Config.Variant, each a type of its own file (reference.go,
// screened.go) with its own settings (ReferenceSettings, ScreenedSettings), checks and per-iteration counts.
//
// bo declares the small interfaces it needs from its collaborators: Flow (the generative model), Codec (token
// sequences to molecules), Objective (scores), Surrogate (fit and joint posterior samples) and Recorder
// (progress). The surrogate itself is in bo/gp, the Sobol generator in bo/sobol.
//
// Axes: B batch, T positions, F features per token, D = T·F latent size, N anchors (trust regions), C candidates
// per anchor, q proposals per anchor, S posterior samples. Matrices are flat row-major slices.
package bo
