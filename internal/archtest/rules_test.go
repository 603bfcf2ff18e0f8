package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rule is what one package may import from the module: imports anywhere, testImports only in its _test.go
// files; any says the package may import everything (cmd/nfbo).
type rule struct {
	imports, testImports []string
	any                  bool
}

// tableHeader opens the table of packages in docs/ARCHITECTURE.md.
const tableHeader = "| package | holds | may import (within nfbo) |"

// parseRules reads the table of packages in doc (docs/ARCHITECTURE.md) into a rule per package. A row is
//
//	| `pkg` | what it holds | what it may import |
//
// and the last cell is "nothing", "–", "everything above" (any), or a comma-separated list of packages in
// backticks, where `dir/*` stands for every package of the table under dir/. Parenthesised remarks are
// comments, except "(tests: `a`, `b`, ...)", which lists the packages only its tests may import; text after a
// ";" outside parentheses is a comment too. A name in backticks that is no package of the table is an error,
// so a typo cannot allow nothing silently.
func parseRules(doc []byte) (map[string]rule, error) {
	type row struct {
		pkg, cell string
		line      int
	}
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(doc))
	in, line := false, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == tableHeader:
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(text, "|"):
			in = false
			continue
		case strings.HasPrefix(text, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) < 3 {
			return nil, fmt.Errorf("line %d: want 3 cells, got %d", line, len(cells))
		}
		pkg := strings.TrimSpace(cells[0])
		if len(pkg) < 3 || pkg[0] != '`' || pkg[len(pkg)-1] != '`' {
			return nil, fmt.Errorf("line %d: package %q is not in backticks", line, pkg)
		}
		rows = append(rows, row{pkg: pkg[1 : len(pkg)-1], cell: strings.TrimSpace(cells[len(cells)-1]), line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table headed %q", tableHeader)
	}
	var pkgs []string
	for _, r := range rows {
		pkgs = append(pkgs, r.pkg)
	}
	expand := func(names []string, line int) ([]string, error) {
		var out []string
		for _, n := range names {
			if dir, ok := strings.CutSuffix(n, "/*"); ok {
				for _, p := range pkgs {
					if strings.HasPrefix(p, dir+"/") {
						out = append(out, p)
					}
				}
				continue
			}
			if !slices.Contains(pkgs, n) {
				return nil, fmt.Errorf("line %d: `%s` is no package of the table", line, n)
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	}
	rules := map[string]rule{}
	for _, r := range rows {
		if _, dup := rules[r.pkg]; dup {
			return nil, fmt.Errorf("line %d: package %s has two rows", r.line, r.pkg)
		}
		main, tests, err := splitCell(r.cell)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.line, err)
		}
		var ru rule
		switch main = strings.TrimSpace(main); {
		case main == "everything above":
			ru.any = true
		case main == "nothing" || main == "–":
		default:
			if ru.imports, err = expand(backticked(main), r.line); err != nil {
				return nil, err
			}
			if len(ru.imports) == 0 {
				return nil, fmt.Errorf("line %d: %q lists no package; write nothing", r.line, r.cell)
			}
		}
		if ru.testImports, err = expand(backticked(tests), r.line); err != nil {
			return nil, err
		}
		rules[r.pkg] = ru
	}
	return rules, nil
}

// splitCell returns the last cell of a row without its comments (parenthesised remarks, text after a ";" outside
// them) and the text of its "(tests: ...)" remark.
func splitCell(cell string) (main, tests string, err error) {
	var b strings.Builder
	depth, start := 0, 0
	for i, c := range cell {
		switch c {
		case '(':
			if depth == 0 {
				start = i + 1
			}
			depth++
		case ')':
			depth--
			if depth < 0 {
				return "", "", fmt.Errorf("%q: unbalanced parentheses", cell)
			}
			if depth == 0 {
				if t, ok := strings.CutPrefix(cell[start:i], "tests:"); ok {
					tests = t
				}
			}
		case ';':
			if depth == 0 {
				return b.String(), tests, nil
			}
		default:
			if depth == 0 {
				b.WriteRune(c)
			}
		}
	}
	if depth != 0 {
		return "", "", fmt.Errorf("%q: unbalanced parentheses", cell)
	}
	return b.String(), tests, nil
}

// backticked returns the names in backticks in s.
func backticked(s string) []string {
	var names []string
	for {
		_, rest, ok := strings.Cut(s, "`")
		if !ok {
			return names
		}
		name, after, ok := strings.Cut(rest, "`")
		if !ok {
			return names
		}
		names = append(names, name)
		s = after
	}
}

// TestParseRules reads a small table with every form of the last cell.
func TestParseRules(t *testing.T) {
	doc := "intro\n\n" + tableHeader + `
|---|---|---|
| ` + "`a`" + ` | a leaf | nothing (` + "`golang.org/x/sys/cpu`" + ` for the CPU) |
| ` + "`a/b`" + ` | below a | – |
| ` + "`a/b/c`" + ` | deeper | ` + "`a`" + ` (why, with ` + "`a.Thing`" + `) |
| ` + "`d`" + ` | uses a | ` + "`a/*`" + `, ` + "`a`" + ` (tests: ` + "`e`" + `); it declares ` + "`Iface`" + ` (see ` + "`a.X`" + `) |
| ` + "`e`" + ` | the CLI | everything above |

after the table
`
	rules, err := parseRules([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rule{
		"a":     {},
		"a/b":   {},
		"a/b/c": {imports: []string{"a"}},
		"d":     {imports: []string{"a", "a/b", "a/b/c"}, testImports: []string{"e"}},
		"e":     {any: true},
	}
	if len(rules) != len(want) {
		t.Errorf("%d rules, want %d: %v", len(rules), len(want), rules)
	}
	for pkg, w := range want {
		r := rules[pkg]
		if r.any != w.any || !slices.Equal(r.imports, w.imports) || !slices.Equal(r.testImports, w.testImports) {
			t.Errorf("%s: %+v, want %+v", pkg, r, w)
		}
	}

	for _, bad := range []string{
		"| `x` | typo | `y` |",           // no such package
		"| x | no backticks | nothing |", // the package's name
		"| `x` | open | `x` (tests: |",   // unbalanced
		"| `x` | empty | see below |",    // lists nothing
	} {
		if _, err := parseRules([]byte(tableHeader + "\n|---|---|---|\n" + bad + "\n")); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
