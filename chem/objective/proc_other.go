//go:build !unix

package objective

import (
	"os"
	"syscall"
)

// sysProcAttr returns nil: process groups and Pdeathsig are Unix's, and a worker here is not tied to nfbo's
// life.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// guardian is Unix's (proc_unix.go).
type guardian struct{}

func startGuardian() *guardian { return nil }

func (g *guardian) join(*syscall.SysProcAttr) {}

func (g *guardian) stop() {}

// killGroup kills the worker p; the processes it started are not reached.
func killGroup(p *os.Process, g *guardian, reaped bool) { _ = p.Kill() }
