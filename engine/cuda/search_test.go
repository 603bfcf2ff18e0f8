package cuda

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fakeEnv(vars map[string]string, globs map[string][]string) Env {
	return Env{
		Getenv: func(k string) string { return vars[k] },
		Glob:   func(p string) ([]string, error) { return globs[p], nil },
	}
}

// The search order of the design (gpu_engine.md section 4): our variable, LD_LIBRARY_PATH, the wheels'
// folders of each Python environment, the toolkit, without repeats or stubs folders.
func TestSearchDirs(t *testing.T) {
	sp := "/opt/torch/.venv/lib/python3.12/site-packages"
	env := fakeEnv(map[string]string{
		LibDirsEnv:        "/mine:/mine/stubs: /also ",
		"LD_LIBRARY_PATH": "/ld:/mine",
		"CUDA_HOME":       "/cuda-13",
	}, map[string][]string{
		"/opt/*/.venv": {"/opt/torch/.venv"},
		filepath.Join("/opt/torch/.venv", "lib", "python3*", "site-packages"): {sp},
	})
	got := SearchDirs(env)
	want := []string{"/mine", "/also", "/ld",
		sp + "/nvidia/cu13/lib", sp + "/nvidia/cublas/lib", sp + "/nvidia/cuda_nvrtc/lib", sp + "/nvidia/cuda_runtime/lib",
		"/cuda-13/lib64", "/cuda-13/targets/x86_64-linux/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}
	if !slices.Equal(got, want) {
		t.Errorf("SearchDirs:\n got %q\nwant %q", got, want)
	}
	drv := DriverDirs(env)
	if wantD := []string{"/mine", "/also", "/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"}; !slices.Equal(drv, wantD) {
		t.Errorf("DriverDirs:\n got %q\nwant %q", drv, wantD)
	}
}

func TestLoadErrorMessage(t *testing.T) {
	e := &LoadError{Lib: "NVRTC", Sonames: nvrtcSonames, Attempts: []Attempt{{"/a", "not found here"}, {"/b/libnvrtc.so.13", "invalid ELF header"}}}
	msg := e.Error()
	for _, w := range []string{"NVRTC", "libnvrtc.so.13", "/a: not found here", "/b/libnvrtc.so.13: invalid ELF header", LibDirsEnv} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
}

// Every embedded source declares its kernels.
func TestKernelsEmbedded(t *testing.T) {
	ks := Kernels()
	if len(ks) == 0 {
		t.Fatal("no kernel sources embedded")
	}
	for _, k := range ks {
		if len(k.Entries) == 0 {
			t.Errorf("%s: no extern \"C\" __global__ kernels", k.Name)
		}
	}
	t.Logf("%d sources, entries %v", len(ks), ks[0].Entries)
}
