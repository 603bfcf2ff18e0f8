package train

import "testing"

// TestBLASBackend logs which BLAS the build uses, so benchmark logs carry it.
func TestBLASBackend(t *testing.T) { t.Logf("BLAS: %s", BLASName()) }
