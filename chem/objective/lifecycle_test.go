//go:build unix

package objective

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
)

// jobPool returns a pool of one worker running proctest.JobScript, which records its process ids in the returned
// file.
func jobPool(t *testing.T, opts PoolOptions) (*Pool, string) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	opts.Stderr = io.Discard
	pool, err := NewCommand([]string{"sh", "-c", proctest.JobScript, "job", pidFile}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool, pidFile
}

// A worker killed for hanging past the timeout, and one stopped by Close, take the processes they started with
// them: a docking script's docking job must not run on, unpaid, after its worker is gone.
func TestKillTakesWorkersChildren(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		pool, pidFile := jobPool(t, PoolOptions{Timeout: 300 * time.Millisecond, Retries: -1, MaxFailures: 1})
		done := make(chan error, 1)
		go func() {
			_, err := pool.ScoreTask(context.Background(), "t", []string{"C"})
			done <- err
		}()
		pids := proctest.StartedJob(t, pidFile, nil)
		if err := <-done; err == nil {
			t.Fatal("a worker that never answers was not reported")
		}
		proctest.CheckGone(t, pids, 2*time.Second, "after the timeout")
	})
	t.Run("close", func(t *testing.T) {
		pool, pidFile := jobPool(t, PoolOptions{})
		if err := pool.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pids := proctest.StartedJob(t, pidFile, nil)
		pool.Close()
		proctest.CheckGone(t, pids, 2*time.Second, "after Close")
	})
}

// orphanDirEnv names the directory of TestWorkersDieWithParent's helper process.
const orphanDirEnv = "NFBO_OBJECTIVE_ORPHAN_DIR"

// TestWorkersDieWithParentHelper is the parent of TestWorkersDieWithParent: it starts proctest.JobScript as a
// worker, sends it a request and waits for ever.
func TestWorkersDieWithParentHelper(t *testing.T) {
	dir := os.Getenv(orphanDirEnv)
	if dir == "" {
		t.Skip("helper process of TestWorkersDieWithParent")
	}
	job := []string{"sh", "-c", proctest.JobScript, "job", filepath.Join(dir, "pids")}
	pool, err := NewCommand(job, PoolOptions{Timeout: -1, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	pool.ScoreTask(context.Background(), "t", []string{"C"})
	t.Fatal("the worker answered")
}

// TestWorkersDieWithParent kills a process with SIGKILL while its worker works on a request: the worker, and the
// job the worker started, must end with it rather than finish a request whose answer nobody reads.
func TestWorkersDieWithParent(t *testing.T) {
	if os.Getenv(orphanDirEnv) != "" {
		t.Skip("inside the helper")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkersDieWithParentHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanDirEnv+"="+dir)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pids := proctest.StartedJob(t, filepath.Join(dir, "pids"), nil)
	select {
	case err := <-exited:
		t.Fatalf("the helper ended before it was killed: %v\n%s", err, out)
	default:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	proctest.CheckGone(t, pids, 3*time.Second, "after kill -9 of the parent")
}
