//go:build unix

package objective

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Each worker leads a process group of its own (sysProcAttr), for two reasons. Killing the group kills the
// processes the worker started too: a docking script's docking binary, say, which would otherwise run on, unpaid
// and unread, after its worker was killed for hanging, stopped by Close, or left behind by nfbo's death. And a
// Ctrl-C at the terminal, which goes to the terminal's foreground process group, reaches nfbo alone: nfbo then
// waits for the answers in flight, which a worker killed by the same Ctrl-C would never give.

// guardianScript is run by sh, in the worker's process group, with the group's id as $1 and as stdin the read
// end of a pipe whose write end only nfbo holds. A line on the pipe means that nfbo has stopped the worker: the
// guardian exits. End of file without a line means that nfbo died (the kernel closes its descriptors however it
// dies, kill -9 included): the guardian kills the group, which Linux's Pdeathsig does not reach beyond the
// worker itself, and other systems not at all.
const guardianScript = `read line || kill -s KILL -- "-$1"`

// guardian is the process that kills a worker's process group when nfbo dies. Being a member, it also keeps
// the group's id (the worker's pid) from being reused until it is reaped, so that killGroup never reaches
// another group, even after the worker has exited and been reaped.
type guardian struct {
	cmd *exec.Cmd
	w   *os.File // the write end of its stdin
}

// startGuardian starts the guardian of the process group pgid. It returns nil when none could be started (no
// sh, or the group is gone already): the worker then runs without one, and on Linux still dies with nfbo.
func startGuardian(pgid int) *guardian {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", guardianScript, "nfbo-guardian", strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = cmd.Start()
	r.Close() // the guardian holds its own copy
	if err != nil {
		w.Close()
		return nil
	}
	return &guardian{cmd: cmd, w: w}
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

// killGroup kills the worker p and the processes of its group: those it started, and its guardian g. The
// group's id is p's pid, which stays p's while the group has a member: the guardian, until g.stop reaps it, or
// p itself until it is reaped. Without a guardian, a worker that has exited (reaped) is not looked for further.
func killGroup(p *os.Process, g *guardian, reaped bool) {
	if g != nil || !reaped {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	_ = p.Kill()
}
