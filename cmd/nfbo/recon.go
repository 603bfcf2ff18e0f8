package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
	"github.com/nfbo/nfbo/chem/vocab"
	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

func newReconCmd() *Command {
	c := &Command{
		UsageLine: "recon [-format auto|smiles|selfies] [-backend auto|go|ort|cuda] [-batch N] [-finetune FILE2 [-epochs N] [-freeze-embed]] -model DIR FILE",
		Short:     "check that the flow reconstructs molecules token for token",
		Long: `Recon encodes every molecule of FILE into the SeqFlow latent space and
decodes it back, then prints the fraction reconstructed token for token and
lists every molecule that was not.

FILE has one molecule per line, SMILES or SELFIES (-format auto takes a line
made only of bracketed symbols for SELFIES); blank lines are skipped. SMILES are converted with
the selfies 2.0.0 encoder. DIR is a model directory holding ` + model.CheckpointName + `
(or the checkpoint file itself); its vocabulary and sequence length T apply.

-backend chooses who runs the flow: go (pure Go), ort (ONNX Runtime, an
error if its library cannot be loaded), auto (ONNX Runtime when its
library is found, else pure Go with a warning) or cuda (GPU 0; an error
without one). The ONNX Runtime library is
$NFBO_ORT_LIB or third_party/onnxruntime/lib/libonnxruntime.so.1.

A molecule that cannot be encoded (invalid SMILES, a token outside the
vocabulary, more than T−1 tokens) is reported on standard error as
FILE:LINE: reason and left out of the fraction. The exit status is 0 when
every molecule was encoded and reconstructed, 1 otherwise.

-finetune FILE2 first fine-tunes the flow as the optimiser does after new
objective calls (one epoch over the molecules of FILE2, same format rules,
batches of 32, a fresh Adam, random state from -seed) and then checks the
fine-tuned flow: invertibility must survive every fine-tune. -epochs N
fine-tunes N epochs, reporting after each the closest pair of token
embeddings and any token the decoder takes for another (two embeddings
merged: molecules with it cannot reconstruct); -freeze-embed keeps the
embeddings fixed, as the optimiser's screened variant does.`,
		Flag: flag.NewFlagSet("recon", flag.ContinueOnError),
	}
	modelDir := c.Flag.String("model", "", "model directory or checkpoint `file` (required)")
	format := c.Flag.String("format", "auto", "input format: auto, smiles or selfies")
	batch := c.Flag.Int("batch", 256, "molecules encoded and decoded per batch")
	backend := c.Flag.String("backend", "auto", "who runs the flow: auto, go, ort or cuda (the GPU)")
	finetune := c.Flag.String("finetune", "", "fine-tune one epoch on the molecules of this `file` first")
	seed := c.Flag.Uint64("seed", 1, "random seed of -finetune")
	epochs := c.Flag.Int("epochs", 1, "epochs of -finetune")
	freeze := c.Flag.Bool("freeze-embed", false, "keep the token embeddings fixed in -finetune")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if *modelDir == "" {
			return Usagef(cmd, "recon: -model is required")
		}
		if len(args) != 1 {
			return Usagef(cmd, "recon: want exactly one FILE, got %d arguments", len(args))
		}
		if *format != "auto" && *format != "smiles" && *format != "selfies" {
			return Usagef(cmd, "recon: -format %q: want auto, smiles or selfies", *format)
		}
		if *backend != "auto" && *backend != "go" && *backend != "ort" && *backend != "cuda" {
			return Usagef(cmd, "recon: -backend %q: want auto, go, ort or cuda", *backend)
		}
		if *batch < 1 {
			return Usagef(cmd, "recon: -batch %d: must be positive", *batch)
		}
		if *epochs < 1 {
			return Usagef(cmd, "recon: -epochs %d: must be positive", *epochs)
		}
		return runRecon(ctx, cmd, reconArgs{model: *modelDir, file: args[0], format: *format, backend: *backend,
			batch: *batch, finetune: *finetune, seed: *seed, epochs: *epochs, freeze: *freeze})
	}
	return c
}

// reconItem is one encodable molecule of the input.
type reconItem struct {
	line    int
	text    string // the input line
	selfies string
	ids     []int // T ids
}

// reconArgs are recon's flags and argument.
type reconArgs struct {
	model, file, format, backend string
	batch                        int
	finetune                     string // molecules to fine-tune on first; "" for none
	seed                         uint64
	epochs                       int  // of finetune
	freeze                       bool // fine-tune with the embeddings fixed
}

func runRecon(ctx context.Context, cmd *Command, a reconArgs) error {
	file := a.file
	ck, err := model.LoadModelDir(a.model)
	if err != nil {
		return err
	}
	voc, err := vocab.New(ck.Vocab)
	if err != nil {
		return fmt.Errorf("recon: model %s: %w", a.model, err)
	}
	cfg := ck.Params.Config
	flow, err := seqflow.New(ck, cfg.T, seqflow.Options{Backend: a.backend, Warn: cmd.Stderr,
		Train: train.Options{FreezeEmbeddings: a.freeze}})
	if err != nil {
		return fmt.Errorf("recon: model %s: %w", a.model, err)
	}
	defer flow.Close()
	if a.finetune != "" {
		if err := reconFineTune(ctx, cmd, flow, voc, a, cfg.T); err != nil {
			return err
		}
	}
	fh, err := os.Open(file)
	if err != nil {
		return err
	}
	defer fh.Close()

	out := bufio.NewWriter(cmd.Stdout)
	defer out.Flush()
	var (
		pending        []reconItem
		total, ok, bad int
	)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		B, T := len(pending), cfg.T
		x := make([]int, 0, B*T)
		for _, it := range pending {
			x = append(x, it.ids...)
		}
		z := make([]float64, B*T*cfg.F)
		if err := flow.Encode(ctx, z, x); err != nil {
			return err
		}
		got := make([]int, B*T)
		if err := flow.Decode(ctx, got, z); err != nil {
			return err
		}
		for i, it := range pending {
			total++
			if equalInts(got[i*T:(i+1)*T], it.ids) {
				ok++
				continue
			}
			fmt.Fprintf(out, "%s:%d: not reconstructed: %s -> %s\n", file, it.line, it.selfies, voc.DecodeString(got[i*T:(i+1)*T]))
		}
		pending = pending[:0]
		return nil
	}

	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		it, err := reconParse(voc, text, a.format, cfg.T)
		if err != nil {
			bad++
			out.Flush() // keep stdout and stderr in step for a reader of both
			fmt.Fprintf(cmd.Stderr, "%s:%d: %v\n", file, line, err)
			continue
		}
		it.line = line
		pending = append(pending, it)
		if len(pending) == a.batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("recon: read %s: %w", file, err)
	}
	if err := flush(); err != nil {
		return err
	}
	frac := 0.0
	if total > 0 {
		frac = float64(ok) / float64(total)
	}
	fmt.Fprintf(out, "reconstructed %d of %d molecules (%.4f)", ok, total, frac)
	if bad > 0 {
		fmt.Fprintf(out, "; %d lines could not be encoded", bad)
	}
	fmt.Fprintln(out)
	if ok != total || bad > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// reconFineTune fine-tunes flow for a.epochs epochs on the molecules of a.finetune.
func reconFineTune(ctx context.Context, cmd *Command, flow *seqflow.Flow, voc *vocab.Vocab, a reconArgs, T int) error {
	data, err := os.ReadFile(a.finetune)
	if err != nil {
		return fmt.Errorf("recon: -finetune: %w", err)
	}
	var tokens []int
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(line)
		if text == "" {
			continue
		}
		it, err := reconParse(voc, text, a.format, T)
		if err != nil {
			return fmt.Errorf("recon: -finetune %s:%d: %w", a.finetune, i+1, err)
		}
		tokens = append(tokens, it.ids...)
		n++
	}
	if n == 0 {
		return fmt.Errorf("recon: -finetune %s: no molecules", a.finetune)
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(a.seed, 0))
	for ep := 1; ep <= a.epochs; ep++ {
		if err := flow.FineTune(ctx, tokens, rng); err != nil {
			return fmt.Errorf("recon: -finetune %s, epoch %d: %w", a.finetune, ep, err)
		}
		if a.epochs == 1 {
			break // the check below is for watching a long fine-tune
		}
		cos, i, j := train.ClosestEmbeddings(flow.Params())
		line := fmt.Sprintf("recon: epoch %d (%d steps): closest embeddings %s %s cos %.8f", ep, ep*((n+train.DefaultFineTuneBatch-1)/train.DefaultFineTuneBatch),
			voc.Token(i), voc.Token(j), cos)
		if tok, as := flow.ConfusedToken(); tok >= 0 {
			line += fmt.Sprintf("; decodes %s as %s", voc.Token(tok), voc.Token(as))
		}
		fmt.Fprintln(cmd.Stderr, line)
	}
	what := "one epoch"
	if a.epochs > 1 {
		what = fmt.Sprintf("%d epochs", a.epochs)
	}
	fmt.Fprintf(cmd.Stderr, "recon: fine-tuned %s on %d molecules of %s in %.1fs\n", what, n, a.finetune, time.Since(start).Seconds())
	return nil
}

// reconParse turns one input line into ids, converting SMILES to SELFIES
// when the format says so.
func reconParse(voc *vocab.Vocab, text, format string, T int) (reconItem, error) {
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
	return reconItem{text: text, selfies: sf, ids: ids}, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
