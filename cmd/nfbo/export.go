package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/nfbo/nfbo/engine/onnx"
	"github.com/nfbo/nfbo/model"
)

func newExportCmd() *Command {
	c := &Command{
		UsageLine: "export [flags] -model DIR -out FILE.onnx",
		Short:     "export the flow's encoder and decoder as ONNX models",
		Long: `Export writes the SeqFlow of a model directory as two ONNX models (IR
version 8, opset 17, symbolic batch axis N, the model's sequence length T):
FILE.encode.onnx maps token ids "x" (int64 N×T) to latents "z" (float32
N×T×F) and per-position log-determinants "logdet" (float32 N×T), and
FILE.decode.onnx maps latents "z" to token ids "x" (int64 N×T) and the
data-side vectors "v" (float32 N×T×F). They compute what the pure-Go flow
computes, to float32 rounding; nfbo itself builds them in memory when it
uses ONNX Runtime, so exporting is only needed to use the flow elsewhere.

DIR is a model directory holding ` + model.CheckpointName + ` (or the checkpoint
file itself). Both files are written atomically.`,
		Flag: flag.NewFlagSet("export", flag.ContinueOnError),
	}
	modelDir := c.Flag.String("model", "", "model directory or checkpoint `file` (required)")
	out := c.Flag.String("out", "", "output `name`; .encode.onnx and .decode.onnx replace a trailing .onnx (required)")
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if *modelDir == "" || *out == "" {
			return Usagef(cmd, "export: -model and -out are required")
		}
		if len(args) != 0 {
			return Usagef(cmd, "export: unexpected arguments %q", args)
		}
		ck, err := model.LoadModelDir(*modelDir)
		if err != nil {
			return err
		}
		f, err := model.NewFlow(ck.Params)
		if err != nil {
			return fmt.Errorf("export: model %s: %w", *modelDir, err)
		}
		enc, dec, err := onnx.Export(f, *out)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.Stdout, "wrote %s\nwrote %s\n", enc, dec)
		return nil
	}
	return c
}
