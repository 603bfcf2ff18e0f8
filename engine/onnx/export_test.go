package onnx

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nfbo/nfbo/model"
)

// testFlow returns a random flow with non-trivial couplings.
func testFlow(t testing.TB, cfg model.Config, seed uint64, w float64) *model.Flow {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	p, err := model.NewParams(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Blocks {
		for _, c := range b.Couplings {
			for _, d := range c.Layers {
				for i := range d.W.Data {
					d.W.Data[i] = float32((2*rng.Float64() - 1) * w)
				}
				for i := range d.B.Data {
					d.B.Data[i] = float32(0.3 * rng.NormFloat64())
				}
			}
		}
	}
	f, err := model.NewFlow(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func tinyConfig(tr model.Transform) model.Config {
	return model.Config{V: 12, F: 6, T: 7, MaxT: 9, Blocks: 3, LSTMLayers: 2, H: 8,
		Couplings: 3, U: 10, CouplingDepth: 2, Transform: tr, Dropout: 0.2, Noise: 0.1, SimCoef: 1}
}

// needTool skips, or fails under CI=true, when an external tool is missing.
func needTool(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required when CI=true: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// Debian's python3-onnx 1.12 checker (full check, strict shape inference)
// must accept both exported models.
func TestONNXCheckerAcceptsExports(t *testing.T) {
	py := "/usr/bin/python3"
	needTool(t, "python3-onnx", exec.Command(py, "-c", "import onnx").Run())
	for _, tr := range []model.Transform{model.NLSq, model.Affine} {
		f := testFlow(t, tinyConfig(tr), 1, 0.3)
		dir := t.TempDir()
		enc, dec, err := Export(f, filepath.Join(dir, "m.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		step, err := StepModel(f, 1)
		if err != nil {
			t.Fatal(err)
		}
		stepPath := filepath.Join(dir, "m.step1.onnx")
		if err := WriteFile(stepPath, step); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{enc, dec, stepPath} {
			out, err := exec.Command(py, "-c", `
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
inf = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
print([ (o.name, [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]) for o in inf.graph.output])
`, path).CombinedOutput()
			if err != nil {
				t.Fatalf("%v %s: checker failed: %v\n%s", tr, filepath.Base(path), err, out)
			}
			t.Logf("%v %s: %s", tr, filepath.Base(path), out)
		}
	}
}
