package objective

import "syscall"

// sysProcAttr puts a worker in a process group of its own (see proc_unix.go) and has the kernel kill it with
// SIGKILL when nfbo dies, however it dies (kill -9 included), so that it does not finish, as an orphan, a
// request whose answer nobody reads.
//
// Pdeathsig fires when the thread that started the worker exits, not when the process does: startProc starts
// each worker from a goroutine locked to its thread until the worker is reaped, so that the thread lives as long
// as the worker or nfbo.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
