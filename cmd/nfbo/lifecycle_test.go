//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nfbo/nfbo/internal/proctest"
)

// TestObjectiveDiesWithNfbo kills "nfbo score" with SIGKILL while its objective program (a script that started
// a job of its own, as a docking script does) works on a request. Both must end with nfbo: an orphan would finish
// a request whose answer nobody reads, and burn what the user pays for while the resumed run asks again.
func TestObjectiveDiesWithNfbo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildNfbo(t)
	script := filepath.Join(dir, "dock.sh")
	if err := os.WriteFile(script, []byte(proctest.JobScript), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pids")
	cmd := exec.Command(bin, "score", "-task", "dock", "-objective-cmd", "sh "+script+" "+pidFile)
	cmd.Stdin = strings.NewReader("CCO\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pids := proctest.StartedJob(t, pidFile, exited)
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	proctest.CheckGone(t, pids, 3*time.Second, "after kill -9 of nfbo")
}

// lineBuffer collects what a process writes, for reading while it runs.
type lineBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// collect reads r into l until r ends, then closes done.
func (l *lineBuffer) collect(r io.Reader, done chan<- struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.b.WriteString(sc.Text() + "\n")
		l.mu.Unlock()
	}
	close(done)
}

// TestSecondSignalStops sends a signal twice to "nfbo score" while its objective works on a request. The first
// makes nfbo wait for the answer in flight (it says so); the second must stop it at once, with the signal's exit
// status and the objective killed, also when nfbo was started with SIGINT ignored, as a background job of a
// non-interactive shell is (a second Ctrl-C then did nothing: signal.Stop restored the inherited "ignore").
func TestSecondSignalStops(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildNfbo(t)
	script := filepath.Join(dir, "dock.sh")
	if err := os.WriteFile(script, []byte(proctest.JobScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		trap string // sh's trap that nfbo inherits
		sig  syscall.Signal
		want int
	}{
		{"SIGINT inherited ignored", `trap "" INT`, syscall.SIGINT, 130},
		{"SIGINT", ``, syscall.SIGINT, 130},
		{"SIGTERM", ``, syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(dir, fmt.Sprintf("pids%d", i))
			cmd := exec.Command("sh", "-c", tc.trap+"\nexec \"$0\" \"$@\"", bin, "score", "-task", "dock",
				"-timeout", "10m", "-objective-cmd", "sh "+script+" "+pidFile)
			cmd.Stdin = strings.NewReader("CCO\n")
			pipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var stderr lineBuffer
			read := make(chan struct{})
			go stderr.collect(pipe, read)
			exited := make(chan error, 1)
			go func() {
				<-read
				exited <- cmd.Wait()
			}()
			pids := proctest.StartedJob(t, pidFile, exited)

			cmd.Process.Signal(tc.sig)
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "interrupt again"); {
				if time.Now().After(deadline) {
					t.Fatalf("no word of waiting for the request in flight after the first signal; stderr:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			select {
			case err := <-exited:
				t.Fatalf("nfbo stopped after the first signal (%v): it should wait for the answer in flight", err)
			case <-time.After(200 * time.Millisecond):
			}

			cmd.Process.Signal(tc.sig)
			select {
			case err = <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("nfbo still ran 5s after the second signal; stderr:\n%s", stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
				t.Errorf("nfbo ended with %v after the second signal, want exit status %d; stderr:\n%s", err, tc.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopping at once") {
				t.Errorf("stderr does not say that nfbo stops at once:\n%s", stderr.String())
			}
			proctest.CheckGone(t, pids, 3*time.Second, "after the second signal")
		})
	}
}
