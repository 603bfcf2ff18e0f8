//go:build unix

// Package proctest holds what the tests of child processes share: a check that the processes an objective started
// are gone once nfbo or its worker is (an orphan would go on working, unpaid, after nobody reads its answer).
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

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
