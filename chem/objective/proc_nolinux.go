//go:build unix && !linux

package objective

import "syscall"

// sysProcAttr puts a worker in a process group of its own (see proc_unix.go). There is no Pdeathsig here: the
// guardian alone kills the group when nfbo dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
