package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/nfbo/nfbo/"

// allowed lists, per package (path relative to the module root), the
// module's packages it may import; docs/ARCHITECTURE.md explains why. Test
// files count: fakes keep bo/ testable without the model or chemistry.
var allowed = map[string][]string{
	"data":                   {},
	"chem/smiles":            {},
	"chem/selfies":           {"chem/smiles"},
	"chem/vocab":             {"data"},
	"chem/molseq":            {"chem/selfies", "chem/smiles", "chem/vocab"},
	"chem/objective":         {"chem/objective/metrics", "chem/smiles", "rundir"},
	"chem/objective/metrics": {},
	"chem/objective/queue":   {"chem/objective", "rundir"},
	"chem/rules":             {},
	"chem/sdf":               {},
	"kernels":                {},
	"model":                  {"kernels", "chem/vocab"},
	"model/modeltest":        {"model"},
	"engine/train":           {"model", "model/modeltest", "kernels", "chem/vocab", "engine/step"},
	"engine/step":            {"model", "kernels"},
	"engine/onnx":            {"engine/onnx/onnxpb", "model", "model/modeltest", "kernels"},
	"engine/onnx/onnxpb":     {},
	"engine/cuda":            {"kernels"},
	"engine/gpuflow":         {"engine/cuda", "model", "model/modeltest"},
	"engine/gpustep":         {"engine/cuda", "engine/step", "kernels", "engine/train", "model"},
	"engine/ort":             {"engine/onnx", "engine/onnx/onnxpb", "model", "model/modeltest", "kernels"},
	"engine/seqflow":         {"engine/train", "engine/ort", "engine/onnx", "engine/gpuflow", "engine/gpustep", "engine/cuda", "model", "kernels", "chem/vocab", "bo"},
	"bo":                     {"bo/gp", "bo/sobol", "rundir"},
	"bo/gp":                  {},
	"bo/sobol":               {},
	"bo/baseline":            {},
	"bo/bench":               {"chem/objective/metrics", "rundir"},
	"bo/flowstats":           {"bo", "model", "model/modeltest"},
	"rundir":                 {},
	"asktell":                {"chem/objective", "rundir"},
	"labserve":               {"asktell", "bo/bench", "rundir"},
	"optimize": {"bo", "bo/baseline", "bo/bench", "chem/molseq", "chem/objective", "chem/rules", "chem/sdf", "chem/selfies", "chem/smiles",
		"chem/objective/queue", "chem/vocab", "engine/seqflow", "engine/train", "internal/buildinfo", "model", "rundir"},
	"pretrain": {"chem/selfies", "chem/smiles", "chem/vocab", "engine/step", "engine/train", "model"},
	"modelcheck": {"bo", "bo/gp", "bo/flowstats", "chem/molseq", "chem/selfies", "chem/smiles", "chem/vocab", "engine/seqflow",
		"engine/train", "model", "model/modeltest", "optimize"},
	"internal/archtest":  {},
	"internal/buildinfo": {},
	"cmd/nfbo":           nil, // the CLI wires everything
}

func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "third_party" || name == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg, imps := range imports {
		rules, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the import rules: add it to docs/ARCHITECTURE.md and to allowed in %s", pkg, "internal/archtest")
			continue
		}
		if !strings.Contains(string(doc), "`"+pkg+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not describe package `%s`", pkg)
		}
		if rules == nil {
			continue
		}
		for imp := range imps {
			if imp != pkg && !slices.Contains(rules, imp) {
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md does not allow", pkg, imp)
			}
		}
	}
}
