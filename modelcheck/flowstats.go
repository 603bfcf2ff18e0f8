package modelcheck

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/nfbo/nfbo/bo/flowstats"
	"github.com/nfbo/nfbo/bo/gp"
	"github.com/nfbo/nfbo/chem/molfile"
	"github.com/nfbo/nfbo/chem/molseq"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

// FlowstatsSettings are the settings of Flowstats, the flags of "nfbo flowstats".
type FlowstatsSettings struct {
	// Model is the model directory; Data the molecules it was not trained on (SMILES lines or a CSV with a
	// smiles column), of which the first N are used.
	Model, Data string
	N           int
	// Anchors, when set, is a CSV of scored molecules whose best Top by the Task column are the locality
	// table's anchors; "" takes the first Top molecules of Data.
	Anchors, Task string
	Top           int
	// T is the sequence length of the prior samples and the locality table; NLLT the lengths at which the NLL
	// is measured.
	T    int
	NLLT []int
	// Samples is the number of prior samples.
	Samples int
	// Locality says how the anchors are perturbed (bo/flowstats.Locality).
	Locality flowstats.LocalityConfig
	// Backend runs the flow (engine/seqflow.Options.Backend); Seed seeds the samples and perturbations.
	Backend string
	Seed    uint64
}

// Flowstats measures the model as the optimiser's move operator (how well it decodes what it encodes, the
// lengths of its prior samples, its NLL per position at each length, the locality of bo.Perturb around
// anchors) and writes the tables in Markdown to stdout, and messages to stderr.
func Flowstats(ctx context.Context, stdout, stderr io.Writer, set FlowstatsSettings) error {
	ck, err := model.LoadModelDir(set.Model)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("flowstats: vocabulary of %s: %w", set.Model, err)
	}
	maxT := ck.Params.Config.MaxT
	for _, t := range append([]int{set.T}, set.NLLT...) {
		if t < 2 || t > maxT {
			return fmt.Errorf("flowstats: sequence length %d outside [2, %d] (the model's max_seq_len)", t, maxT)
		}
	}
	mols, err := readScored(stderr, set.Data, "", set.N, voc, maxT)
	if err != nil {
		return err
	}
	w := stdout
	fmt.Fprintf(w, "model %s: %d parameters, trained at T = %d; %d molecules of %s\n\n",
		set.Model, ck.Params.NumParams(), ck.Params.Config.T, len(mols), set.Data)
	if err := writeDecoding(ctx, w, ck.Params, voc, mols, set.T); err != nil {
		return err
	}
	flow, err := seqflow.New(ck, set.T, seqflow.Options{Backend: set.Backend, Warn: stderr})
	if err != nil {
		return fmt.Errorf("flowstats: model %s: %w", set.Model, err)
	}
	defer flow.Close()
	codec, err := molseq.New(voc, set.T)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(set.Seed, 0x666c6f77))
	if err := writeLengths(ctx, w, flow, codec, mols, set, rng); err != nil {
		return err
	}
	if err := writeNLL(ctx, w, ck.Params, mols, set.NLLT); err != nil {
		return err
	}
	anchors := mols
	if set.Anchors != "" {
		src, err := readScored(stderr, set.Anchors, set.Task, 1<<30, voc, maxT)
		if err != nil {
			return err
		}
		if err := writeDensityRank(ctx, w, ck.Params, src, set.Task, set.T); err != nil {
			return err
		}
		anchors = append([]molfile.Molecule(nil), src...)
		sort.SliceStable(anchors, func(i, j int) bool { return anchors[i].Score > anchors[j].Score })
	}
	return writeLocality(ctx, w, flow, codec, anchors, set, rng)
}

// readScored reads up to count molecules of path (and their task scores when task is set) as token sequences
// padded to the model's maxT, leaving out those the vocabulary cannot spell with one message to warn that counts them.
func readScored(warn io.Writer, path, task string, count int, voc *vocab.Vocab, maxT int) ([]molfile.Molecule, error) {
	skips := molfile.NewSkips("", nil)
	mols, _, hasScores, err := molfile.ReadMolecules(path, task, count, voc, maxT, skips)
	if err != nil {
		return nil, err
	}
	if task != "" && !hasScores {
		return nil, fmt.Errorf("flowstats: %s has no column %q", path, task)
	}
	if line := skips.Summary(len(mols)+skips.Len(), "the model's vocabulary", maxT); line != "" {
		fmt.Fprintf(warn, "flowstats: %s: %s\n", path, line)
	}
	return mols, nil
}

// writeDecoding writes how many of the molecules shorter than t the flow of p reconstructs at t, and the
// closest pair of token embeddings: a move operator must first give back what it encodes.
func writeDecoding(ctx context.Context, w io.Writer, p *model.Params, voc *vocab.Vocab, mols []molfile.Molecule, t int) error {
	var fit [][]int
	for _, m := range mols {
		if m.N < t {
			fit = append(fit, m.IDs[:t])
		}
	}
	atT := p.Clone()
	atT.Config.T = t
	recon, err := train.Reconstructed(ctx, atT, fit)
	if err != nil {
		return fmt.Errorf("flowstats: reconstruction: %w", err)
	}
	cos, ea, eb := train.ClosestEmbeddings(p)
	fmt.Fprintf(w, "Decoding at T = %d: %d of %d molecules (those shorter than T) reconstructed token for token; closest token embeddings %s and %s, cosine %.6f\n\n",
		t, recon, len(fit), voc.Token(ea), voc.Token(eb), cos)
	return nil
}

// writeLengths writes the table of the lengths of the data's molecules and of the prior samples' at set.T.
func writeLengths(ctx context.Context, w io.Writer, flow *seqflow.Flow, codec *molseq.Codec, mols []molfile.Molecule,
	set FlowstatsSettings, rng *rand.Rand) error {
	dataLen := make([]int, len(mols))
	for i, m := range mols {
		dataLen[i] = m.N
	}
	prior, invalid, err := flowstats.PriorLengths(ctx, flow, codec, set.Samples, vocab.Stop, rng)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Lengths of the canonical molecules (SELFIES tokens); %d of %d prior samples decode to no valid molecule:\n\n", invalid, set.Samples)
	fmt.Fprintln(w, "| lengths (tokens) | n | mean | std | min | q25 | median | q75 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range []struct {
		name string
		l    []int
	}{{"data", dataLen}, {fmt.Sprintf("prior samples, T = %d", set.T), prior}} {
		s := flowstats.SummariseLengths(r.l)
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f |\n",
			r.name, s.N, s.Mean, s.Std, s.Min, s.Q25, s.Median, s.Q75, s.Max)
	}
	return nil
}

// writeNLL writes the NLL per position at each length of ts, on the same molecules: those that fit the shortest.
func writeNLL(ctx context.Context, w io.Writer, p *model.Params, mols []molfile.Molecule, ts []int) error {
	minT := slices.Min(ts)
	var seqs [][]int
	for _, m := range mols {
		if m.N < minT {
			seqs = append(seqs, m.IDs)
		}
	}
	fmt.Fprintf(w, "\nNLL on the %d molecules shorter than %d tokens:\n\n", len(seqs), minT)
	fmt.Fprintln(w, "| T | molecules | NLL per position, all | NLL per position, molecule |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range ts {
		r, err := flowstats.NLLAt(ctx, p, t, seqs, vocab.Stop)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %d | %d | %.3f | %.3f |\n", t, r.Measured, r.All, r.Molecule)
	}
	return nil
}

// writeDensityRank writes how well the flow's log density at t ranks the task's scores of the molecules mols
// (those shorter than t), beside how well their lengths do: a density that ranked the scores would be a prior worth
// giving the GA's children (issue #59); one that only tracks the length is not.
func writeDensityRank(ctx context.Context, w io.Writer, p *model.Params, mols []molfile.Molecule, task string, t int) error {
	var x []int
	var score, length []float64
	for _, m := range mols {
		if m.N < t {
			x = append(x, m.IDs[:t]...)
			score = append(score, m.Score)
			length = append(length, float64(m.N))
		}
	}
	if len(score) < 2 {
		return fmt.Errorf("flowstats: fewer than 2 scored molecules shorter than T = %d", t)
	}
	atT := p.Clone()
	atT.Config.T = t
	flow, err := model.NewFlow(atT)
	if err != nil {
		return fmt.Errorf("flowstats: %w", err)
	}
	logp := make([]float64, len(score))
	if err := flow.LogProbTo(ctx, logp, nil, x, &model.Workspace{}); err != nil {
		return fmt.Errorf("flowstats: log density at T = %d: %w", t, err)
	}
	fmt.Fprintf(w, "\nDensity against %s on the %d scored molecules shorter than %d tokens (Spearman):\n\n", task, len(score), t)
	fmt.Fprintln(w, "| log density, score | length, score | log density, length |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| %.3f | %.3f | %.3f |\n", gp.Spearman(logp, score), gp.Spearman(length, score), gp.Spearman(logp, length))
	return nil
}

// writeLocality writes the locality table around the first set.Top anchors that fit set.T.
func writeLocality(ctx context.Context, w io.Writer, flow *seqflow.Flow, codec *molseq.Codec, anchors []molfile.Molecule,
	set FlowstatsSettings, rng *rand.Rand) error {
	tok := make([]int, 0, set.Top*set.T)
	var picked int
	for _, m := range anchors {
		if picked == set.Top {
			break
		}
		if m.N >= set.T {
			continue // does not fit T with its stop
		}
		tok = append(tok, m.IDs[:set.T]...)
		picked++
	}
	if picked == 0 {
		return fmt.Errorf("flowstats: no anchor shorter than T = %d", set.T)
	}
	rows, err := flowstats.Locality(ctx, flow, codec, tok, vocab.Stop, set.Locality, rng)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("the first %d molecules of %s", picked, set.Data)
	if set.Anchors != "" {
		what = fmt.Sprintf("the best %d molecules by %s of %s", picked, set.Task, set.Anchors)
	}
	fmt.Fprintf(w, "\nlocality at T = %d: anchors %s (mean length %.1f tokens), %d candidates each, each dimension perturbed with probability %g within ±4L\n\n",
		set.T, what, rows[0].AnchorLen, rows[0].Candidates/picked, set.Locality.Prob)
	fmt.Fprintln(w, "| move | candidates decoding to the anchor | invalid | distinct others | mean token edits | length kept |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		move := fmt.Sprintf("trust region L = %g", r.Length)
		if r.Length == 0 {
			move = fmt.Sprintf("regrown, %.0f %% of the tokens kept", 100*r.Keep)
		}
		fmt.Fprintf(w, "| %s | %d / %d | %d | %d | %.1f | %.0f %% |\n", move, r.Same, r.Candidates, r.Invalid, r.Distinct,
			r.MeanEdits, 100*r.LengthKept)
	}
	return nil
}
