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

// TestImportRules checks every package of the module against the table of docs/ARCHITECTURE.md (parseRules):
// it has a row, and it imports only what its row allows, the test-only imports from _test.go files alone. Test
// files count: fakes keep bo/ testable without the model or chemistry.
func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// imports[pkg][imp] says whether pkg imports imp outside its _test.go files.
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
				imp := strings.TrimPrefix(p, module)
				imports[pkg][imp] = imports[pkg][imp] || !strings.HasSuffix(path, "_test.go")
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
	rules, err := parseRules(doc)
	if err != nil {
		t.Fatalf("docs/ARCHITECTURE.md: %v", err)
	}
	for pkg, imps := range imports {
		r, known := rules[pkg]
		switch {
		case !known:
			t.Errorf("package %s is not in the table of docs/ARCHITECTURE.md: add a row", pkg)
			continue
		case r.any:
			continue
		}
		for imp, outsideTests := range imps {
			switch {
			case imp == pkg || slices.Contains(r.imports, imp):
			case slices.Contains(r.testImports, imp) && !outsideTests:
			case slices.Contains(r.testImports, imp):
				t.Errorf("%s imports %s outside its tests, which docs/ARCHITECTURE.md allows only in tests", pkg, imp)
			default:
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md does not allow", pkg, imp)
			}
		}
	}
}
