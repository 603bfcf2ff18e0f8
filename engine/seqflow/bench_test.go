package seqflow_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/nfbo/nfbo/engine/seqflow"
	"github.com/nfbo/nfbo/engine/train"
	"github.com/nfbo/nfbo/model"
)

// BenchmarkFineTune times the optimiser's flow update at the guacamol-500
// setting: one epoch over 320 sequences (10 batches of 32; a 100 + 500 run
// fine-tunes on its 10 newest points plus its best up to 1,000, so 110 to 610
// sequences) of the shipped model at T = 88, through the trainer's step
// (engine/step on the CPU), with the token embeddings trained or frozen
// (embed=frozen, the optimiser's default), on pure-Go decoding (no ONNX
// Runtime session to rebuild).
func BenchmarkFineTune(b *testing.B) {
	ck := shippedModel(b)
	const T, n = 88, 320
	tokens := seqs(rand.New(rand.NewPCG(1, 1)), n, T, ck.Params.Config.V)
	for _, frozen := range []bool{true, false} {
		embed := "trained"
		if frozen {
			embed = "frozen"
		}
		b.Run(fmt.Sprintf("embed=%s/T=%d/seqs=%d", embed, T, n), func(b *testing.B) {
			opts := train.Options{FreezeEmbeddings: frozen}
			f, err := seqflow.New(ck, T, seqflow.Options{Backend: "go", Train: opts})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rng := rand.New(rand.NewPCG(2, 2))
			ctx := context.Background()
			if err := f.FineTune(ctx, tokens[:32*T], rng); err != nil { // allocates the step
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := f.FineTune(ctx, tokens, rng); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "seq/s")
		})
	}
}

// BenchmarkCodec times encoding and decoding as the optimiser calls them, at the guacamol-500 setting's T = 88
// with the shipped model, 1,000 sequences (a trust region's candidates; decoded in calls of rows sequences), on
// each backend this machine has: pure Go (backend=go, the products on kernels.MulPackedTo where it has assembly) and ONNX Runtime (backend=ort).
// Decoding starts from the encoded latents plus N(0, 0.1²) noise, as perturbed anchors are.
func BenchmarkCodec(b *testing.B) {
	ck := shippedModel(b)
	const T, n = 88, 1000
	tokens := seqs(rand.New(rand.NewPCG(1, 1)), n, T, ck.Params.Config.V)
	for _, backend := range []string{"go", "ort"} {
		f, err := seqflow.New(ck, T, seqflow.Options{Backend: backend})
		if err != nil {
			b.Logf("backend %s: %v", backend, err)
			continue
		}
		ctx := context.Background()
		d := T * ck.Params.Config.F
		lat := make([]float64, n*d)
		if err := f.Encode(ctx, lat, tokens); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range lat {
			lat[i] += 0.1 * rng.NormFloat64()
		}
		dec, enc := make([]int, n*T), make([]float64, n*d)
		b.Run(fmt.Sprintf("backend=%s/op=encode/T=%d/seqs=%d", backend, T, n), func(b *testing.B) {
			for range b.N {
				if err := f.Encode(ctx, enc, tokens); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "seq/s")
		})
		// rows=125 is a trust region's chunk under -candidate-target, decoded alone; rows=1000 the same chunk of
		// eight trust regions in one call, as bo's lookahead decodes them.
		for _, rows := range []int{125, n} {
			b.Run(fmt.Sprintf("backend=%s/op=decode/T=%d/seqs=%d/rows=%d", backend, T, n, rows), func(b *testing.B) {
				for range b.N {
					for off := 0; off < n; off += rows {
						if err := f.Decode(ctx, dec[off*T:(off+rows)*T], lat[off*d:(off+rows)*d]); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "seq/s")
			})
		}
		f.Close()
	}
}

// shippedModel loads data/models/small, skipping the benchmark where it is missing.
func shippedModel(b *testing.B) *model.Checkpoint {
	ck, err := model.LoadCheckpoint(filepath.Join("..", "..", "data", "models", "small", model.CheckpointName))
	if err != nil {
		b.Skip("shipped model not found:", err)
	}
	return ck
}
