package modelcheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/internal/textfile"
	"github.com/nfbo/nfbo/model"
)

// ReconSettings are the settings of Recon, the flags and argument of "nfbo recon".
type ReconSettings struct {
	// Model is the model directory or checkpoint file; File the molecules, one per line.
	Model, File string
	// Format is how a line is read: "smiles", "selfies", or "auto" (SELFIES when selfies.LooksLike).
	Format string
	// Backend runs the flow (engine/seqflow.Options.Backend); Batch is the molecules encoded and decoded at once.
	Backend string
	Batch   int
	// FineTune, when set, is a file of molecules (same Format) the flow is first fine-tuned on, Epochs epochs,
	// as the optimiser fine-tunes it, with the random state from Seed and the embeddings fixed when
	// FreezeEmbed is set.
	FineTune    string
	Epochs      int
	Seed        uint64
	FreezeEmbed bool
}

// ReconCounts are what Recon found.
type ReconCounts struct {
	// OK of Total encoded molecules decoded back token for token; Bad lines could not be encoded.
	OK, Total, Bad int
}

// All reports whether every line was encoded and reconstructed.
func (c ReconCounts) All() bool { return c.OK == c.Total && c.Bad == 0 }

// reconItem is one encodable molecule of the input.
type reconItem struct {
	line    int
	selfies string
	ids     []int // T ids
}

// Recon encodes every molecule of set.File into the flow's latent space and decodes it back (after
// fine-tuning the flow when set.FineTune says so), writing each molecule not reconstructed and then the
// fraction reconstructed to stdout, and each line that cannot be encoded to stderr as FILE:LINE: reason.
func Recon(ctx context.Context, stdout, stderr io.Writer, set ReconSettings) (ReconCounts, error) {
	var c ReconCounts
	ck, err := model.LoadModelDir(set.Model)
	if err != nil {
		return c, err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return c, fmt.Errorf("recon: model %s: %w", set.Model, err)
	}
	cfg := ck.Params.Config
	flow, err := seqflow.New(ck, cfg.T, seqflow.Options{Backend: set.Backend, Warn: stderr,
		Train: train.Options{FreezeEmbeddings: set.FreezeEmbed}})
	if err != nil {
		return c, fmt.Errorf("recon: model %s: %w", set.Model, err)
	}
	defer flow.Close()
	if set.FineTune != "" {
		if err := fineTune(ctx, stderr, flow, voc, set, cfg.T); err != nil {
			return c, err
		}
	}
	fh, err := textfile.Open(set.File)
	if err != nil {
		return c, err
	}
	defer fh.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var pending []reconItem
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := reconstruct(ctx, flow, voc, pending, &c, func(it reconItem, got string) {
			fmt.Fprintf(out, "%s:%d: not reconstructed: %s -> %s\n", set.File, it.line, it.selfies, got)
		})
		pending = pending[:0]
		return err
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		line++
		text, _ := smiles.FirstField(sc.Text())
		if text == "" {
			continue
		}
		it, err := parseLine(voc, text, set.Format, cfg.T)
		if err != nil {
			c.Bad++
			out.Flush() // keep stdout and stderr in step for a reader of both
			fmt.Fprintf(stderr, "%s:%d: %v\n", set.File, line, err)
			continue
		}
		it.line = line
		if pending = append(pending, it); len(pending) == set.Batch {
			if err := flush(); err != nil {
				return c, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("recon: read %s: %w", set.File, err)
	}
	if err := flush(); err != nil {
		return c, err
	}
	if c.Total == 0 && c.Bad == 0 {
		return c, fmt.Errorf("recon: %s: no molecules", set.File)
	}
	frac := 0.0
	if c.Total > 0 {
		frac = float64(c.OK) / float64(c.Total)
	}
	fmt.Fprintf(out, "reconstructed %d of %d molecules (%.4f)", c.OK, c.Total, frac)
	if c.Bad > 0 {
		fmt.Fprintf(out, "; %d lines could not be encoded", c.Bad)
	}
	fmt.Fprintln(out)
	return c, out.Flush()
}

// reconstruct encodes and decodes the batch, counting it in c and calling failed with each molecule not
// reconstructed and what it decoded to.
func reconstruct(ctx context.Context, flow *seqflow.Flow, voc *vocab.Vocab, batch []reconItem, c *ReconCounts, failed func(reconItem, string)) error {
	B, T := len(batch), len(batch[0].ids)
	_, F := flow.Shape()
	x := make([]int, 0, B*T)
	for _, it := range batch {
		x = append(x, it.ids...)
	}
	z := make([]float64, B*T*F)
	if err := flow.Encode(ctx, z, x); err != nil {
		return err
	}
	got := make([]int, B*T)
	if err := flow.Decode(ctx, got, z); err != nil {
		return err
	}
	for i, it := range batch {
		c.Total++
		if slices.Equal(got[i*T:(i+1)*T], it.ids) {
			c.OK++
			continue
		}
		failed(it, voc.DecodeString(got[i*T:(i+1)*T]))
	}
	return nil
}

// fineTune fine-tunes flow for set.Epochs epochs on the molecules of set.FineTune, reporting on stderr.
func fineTune(ctx context.Context, stderr io.Writer, flow *seqflow.Flow, voc *vocab.Vocab, set ReconSettings, T int) error {
	f, err := textfile.Open(set.FineTune)
	if err != nil {
		return fmt.Errorf("recon: -finetune: %w", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("recon: -finetune: %s: %w", set.FineTune, err)
	}
	var tokens []int
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		text, _ := smiles.FirstField(line)
		if text == "" {
			continue
		}
		it, err := parseLine(voc, text, set.Format, T)
		if err != nil {
			return fmt.Errorf("recon: -finetune %s:%d: %w", set.FineTune, i+1, err)
		}
		tokens = append(tokens, it.ids...)
		n++
	}
	if n == 0 {
		return fmt.Errorf("recon: -finetune %s: no molecules", set.FineTune)
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(set.Seed, 0))
	for ep := 1; ep <= set.Epochs; ep++ {
		if err := flow.FineTune(ctx, tokens, rng); err != nil {
			return fmt.Errorf("recon: -finetune %s, epoch %d: %w", set.FineTune, ep, err)
		}
		if set.Epochs == 1 {
			break // the check below is for watching a long fine-tune
		}
		cos, i, j := train.ClosestEmbeddings(flow.Params())
		line := fmt.Sprintf("recon: epoch %d (%d steps): closest embeddings %s %s cos %.8f", ep, ep*((n+train.DefaultFineTuneBatch-1)/train.DefaultFineTuneBatch),
			voc.Token(i), voc.Token(j), cos)
		if tok, as := flow.ConfusedToken(); tok >= 0 {
			line += fmt.Sprintf("; decodes %s as %s", voc.Token(tok), voc.Token(as))
		}
		fmt.Fprintln(stderr, line)
	}
	what := "one epoch"
	if set.Epochs > 1 {
		what = fmt.Sprintf("%d epochs", set.Epochs)
	}
	fmt.Fprintf(stderr, "recon: fine-tuned %s on %d molecules of %s in %.1fs\n", what, n, set.FineTune, time.Since(start).Seconds())
	return nil
}

// parseLine turns one input line into T ids, converting SMILES to SELFIES when the format says so.
func parseLine(voc *vocab.Vocab, text, format string, T int) (reconItem, error) {
	sf := text
	if format == "smiles" || (format == "auto" && !selfies.LooksLike(text)) {
		var err error
		sf, err = selfies.Encode(text)
		if err != nil {
			return reconItem{}, fmt.Errorf("SMILES %s: %w", smiles.Quote(text), err)
		}
	}
	tokens, err := selfies.Split(sf)
	if err != nil {
		return reconItem{}, fmt.Errorf("SELFIES %s: %w", smiles.Quote(sf), err)
	}
	ids, err := voc.Encode(nil, tokens, T)
	if err != nil {
		var ee *vocab.EncodeError
		if errors.As(err, &ee) {
			ee.Molecule = sf
		}
		return reconItem{}, err
	}
	return reconItem{selfies: sf, ids: ids}, nil
}
