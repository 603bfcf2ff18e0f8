//go:build !cgo

package gpuflow

import (
	"context"

	"github.com/nfbo/nfbo/engine/cuda"
	"github.com/nfbo/nfbo/model"
)

// Engine is an open GPU; a build without cgo cannot open one.
type Engine struct{}

// Open returns cuda.ErrNoCUDA in a build without cgo.
func Open(cuda.Env, int) (*Engine, error) { return nil, cuda.ErrNoCUDA }

// Device describes the GPU.
func (*Engine) Device() cuda.DeviceInfo { return cuda.DeviceInfo{} }

// Close does nothing.
func (*Engine) Close() error { return nil }

// LatentCodec is a flow on the GPU; a build without cgo cannot make one.
type LatentCodec struct{}

var _ model.LatentCodec = (*LatentCodec)(nil)

// NewLatentCodec returns cuda.ErrNoCUDA in a build without cgo.
func (*Engine) NewLatentCodec(*model.Flow, int) (*LatentCodec, error) { return nil, cuda.ErrNoCUDA }

// Backend names the implementation.
func (*LatentCodec) Backend() string { return "cuda" }

// Close does nothing.
func (*LatentCodec) Close() error { return nil }

// EncodeTo returns cuda.ErrNoCUDA.
func (*LatentCodec) EncodeTo(context.Context, []float32, []int) error { return cuda.ErrNoCUDA }

// DecodeTo returns cuda.ErrNoCUDA.
func (*LatentCodec) DecodeTo(context.Context, []int, []float32) error { return cuda.ErrNoCUDA }

// InverseTo returns cuda.ErrNoCUDA.
func (*LatentCodec) InverseTo(context.Context, []float32, []float32) error { return cuda.ErrNoCUDA }
