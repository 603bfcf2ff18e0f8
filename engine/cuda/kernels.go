package cuda

import (
	"embed"
	"io/fs"
	"regexp"
	"sort"
)

//go:embed kernels/*.cu
var kernelFS embed.FS

// Source is one CUDA C translation unit embedded in the binary.
type Source struct {
	Name string // file name, e.g. "seqflow.cu"
	Code string
	// Entries are the kernels it defines (its extern "C" __global__ functions).
	Entries []string
}

var entryRE = regexp.MustCompile(`extern "C" __global__ void (\w+)\(`)

// Kernels returns the embedded kernel sources, by name.
func Kernels() []Source {
	names, err := fs.Glob(kernelFS, "kernels/*.cu")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	var out []Source
	for _, n := range names {
		b, err := kernelFS.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		s := Source{Name: n[len("kernels/"):], Code: string(b)}
		for _, m := range entryRE.FindAllStringSubmatch(s.Code, -1) {
			s.Entries = append(s.Entries, m[1])
		}
		out = append(out, s)
	}
	return out
}
