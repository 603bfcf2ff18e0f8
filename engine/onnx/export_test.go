package onnx

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nfbo/nfbo/model"
	"github.com/nfbo/nfbo/model/modeltest"
)

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
		f := modeltest.Flow(t, modeltest.Tiny(tr), 1, 0.3)
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
