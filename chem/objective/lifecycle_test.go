//go:build unix

package objective

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
)

// jobScript is an objective program that starts a job of its own, as a docking script starts the docking
// binary: it writes its process id and the job's (a sleep) to the file named by its argument, one a line, and
// waits for the job; it never answers, and closing its stdin does not end it.
const jobScript = `sleep 600 &
echo $$ >> "$1"
echo $! >> "$1"
wait
`

// jobPool returns a pool of one worker running jobScript, which records its process ids in the returned file.
func jobPool(t *testing.T, opts PoolOptions) (*Pool, string) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	opts.Stderr = io.Discard
	pool, err := NewCommand([]string{"sh", "-c", jobScript, "job", pidFile}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool, pidFile
}

// jobPIDs waits until jobScript has written both its process ids to path and returns them; they are killed when
// the test ends, so that a failing test leaves no orphans behind.
func jobPIDs(t *testing.T, path string) []int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		f := strings.Fields(string(b))
		if len(f) != 2 || !strings.HasSuffix(string(b), "\n") {
			continue
		}
		pids := make([]int, 2)
		for i, s := range f {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s: %q", path, b)
			}
			pids[i] = pid
		}
		t.Cleanup(func() {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		return pids
	}
	t.Fatal("the objective program did not start within 30s")
	return nil
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
		pids := jobPIDs(t, pidFile)
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
		pids := jobPIDs(t, pidFile)
		pool.Close()
		proctest.CheckGone(t, pids, 2*time.Second, "after Close")
	})
}

// orphanDirEnv names the directory of TestWorkersDieWithParent's helper process.
const orphanDirEnv = "NFBO_OBJECTIVE_ORPHAN_DIR"

// TestWorkersDieWithParentHelper is the parent of TestWorkersDieWithParent: it starts jobScript as a worker,
// sends it a request and waits for ever.
func TestWorkersDieWithParentHelper(t *testing.T) {
	dir := os.Getenv(orphanDirEnv)
	if dir == "" {
		t.Skip("helper process of TestWorkersDieWithParent")
	}
	pool, err := NewCommand([]string{"sh", "-c", jobScript, "job", filepath.Join(dir, "pids")}, PoolOptions{Timeout: -1, Stderr: io.Discard})
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
	pids := jobPIDs(t, filepath.Join(dir, "pids"))
	select {
	case err := <-exited:
		t.Fatalf("the helper ended before it was killed: %v\n%s", err, out)
	default:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	proctest.CheckGone(t, pids, 3*time.Second, "after kill -9 of the parent")
}
