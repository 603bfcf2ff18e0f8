package main

import (
	"strings"
	"testing"
)

// Without a GPU, nfbo gpu says what is missing, with the folders tried, and exits 1.
func TestGPUProbeWithoutGPU(t *testing.T) {
	out, _, err := runCmd(t, newGPUCmd(), "")
	if err == nil {
		t.Skipf("a GPU and NVRTC are present:\n%s", out)
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit status %d, want 1 (%v)", code, err)
	}
	for _, w := range []string{"NVRTC:", "GPU:", "libcuda.so.1", "kernels:"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
