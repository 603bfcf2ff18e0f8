//go:build cgo

package cuda

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A library that is not there, or not a library, is an error listing every place tried, never a crash.
func TestLoadNVRTCErrorListsEveryFolder(t *testing.T) {
	empty, bogus := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bogus, "libnvrtc.so.13"), []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(map[string]string{LibDirsEnv: empty + ":" + bogus}, nil)
	_, err := LoadNVRTC(env)
	var le *LoadError
	if !errors.As(err, &le) {
		// The system's own search found an NVRTC: nothing to check of the folders then.
		t.Skipf("LoadNVRTC: %v (an NVRTC is installed system-wide)", err)
	}
	msg := err.Error()
	for _, w := range []string{empty + ": not found here", filepath.Join(bogus, "libnvrtc.so.13") + ": ", "/usr/local/cuda/lib64: not found here"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}

// repoNVRTC is where scripts/setup.sh --test (make test) unpacks Debian's NVRTC.
func repoNVRTC() string {
	return filepath.Join("..", "..", "third_party", "nvrtc", "usr", "lib", "x86_64-linux-gnu")
}

// loadTestNVRTC loads NVRTC from the environment or the repository's copy; without one the test fails under
// CI=true and is skipped elsewhere.
func loadTestNVRTC(t *testing.T) *NVRTC {
	t.Helper()
	env := OSEnv()
	getenv := env.Getenv
	dir, _ := filepath.Abs(repoNVRTC())
	env.Getenv = func(k string) string {
		if k == LibDirsEnv {
			return getenv(k) + ":" + dir
		}
		return getenv(k)
	}
	n, err := LoadNVRTC(env)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is needed under CI=true (scripts/setup.sh --test fetches it): %v", err)
		}
		t.Skipf("no NVRTC (make test fetches it): %v", err)
	}
	return n
}

// Every embedded kernel compiles with NVRTC to an sm_90 CUBIN and to compute_90 PTX defining each entry.
func TestNVRTCCompilesKernels(t *testing.T) {
	n := loadTestNVRTC(t)
	t.Logf("NVRTC %d.%d from %s", n.Major, n.Minor, n.Path())
	for _, k := range Kernels() {
		cubin, err := n.Compile(k.Name, k.Code, CompileOptions{Arch: 90})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(cubin, []byte("\x7fELF")) {
			t.Errorf("%s: sm_90 output is not an ELF CUBIN (%d bytes)", k.Name, len(cubin))
		}
		ptx, err := n.Compile(k.Name, k.Code, CompileOptions{Arch: 90, PTX: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ptx) == 0 || ptx[len(ptx)-1] != 0 {
			t.Errorf("%s: PTX lacks its trailing NUL", k.Name)
		}
		for _, e := range k.Entries {
			if !bytes.Contains(ptx, []byte(".entry "+e+"(")) {
				t.Errorf("%s: PTX has no entry %s", k.Name, e)
			}
		}
		t.Logf("%s: CUBIN %d bytes, PTX %d bytes, kernels %v", k.Name, len(cubin), len(ptx), k.Entries)
	}
}

// A source NVRTC rejects gives a CompileError carrying NVRTC's log.
func TestNVRTCCompileError(t *testing.T) {
	n := loadTestNVRTC(t)
	_, err := n.Compile("bad.cu", "extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }", CompileOptions{Arch: 90})
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile of a bad source: %v, want a *CompileError", err)
	}
	if !strings.Contains(ce.Log, "undefined_name") {
		t.Errorf("log does not name the undefined identifier:\n%s", ce.Log)
	}
}
