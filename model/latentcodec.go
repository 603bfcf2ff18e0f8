package model

import (
	"context"
	"sync"
)

// LatentCodec encodes token sequences into latents and decodes latents into tokens, in batch: what runs a
// flow for the optimiser (engine/seqflow), whether here in pure Go (GoLatentCodec), on ONNX Runtime
// (engine/ort.Runner) or on a GPU (engine/gpuflow.LatentCodec). Token ids x are B×T, latents z are B×T×F,
// row-major. It is not the token codec of package bo (tokens to molecules).
type LatentCodec interface {
	// EncodeTo writes the latents of x to z.
	EncodeTo(ctx context.Context, z []float32, x []int) error
	// DecodeTo writes the token ids of z to x.
	DecodeTo(ctx context.Context, x []int, z []float32) error
	// Backend names the implementation: "go", "onnxruntime" or "cuda".
	Backend() string
	// Close releases the codec's resources.
	Close() error
}

// GoLatentCodec is the pure-Go LatentCodec: a Flow with a reused Workspace. It is safe for concurrent use
// (calls are serialised; each already uses every worker).
type GoLatentCodec struct {
	f  *Flow
	mu sync.Mutex
	ws Workspace
}

var _ LatentCodec = (*GoLatentCodec)(nil)

// NewGoLatentCodec returns the pure-Go codec of f using workers goroutines (0: GOMAXPROCS).
func NewGoLatentCodec(f *Flow, workers int) *GoLatentCodec {
	return &GoLatentCodec{f: f, ws: Workspace{Workers: workers}}
}

// EncodeTo implements LatentCodec.
func (c *GoLatentCodec) EncodeTo(ctx context.Context, z []float32, x []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f.EncodeTo(ctx, z, x, &c.ws)
}

// DecodeTo implements LatentCodec.
func (c *GoLatentCodec) DecodeTo(ctx context.Context, x []int, z []float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f.DecodeTo(ctx, x, z, &c.ws)
}

// DecodeVectorsTo writes the token ids x of the latents z and, when v is not nil, the data-side vectors
// (B×T×F, as Flow.InverseTo), under one lock.
func (c *GoLatentCodec) DecodeVectorsTo(ctx context.Context, x []int, v, z []float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v != nil {
		if err := c.f.InverseTo(ctx, v, z, &c.ws); err != nil {
			return err
		}
	}
	return c.f.DecodeTo(ctx, x, z, &c.ws)
}

// Backend returns "go".
func (c *GoLatentCodec) Backend() string { return "go" }

// Close implements LatentCodec; it has nothing to release.
func (c *GoLatentCodec) Close() error { return nil }
