package train

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/nfbo/nfbo/model"
)

// Training can make the flow useless as a decoder while its NLL improves: pulling the embeddings of two
// tokens together raises the density, and once their cosine is near 1 the nearest-embedding decoding confuses
// them (a continued pretraining of the shipped model with random padded lengths merged [C] and [Cl] and
// reconstructed 3 of 200 molecules; BENCHMARKS.md). Pretraining therefore checks both at every validation.

// MergedCos is the cosine from which two token embeddings count as merged: 1 − 1e−7, about the rounding error of
// a float32 cosine, so the nearest-embedding decoding may pick either token. BO-style fine-tuning of the shipped
// model (nfbo recon -epochs, BENCHMARKS.md) had [C] and [Cl] at 0.99999962 with no token confused, and at
// 0.99999990 seven steps later decoding [Cl] as [C]; the threshold sits above the shipped model's closest pair,
// [Branch2] and [NH1+1] at 0.99999946, which reconstructs.
const MergedCos = 0.9999999

// ClosestEmbeddings returns the largest cosine between the embeddings of two distinct tokens of p, and the
// two token ids.
func ClosestEmbeddings(p *model.Params) (cos float64, a, b int) {
	V, F := p.Config.V, p.Config.F
	en := normalisedEmbeddings(p)
	cos, a, b = math.Inf(-1), -1, -1
	for i := range V {
		ei := en[i*F : (i+1)*F]
		for j := i + 1; j < V; j++ {
			var d float64
			for k, x := range en[j*F : (j+1)*F] {
				d += ei[k] * x
			}
			if d > cos {
				cos, a, b = d, i, j
			}
		}
	}
	return cos, a, b
}

// Reconstructed returns how many of seqs (each of length p.Config.T) the flow of p decodes back token for
// token from their latents, in pure Go on every core.
func Reconstructed(ctx context.Context, p *model.Params, seqs [][]int) (int, error) {
	fl, err := model.NewFlow(p)
	if err != nil {
		return 0, err
	}
	T, F := p.Config.T, p.Config.F
	x := make([]int, 0, len(seqs)*T)
	for i, s := range seqs {
		if len(s) != T {
			return 0, fmt.Errorf("train: reconstruct: sequence %d has %d tokens, want %d", i, len(s), T)
		}
		x = append(x, s...)
	}
	z := make([]float32, len(seqs)*T*F)
	var ws model.Workspace
	if err := fl.EncodeTo(ctx, z, x, &ws); err != nil {
		return 0, err
	}
	got := make([]int, len(x))
	if err := fl.DecodeTo(ctx, got, z, &ws); err != nil {
		return 0, err
	}
	n := 0
	for i := range seqs {
		if slices.Equal(got[i*T:(i+1)*T], x[i*T:(i+1)*T]) {
			n++
		}
	}
	return n, nil
}

// normalisedEmbeddings returns E/‖E‖ row by row in float64, [V, F].
func normalisedEmbeddings(p *model.Params) []float64 {
	V, F := p.Config.V, p.Config.F
	out := make([]float64, V*F)
	for v := range V {
		row := p.Embed.Data[v*F : (v+1)*F]
		var s float64
		for _, x := range row {
			s += float64(x) * float64(x)
		}
		n := math.Sqrt(s)
		for i, x := range row {
			out[v*F+i] = float64(x) / n
		}
	}
	return out
}
