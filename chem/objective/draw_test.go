package objective

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// OpenDrawer draws with a worker of its own, and says when RDKit is missing.
func TestOpenDrawer(t *testing.T) {
	newTestRDKit(t, RDKitOptions{}).Close() // skips the test without RDKit
	warnf := func(format string, args ...any) { t.Logf(format, args...) }
	draw, stop, err := OpenDrawer(context.Background(), DefaultPython, 200, 150, io.Discard, warnf)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	svgs, err := draw(context.Background(), []string{"CCO", "C1CC"})
	if err != nil || len(svgs) != 2 || !strings.Contains(svgs[0], "width='200px'") || svgs[1] != "" {
		t.Errorf("drawings %.100q, err %v; want one of CCO and none of C1CC", svgs, err)
	}
	fake := filepath.Join(t.TempDir(), "no-python")
	if _, _, err := OpenDrawer(context.Background(), fake, 200, 150, io.Discard, warnf); !errors.Is(err, ErrRDKitMissing) {
		t.Errorf("no interpreter: %v, want ErrRDKitMissing", err)
	}
}

// MolBlocks writes a valid molecule as a molfile block with 2D coordinates, and says why not for an invalid one.
func TestMolBlocks(t *testing.T) {
	pool := newTestRDKit(t, RDKitOptions{})
	defer pool.Close()
	ds, err := pool.MolBlocks(context.Background(), []string{"OCC", "C1CC"})
	if err != nil || len(ds) != 2 {
		t.Fatalf("%d blocks, %v", len(ds), err)
	}
	if d := ds[0]; d.Canonical != "CCO" || d.Reason != "" || !strings.Contains(d.MolBlock, "  3  2  0  0  0  0  0  0  0  0999 V2000\n") ||
		!strings.HasSuffix(d.MolBlock, "M  END\n") || strings.Count(d.MolBlock, "0.0000    0.0000    0.0000") == 3 {
		t.Errorf("ethanol: %+v (want 3 atoms, 2 bonds, 2D coordinates)", d)
	}
	if d := ds[1]; d.MolBlock != "" || !strings.Contains(d.Reason, "invalid SMILES") {
		t.Errorf("C1CC: %+v, want no block and the reason", d)
	}
}
