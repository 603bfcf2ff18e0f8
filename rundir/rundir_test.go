package rundir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLedger(t *testing.T) {
	dir := t.TempDir()
	l, err := ReadLedger(dir)
	if err != nil || len(l.Items) != 0 || l.Batches() != 0 {
		t.Fatalf("empty ledger: %+v, %v", l, err)
	}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	got, err := l.Append([]string{"C1=CC=CC=C1O", "CCO"}, []string{"Oc1ccccc1", "CCO"}, now)
	if err != nil || got[0].ID != "m1" || got[1].ID != "m2" || got[1].Batch != 1 {
		t.Fatalf("first append: %+v, %v", got, err)
	}
	// Asked again with one new molecule: the old ones keep their ids, by either form of the molecule.
	got, err = l.Append([]string{"Oc1ccccc1", "CCN", "CCO"}, []string{"Oc1ccccc1", "CCN", "CCO"}, now)
	if err != nil || got[0].ID != "m1" || got[1].ID != "m3" || got[1].Batch != 2 || got[2].ID != "m2" {
		t.Fatalf("second append: %+v, %v", got, err)
	}
	// A crash in the middle of an append leaves a torn line: it is not an entry, and the next append replaces it.
	path := filepath.Join(dir, AskedFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"m4","smiles":"CC`)
	f.Close()
	l, err = ReadLedger(dir)
	if err != nil || len(l.Items) != 3 || l.Batches() != 2 {
		t.Fatalf("ledger with a torn line: %d items, %v", len(l.Items), err)
	}
	if a, ok := l.ByID(" m3 "); !ok || a.SMILES != "CCN" {
		t.Errorf("ByID(m3) = %+v, %v", a, ok)
	}
	if _, err := l.Append([]string{"CCCl"}, []string{"CCCl"}, now); err != nil {
		t.Fatal(err)
	}
	l, err = ReadLedger(dir)
	if err != nil || len(l.Items) != 4 || l.Items[3].ID != "m4" || l.Items[3].SMILES != "CCCl" {
		t.Fatalf("after appending over a torn line: %+v, %v", l.Items, err)
	}
	// Damage other than a torn last line is an error naming the line.
	data, _ := os.ReadFile(path)
	bad := strings.Replace(string(data), `"id":"m2"`, `"id":"m7"`, 1)
	os.WriteFile(path, []byte(bad), 0o644)
	if _, err := ReadLedger(dir); err == nil || !strings.Contains(err.Error(), AskedFile+":2:") {
		t.Errorf("ledger with an id out of sequence: %v", err)
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := LockWait(ctx, dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "gave up waiting") {
		t.Fatalf("LockWait on a held lock: %v", err)
	}
	waitsForRelease(t, "LockWait", unlock, func() (func(), error) { return LockWait(context.Background(), dir) })
}

// waitsForRelease checks that lock, called while another holds the lock, returns once unlock lets it go.
func waitsForRelease(t *testing.T, name string, unlock func(), lock func() (func(), error)) {
	t.Helper()
	done := make(chan error)
	go func() {
		u, err := lock()
		if err == nil {
			u()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("%s after the holder let go: %v", name, err)
	}
}

// TestLockFileWait: the lock of a file that is not a run directory's waits for its holder, gives up when the
// context ends (naming the file), and is not the lock of the directory it lies in.
func TestLockFileWait(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.tsv.lock")
	unlock, err := LockFileWait(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := LockFileWait(ctx, path); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("LockFileWait on a held lock: %v, want ErrLocked naming %s", err, path)
	}
	unlockDir, err := Lock(dir)
	if err != nil {
		t.Fatalf("the directory's own lock beside a file's: %v", err)
	}
	unlockDir()
	waitsForRelease(t, "LockFileWait", unlock, func() (func(), error) { return LockFileWait(context.Background(), path) })
}

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadInfo(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadInfo of an empty directory: %v", err)
	}
	in := Info{Setting: "100+500", Task: "adip", Method: "nfbo", Seed: 2, Budget: 500, Calls: 7, Objective: ObjectiveTell}
	if err := WriteInfo(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadInfo(dir)
	if err != nil || out.Task != "adip" || out.Calls != 7 || out.ObjectiveID() != ObjectiveTell {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	os.WriteFile(filepath.Join(dir, InfoFile), []byte(`{"task":"adip","method":"nfbo","setting":"1+1","seed":-1}`), 0o644)
	if _, err := ReadInfo(dir); err == nil || !strings.Contains(err.Error(), InfoFile) {
		t.Errorf("a negative seed: %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	quiet := func(string, ...any) {}
	want := Info{Setting: "100+500", Task: "adip", Method: "nfbo", Seed: 1, Budget: 500, Objective: ObjectiveRDKit}
	if _, err := Open(dir, want, true, "", quiet); err == nil || !strings.Contains(err.Error(), "holds no run") {
		t.Fatalf("resume of nothing: %v", err)
	}
	got, err := Open(dir, want, false, "", quiet)
	if err != nil || got.Task != want.Task || got.Seed != want.Seed || !Exists(dir) {
		t.Fatalf("new run: %+v, %v", got, err)
	}
	saved := want
	saved.Calls = 12
	WriteInfo(dir, saved)
	// run.json alone: the run stopped before its first evaluation, and starts afresh.
	if _, err := Open(dir, want, false, "", quiet); err != nil {
		t.Fatalf("a run without evaluations, started again: %v", err)
	}
	os.WriteFile(filepath.Join(dir, EvalLogFile), nil, 0o644)
	if _, err := Open(dir, want, false, "", quiet); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("a new run over a run: %v", err)
	}
	if got, err := Open(dir, want, true, "", quiet); err != nil || got.Calls != 12 {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	other := want
	other.Seed = 2
	if _, err := Open(dir, other, true, "", quiet); err == nil || !strings.Contains(err.Error(), "resume with the same flags") {
		t.Errorf("resume with another seed: %v", err)
	}
	prog := want
	prog.Objective = ObjectiveCommand("python3 oracle.py")
	if _, err := Open(dir, prog, true, "", quiet); err == nil || !strings.Contains(err.Error(), "same objective") {
		t.Errorf("resume of an RDKit run with a program: %v", err)
	}
	tell := want
	tell.Objective = ObjectiveTell
	if got, err := Open(dir, tell, true, "", quiet); err != nil || got.Objective != ObjectiveTell {
		t.Errorf("resume of an RDKit run as ask/tell: %+v, %v", got, err)
	}
	// Other kernels: the run goes on, with a warning naming both, and run.json records the new ones; the same
	// kernels, or a run that recorded none, say nothing.
	var warned []string
	warn := func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }
	haswell, cooperlake := want, want
	haswell.Kernels, cooperlake.Kernels = "go; OpenBLAS (netlib), Haswell kernels", "go; OpenBLAS (netlib), Cooperlake kernels"
	if got, err := Open(dir, haswell, true, "", warn); err != nil || got.Kernels != haswell.Kernels || len(warned) != 0 {
		t.Errorf("resume of a run without kernels: %+v, %v, warned %q", got, err, warned)
	}
	WriteInfo(dir, haswell)
	if got, err := Open(dir, haswell, true, "", warn); err != nil || len(warned) != 0 {
		t.Errorf("resume on the same kernels: %+v, %v, warned %q", got, err, warned)
	}
	if got, err := Open(dir, cooperlake, true, "", warn); err != nil || got.Kernels != cooperlake.Kernels || len(warned) != 1 ||
		!strings.Contains(warned[0], "ran on go; OpenBLAS (netlib), Haswell kernels and goes on on go; OpenBLAS (netlib), Cooperlake kernels") {
		t.Errorf("resume on other kernels: %+v, %v, warned %q", got, err, warned)
	}
	for _, name := range []string{CheckpointFile, PendingFile} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	var said []string
	if err := SetAside(dir, func(f string, a ...any) { said = append(said, f) }, CheckpointFile, PendingFile, ConfigFile); err != nil ||
		len(said) != 2 || !Exists(filepath.Join(dir, CheckpointFile+".damaged")) || Exists(filepath.Join(dir, PendingFile)) {
		t.Errorf("SetAside: %v, said %q", err, said)
	}
}

// TestIsRunFile: a run's files (and their temporary and set-aside copies) by any path, a link included, are the
// run's; other files, beside them or elsewhere, are not.
func TestIsRunFile(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, EvalLogFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(filepath.Join(run, EvalLogFile), hard); err != nil {
		t.Fatal(err)
	}
	soft := filepath.Join(dir, "soft.jsonl")
	if err := os.Symlink(filepath.Join(run, EvalLogFile), soft); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "runlink")
	if err := os.Symlink(run, dirLink); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(run, EvalLogFile):             true,
		filepath.Join(run, AskedFile):               true, // not there yet: still the run's
		filepath.Join(run, PendingFile+".damaged"):  true,
		filepath.Join(run, InfoFile+".tmp123"):      true,
		filepath.Join(run, "sub", "..", RunLogFile): true,
		filepath.Join(dirLink, CheckpointFile):      true,
		hard:                                        true,
		soft:                                        true,
		filepath.Join(run, "batch1.csv"):            false,
		filepath.Join(dir, EvalLogFile):             false,
		filepath.Join(run, "my-"+EvalLogFile):       false,
	} {
		if got := IsRunFile(run, path); got != want {
			t.Errorf("IsRunFile(%s) = %v, want %v", path, got, want)
		}
	}
}
