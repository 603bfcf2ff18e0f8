//go:build unix

// Package proctest holds what the tests of child processes share: an objective program that starts a job of its
// own, a check that such processes are gone once nfbo or its worker is (an orphan would go on working, unpaid,
// after nobody reads its answer), and a run killed with SIGKILL at a chosen moment.
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// JobScript is a shell objective program that stands for a docking script: it starts a job of its own (a sleep,
// standing for the docking binary), writes its process id and the job's to the file named by its first argument,
// one a line, then waits for the job; it never answers, and closing its stdin does not end it.
const JobScript = `sleep 600 &
echo $$ >> "$1"
echo $! >> "$1"
wait
`

// StartedJob waits up to 30 s until JobScript has written both process ids to path and returns them (the
// script's, then its job's); they are killed when the test ends, so that a failing test leaves no orphans. A
// value on exited (nil: none is watched) means that the program meant to start the script has ended first.
func StartedJob(t testing.TB, path string, exited <-chan error) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if f := strings.Fields(string(b)); len(f) == 2 && strings.HasSuffix(string(b), "\n") {
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
		select {
		case err := <-exited:
			t.Fatalf("exited before the objective program started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the objective program did not start within 30s")
		}
	}
}

// gone reports whether process pid has ended: it does not exist, or it is a zombie (an orphan not yet reaped by
// init is dead all the same).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] == 'Z'
		}
		return false
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return true // /proc works and has no such process
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// CheckGone fails the test for each of pids that has not ended within wait; what says after what they should
// have ended.
func CheckGone(t testing.TB, pids []int, wait time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, pid := range pids {
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone(pid) {
			t.Errorf("%s: process %d still runs %v later", what, pid, wait)
		}
	}
}

// RunOrKill starts cmd and waits until it exits, or until kill fires (a nil channel never does) and SIGKILL ends
// it: the legs of the tests that kill a run at random moments and resume it. killed says that the signal ended
// it; err is the command's own failure (it did not start, or exited with a status other than 0), nil when it
// finished or was killed. A command that finished on its own as the signal was sent counts as finished.
func RunOrKill(cmd *exec.Cmd, kill <-chan time.Time) (killed bool, err error) {
	if err := cmd.Start(); err != nil {
		return false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return false, err
	case <-kill:
		cmd.Process.Signal(syscall.SIGKILL)
		err := <-exited
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return true, nil
			}
		}
		return false, err
	}
}
