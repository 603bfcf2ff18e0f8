//go:build openblas

package train

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOpenBLASKnowsTheCPU checks that, OPENBLAS_CORETYPE unset, the products never run on OpenBLAS's fallback
// for a CPU it does not know where the CPU runs wider vectors (Debian's 0.3.21 on Intel's family 6 model 207
// fell back to it, 8x slower), and that the kernels then loaded still compute a product right.
func TestOpenBLASKnowsTheCPU(t *testing.T) {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		t.Skip("OPENBLAS_CORETYPE is set: the user's choice is kept (TestOpenBLASCoreTypeKept)")
	}
	core := blasCore()
	t.Logf("BLAS: %s", BLASName())
	if v := hostVectorUnits(); core == openblasFallback && (v.avx || v.avx2FMA || v.avx512) {
		t.Fatalf("OpenBLAS runs its %s fallback on a CPU with %+v", core, v)
	}
	if openblasReplaced != "" && !strings.Contains(BLASName(), openblasReplaced) {
		t.Errorf("BLASName %q does not say that %s was replaced", BLASName(), openblasReplaced)
	}
	// A product on the kernels in use against its definition.
	const m, k, n = 67, 129, 35
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%13) - 6
	}
	for i := range b {
		b[i] = float32(i%7) - 3
	}
	gemm(false, false, 1, a, m, k, b, k, n, 0, c)
	for i := range m {
		for j := range n {
			var want float64
			for p := range k {
				want += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			if float64(c[i*n+j]) != want {
				t.Fatalf("c[%d,%d] = %v, want %v (integers: exact in float32)", i, j, c[i*n+j], want)
			}
		}
	}
}

// TestOpenBLASCoreTypeKept runs this test binary again with OPENBLAS_CORETYPE=Haswell: the user's choice is
// what OpenBLAS runs, and nothing is replaced.
func TestOpenBLASCoreTypeKept(t *testing.T) {
	if os.Getenv("NFBO_TEST_CORETYPE_CHILD") == "1" {
		if c := blasCore(); c != "Haswell" || openblasReplaced != "" {
			t.Fatalf("OPENBLAS_CORETYPE=Haswell: kernels %q, replaced %q", c, openblasReplaced)
		}
		return
	}
	if v := hostVectorUnits(); !v.avx2FMA {
		t.Skip("the CPU has no AVX2/FMA: Haswell kernels cannot run")
	}
	if !openblasDynamic() {
		t.Skip("this OpenBLAS is built for one CPU: OPENBLAS_CORETYPE chooses nothing")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestOpenBLASCoreTypeKept$", "-test.v")
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Haswell", "NFBO_TEST_CORETYPE_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with OPENBLAS_CORETYPE=Haswell: %v\n%s", err, out)
	}
}
