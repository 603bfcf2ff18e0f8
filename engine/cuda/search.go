package cuda

import (
	"os"
	"path/filepath"
	"strings"
)

// LibDirsEnv names the environment variable whose folders (separated by ':') are searched first.
const LibDirsEnv = "NFBO_CUDA_LIB_DIRS"

// Env is what the library search reads: the environment and the file system. OSEnv is the process's own;
// tests substitute their own.
type Env struct {
	// Getenv returns an environment variable ("" when unset).
	Getenv func(key string) string
	// Glob returns the paths matching a filepath.Glob pattern.
	Glob func(pattern string) ([]string, error)
}

// OSEnv returns the process's environment and file system.
func OSEnv() Env { return Env{Getenv: os.Getenv, Glob: filepath.Glob} }

// wheelDirs are the folders, relative to a site-packages folder, where NVIDIA's Python wheels put their
// libraries: CUDA 13's single folder first, then CUDA 12's one folder per package.
var wheelDirs = []string{"nvidia/cu13/lib", "nvidia/cublas/lib", "nvidia/cuda_nvrtc/lib", "nvidia/cuda_runtime/lib"}

// SearchDirs returns the folders searched for the runtime libraries (cuBLAS, NVRTC), in order, without
// duplicates or stubs folders; the system's own search (a bare soname) comes after them.
func SearchDirs(env Env) []string {
	var dirs []string
	dirs = append(dirs, splitList(env.Getenv(LibDirsEnv))...)
	dirs = append(dirs, splitList(env.Getenv("LD_LIBRARY_PATH"))...)
	prefixes := []string{env.Getenv("VIRTUAL_ENV"), env.Getenv("CONDA_PREFIX")}
	if venvs, err := env.Glob("/opt/*/.venv"); err == nil {
		prefixes = append(prefixes, venvs...)
	}
	prefixes = append(prefixes, "/usr/local", "/usr")
	for _, p := range prefixes {
		if p == "" {
			continue
		}
		for _, kind := range []string{"site-packages", "dist-packages"} {
			sites, err := env.Glob(filepath.Join(p, "lib", "python3*", kind))
			if err != nil {
				continue
			}
			for _, site := range sites {
				for _, w := range wheelDirs {
					dirs = append(dirs, filepath.Join(site, w))
				}
			}
		}
	}
	for _, home := range []string{env.Getenv("CUDA_HOME"), env.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home != "" {
			dirs = append(dirs, filepath.Join(home, "lib64"), filepath.Join(home, "targets", "x86_64-linux", "lib"))
		}
	}
	return clean(dirs)
}

// DriverDirs returns the folders searched for the driver, libcuda.so.1, after NFBO_CUDA_LIB_DIRS and before
// the system's own search: the driver comes with the machine, not with a Python environment.
func DriverDirs(env Env) []string {
	dirs := splitList(env.Getenv(LibDirsEnv))
	dirs = append(dirs, "/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64")
	return clean(dirs)
}

func splitList(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ":") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// clean drops repeated folders and stubs folders, keeping the first occurrence's place.
func clean(dirs []string) []string {
	seen := map[string]bool{}
	out := dirs[:0:0]
	for _, d := range dirs {
		d = filepath.Clean(d)
		if seen[d] || isStubs(d) {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

func isStubs(dir string) bool {
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		if part == "stubs" {
			return true
		}
	}
	return false
}
