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
