package cuda

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/kernels"
)

// TestKernelDefines: the kernels' constants reach NVRTC as definitions that read back as Go's float64 values,
// and every definition is used by some kernel source (none is left over) and defined nowhere in the sources.
func TestKernelDefines(t *testing.T) {
	want := map[string]float64{"NFBO_NLSQ_LOG_A": kernels.NLSqLogA, "NFBO_NLSQ_EXP_RATE": kernels.NLSqExpRate,
		"NFBO_NLSQ_TANH_RATE": kernels.NLSqTanhRate}
	var all strings.Builder
	for _, k := range Kernels() {
		all.WriteString(k.Code)
	}
	defs := KernelDefines()
	if len(defs) != len(want) {
		t.Fatalf("KernelDefines() = %q, want %d definitions", defs, len(want))
	}
	for _, d := range defs {
		name, val, ok := strings.Cut(strings.TrimPrefix(d, "-D"), "=")
		v, err := strconv.ParseFloat(val, 64)
		if w, known := want[name]; !ok || !known || err != nil || v != w {
			t.Errorf("definition %q: want %s=%v", d, name, want[name])
		}
		if !strings.Contains(all.String(), name) {
			t.Errorf("%s is defined but no kernel uses it", name)
		}
		if strings.Contains(all.String(), "#define "+name) {
			t.Errorf("a kernel source defines %s itself", name)
		}
	}
	if !strings.Contains(strings.Join(CompileOptions{Arch: 90}.options(), " "), defs[0]) {
		t.Errorf("compile options %q lack the definitions", CompileOptions{Arch: 90}.options())
	}
}
