package bo

import (
	"context"
	"encoding"
	"math/rand/v2"

	"github.com/nfbo/nfbo/rundir"
)

// Flow is the generative model: an invertible map between token sequences of length T and latents of size
// D = T·F. Implementations must be deterministic given their state and the rng passed in.
type Flow interface {
	// Shape returns T (positions) and F (latent features per position).
	Shape() (t, f int)
	// Encode writes the latents of B = len(tokens)/T sequences (tokens B×T) into dst (B×D).
	Encode(ctx context.Context, dst []float64, tokens []int) error
	// Decode writes the decoded token sequences of B = len(latents)/D latents (B×D) into dst (B×T). It is
	// autoregressive: a position's token depends only on the latent's positions up to it (TACS relies on it).
	Decode(ctx context.Context, dst []int, latents []float64) error
	// FineTune trains the flow for one epoch on B = len(tokens)/T sequences (B×T), drawing all its randomness
	// (shuffling, dequantisation noise) from rng.
	FineTune(ctx context.Context, tokens []int, rng *rand.Rand) error
}

// Checkpointer is a Flow whose state can be saved and restored. A run with a run directory requires it.
type Checkpointer interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Codec turns token sequences into molecules.
type Codec interface {
	// Canonical writes the canonical form of one length-T token sequence into dst (length T) and returns the
	// molecule's key (canonical SMILES), or ok = false when the sequence is not a valid molecule. It reads the
	// sequence up to its first Problem.Stop.
	Canonical(dst, tokens []int) (smiles string, ok bool)
}

// Featurizer gives the screened variant's surrogate its inputs in place of token counts (Problem.Features): a
// vector of Width values per molecule. chem/fingerprint's Morgan count fingerprints, with the Tanimoto kernel
// (gp.Tanimoto), are one.
type Featurizer interface {
	// Width returns the length of one molecule's vector.
	Width() int
	// Features writes into dst the vectors (B×Width) of B molecules: their keys smiles (Codec keys) and their
	// canonical token sequences tokens (B×T).
	Features(dst []float64, smiles []string, tokens []int) error
}

// Objective scores molecules. It must persist each evaluation it pays for before returning it.
type Objective interface {
	// Evaluate returns the score of each molecule (higher is better) and, per molecule, whether this call paid
	// for it rather than replaying an earlier evaluation (after a resume) or answering from a cache. It has the signature of
	// baseline.Objective's Evaluate, so one budgeted objective serves NF-BO and the baselines.
	Evaluate(ctx context.Context, smiles []string) (scores []float64, paid []bool, err error)
}

// Tracer is an Objective that keeps, with each evaluation it pays for, where the molecule came from (the
// evaluation log's rundir.Record.From). The optimiser gives it the batch's origins where it knows them.
type Tracer interface {
	// EvaluateFrom is Evaluate, with from[i] the origin of smiles[i].
	EvaluateFrom(ctx context.Context, smiles []string, from []rundir.Origin) (scores []float64, paid []bool, err error)
}

// CallCounter is an Objective that counts the calls it pays for itself, for an accounting finer than bo's
// "one call per new token sequence": with PMO's, two sequences that are the same molecule under another
// canonical form (RDKit's) cost one call. The optimiser then stops when Calls reaches Config.Budget, and a batch
// holds at most Budget − Calls molecules, so the objective's log ends with exactly the budget.
type CallCounter interface {
	// Calls returns the number of calls paid since the optimiser's first iteration, across resumes.
	Calls() int
}

// Surrogate is the model of the objective over feature vectors, which the variant chosen by Config.Variant
// decides: latents (D = T·F) in the reference (by default a GPSurrogate, the deep-kernel SVGP), token counts
// (TokenFeatureLen) or Problem.Features' vectors in the screened default (by default an ExactGPSurrogate). A
// Surrogate of one's own is given as Problem.Surrogate and sees the same inputs.
type Surrogate interface {
	// Fit trains the model for epochs passes over z (B×D) and y (B).
	Fit(ctx context.Context, z, y []float64, epochs int, rng *rand.Rand) error
	// Sample writes S = len(dst)/C joint posterior samples of y at C = len(z)/D points z (C×D) into dst (S×C).
	// It should return promptly, with an error that wraps ctx.Err(), once ctx is done.
	Sample(ctx context.Context, dst, z []float64, nSamples int, rng *rand.Rand) error
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Recorder receives progress once per iteration. An error stops the run.
type Recorder interface {
	Record(Progress) error
}
