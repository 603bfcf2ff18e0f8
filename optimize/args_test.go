package optimize

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// args.json keeps -request-size, and one written before it was kept reads back with the size that run had.
func TestArgsRequestSize(t *testing.T) {
	dir := t.TempDir()
	a := Args{Task: "demo", Init: "init.csv", Model: "model", Out: dir, Workers: 2, RequestSize: 1, Timeout: time.Minute}
	if err := WriteArgs(a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != 1 {
		t.Errorf("RequestSize %d read back, want 1", got.RequestSize)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, rundir.ArgsFile), []byte(`{"Task": "demo", "Workers": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = ReadArgs(old)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestSize != objective.DefaultChunkSize {
		t.Errorf("RequestSize %d read from an args.json without it, want %d", got.RequestSize, objective.DefaultChunkSize)
	}
}
