//go:build unix

package objective

import (
	"os"
	"os/exec"
	"syscall"
)

// Each worker leads a process group of its own (sysProcAttr), for two reasons. Killing the group kills the
// processes the worker started too: a docking script's docking binary, say, which would otherwise run on, unpaid
// and unread, after its worker was killed for hanging, stopped by Close, or left behind by nfbo's death. And a
// Ctrl-C at the terminal, which goes to the terminal's foreground process group, reaches nfbo alone: nfbo then
// waits for the answers in flight, which a worker killed by the same Ctrl-C would never give.

// guardianScript is run by sh as the leader of a new process group, which the worker then joins, with as stdin
// the read end of a pipe whose write end only nfbo holds. A line on the pipe means that nfbo has stopped the
// worker: the guardian exits. End of file without a line means that nfbo died (the kernel closes its descriptors
// however it dies, kill -9 included): the guardian kills the group ($$, its own pid, is the group's id), which
// Linux's Pdeathsig does not reach beyond the worker itself, and other systems not at all.
const guardianScript = `read line || kill -s KILL -- "-$$"`

// guardian is the process that kills a worker's process group when nfbo dies. It leads the group and is started
// before the worker: one started after the worker would miss a job the worker starts at once, when nfbo dies in
// between (the one way we see for TestObjectiveDiesWithNfbo's failure once under load). As the group's leader
// it also keeps the group's id (its own pid) from being reused until it is reaped, so that killGroup never
// reaches another group, even after the worker has exited and been reaped.
type guardian struct {
	cmd *exec.Cmd
	w   *os.File // the write end of its stdin
}

// startGuardian starts a guardian for a worker to join (guardian.join). It returns nil when none could be started
// (no sh): the worker then leads a group of its own, and on Linux still dies with nfbo.
func startGuardian() *guardian {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", guardianScript, "nfbo-guardian")
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close() // the guardian holds its own copy
	if err != nil {
		w.Close()
		return nil
	}
	return &guardian{cmd: cmd, w: w}
}

// join makes a worker started with attr (sysProcAttr's, which asks for a group) a member of g's group rather than
// the leader of its own. It is safe on a nil guardian, which leaves attr as it is.
func (g *guardian) join(attr *syscall.SysProcAttr) {
	if g != nil && attr != nil {
		attr.Pgid = g.cmd.Process.Pid
	}
}

// stop tells the guardian that its worker has been stopped and reaps it; killGroup may have killed it first.
// It is safe on a nil guardian.
func (g *guardian) stop() {
	if g == nil {
		return
	}
	_, _ = g.w.Write([]byte("\n"))
	_ = g.w.Close()
	_ = g.cmd.Wait()
}

// killGroup kills the worker p and the processes of its group: those it started, and its guardian g. With a
// guardian the group's id is g's pid, which stays g's until g.stop reaps it; without one it is p's pid, which
// stays p's until p is reaped, so a worker that has exited (reaped) is not looked for further.
func killGroup(p *os.Process, g *guardian, reaped bool) {
	switch {
	case g != nil:
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	case !reaped:
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	_ = p.Kill()
}
