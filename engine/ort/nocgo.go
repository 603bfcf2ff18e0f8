//go:build !cgo

package ort

import (
	"context"
	"fmt"

	"github.com/nfbo/nfbo/model"
)

// Runner is unavailable in builds without cgo; NewRunner always fails with
// ErrUnavailable, so Open falls back to model.GoLatentCodec.
type Runner struct{}

var _ model.LatentCodec = (*Runner)(nil)

// NewRunner fails: onnxruntime_go needs cgo.
func NewRunner(f *model.Flow, opt Options) (*Runner, error) {
	return nil, fmt.Errorf("%w: this nfbo was built without cgo", ErrUnavailable)
}

// Backend returns "onnxruntime".
func (r *Runner) Backend() string { return "onnxruntime" }

// Close does nothing.
func (r *Runner) Close() error { return nil }

// EncodeTo is never reached: NewRunner cannot succeed without cgo.
func (r *Runner) EncodeTo(ctx context.Context, z []float32, x []int) error { return ErrUnavailable }

// DecodeTo is never reached: NewRunner cannot succeed without cgo.
func (r *Runner) DecodeTo(ctx context.Context, x []int, z []float32) error { return ErrUnavailable }

// Available reports that ONNX Runtime cannot be used: onnxruntime_go needs cgo.
func Available() error {
	return fmt.Errorf("%w: this nfbo was built without cgo", ErrUnavailable)
}
