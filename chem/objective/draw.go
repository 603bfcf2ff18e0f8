package objective

import (
	"context"
	"io"
)

// SVGFunc draws molecules as SVG elements, one per SMILES ("" for one that cannot be drawn).
type SVGFunc func(ctx context.Context, smiles []string) ([]string, error)

// OpenDrawer starts one RDKit worker for reports and returns the function that draws with it, width × height
// pixels a molecule, and the one that stops the worker. Without RDKit the error wraps ErrRDKitMissing, and
// nothing is left to stop.
func OpenDrawer(ctx context.Context, python string, width, height int, stderr io.Writer, warnf func(string, ...any)) (SVGFunc, func(), error) {
	pool, err := NewRDKit(RDKitOptions{Python: python, PoolOptions: PoolOptions{Workers: 1, Stderr: stderr, Warnf: warnf}})
	if err == nil {
		err = pool.Start(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, nil, err
	}
	draw := func(ctx context.Context, smiles []string) ([]string, error) {
		ds, err := pool.Draw(ctx, smiles, width, height)
		svgs := make([]string, len(ds))
		for i, d := range ds {
			svgs[i] = d.SVG
		}
		return svgs, err
	}
	return draw, func() { pool.Close() }, nil
}
