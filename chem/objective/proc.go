package objective

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// exitGrace is how long a worker that closed its standard output is given
// to exit by itself, so that its own exit status can be reported rather
// than the kill's.
const exitGrace = time.Second

// proc is one running worker process spoken to over stdin/stdout.
// It is owned by one goroutine at a time (the pool's slot channel).
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	// out is the read end of the worker's standard output. It is ours, not
	// exec's, so that Wait never closes it under a read in progress (which
	// turned "worker exited" into "file already closed").
	out    *os.File
	stderr *tailWriter
	nextID int64
	// exited is closed once the process has been reaped; exitErr is then
	// Wait's error.
	exited  chan struct{}
	exitErr error
	// killed reports that we killed the process, so exitErr says nothing
	// about the program itself.
	killed bool
	dead   bool
	// guard kills the worker's process group if nfbo dies; nil where there
	// is none (see proc_unix.go).
	guard *guardian
}

// errFatal marks failures that retrying cannot fix: the program cannot be
// started, RDKit is missing, or the worker rejected the request itself
// (unknown task). The pool returns them to the caller at once.
type errFatal struct{ err error }

func (e *errFatal) Error() string { return e.err.Error() }
func (e *errFatal) Unwrap() error { return e.err }

func isFatal(err error) bool {
	var f *errFatal
	return errors.As(err, &f)
}

// startProc starts argv with stderr passed through to stderr. The worker
// dies with nfbo, and takes the processes it started with it, where the
// system allows (proc_unix.go, proc_linux.go).
func startProc(argv []string, stderr io.Writer) (*proc, error) {
	if len(argv) == 0 {
		return nil, &errFatal{errors.New("objective: empty worker command")}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// The guardian first, so that it is in place before the worker can start anything (proc_unix.go).
	guard := startGuardian()
	cmd.SysProcAttr = sysProcAttr()
	guard.join(cmd.SysProcAttr)
	tail := &tailWriter{w: stderr}
	cmd.Stderr = tail
	// A grandchild that keeps stderr open must not make Wait hang.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		guard.stop()
		return nil, &errFatal{fmt.Errorf("objective: worker stdin: %w", err)}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		stdin.Close()
		guard.stop()
		return nil, &errFatal{fmt.Errorf("objective: worker stdout: %w", err)}
	}
	cmd.Stdout = pw
	p := &proc{cmd: cmd, stdin: stdin, out: pr, stdout: bufio.NewReaderSize(pr, 1<<16), stderr: tail,
		exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Linux's Pdeathsig (sysProcAttr) kills the worker when the
		// thread that started it exits, not the process: the runtime
		// ends a thread whose locked goroutine returns, so a worker
		// started from a shared thread could be killed by code that
		// has nothing to do with it. This goroutine holds its own
		// thread, locked, from the start until the worker is reaped,
		// and then returns still locked, so that its thread ends then.
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	err = <-started
	pw.Close() // the child holds its own copy
	if err != nil {
		pr.Close()
		guard.stop()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, &errFatal{fmt.Errorf("objective: cannot start worker %q: %w", strings.Join(argv, " "), err)}
		}
		return nil, &errFatal{fmt.Errorf("objective: starting worker %q: %w", strings.Join(argv, " "), err)}
	}
	p.guard = guard
	return p, nil
}

// hasExited reports whether the process has been reaped.
func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill ends the process and reaps it; it is safe to call more than once.
func (p *proc) kill() {
	if p.dead {
		return
	}
	p.dead = true
	exited := p.hasExited()
	if !exited {
		p.killed = true
	}
	// The processes the worker started go with it, also when it has exited
	// by itself: none is left to run on unread.
	killGroup(p.cmd.Process, p.guard, exited)
	_ = p.stdin.Close()
	<-p.exited
	p.guard.stop()
	// A grandchild may still hold the write end; closing ours ends a read
	// in progress.
	_ = p.out.Close()
}

// close asks the process to exit by closing its stdin, and kills it if it
// has not exited within grace.
func (p *proc) close(grace time.Duration) {
	if p.dead {
		return
	}
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.kill()
}

// exitStatus describes how the process ended when it ended by itself
// ("exit status 3", "signal: segmentation fault"), or "" while it runs or
// when we killed it.
func (p *proc) exitStatus() string {
	if !p.hasExited() || p.killed {
		return ""
	}
	if p.exitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.ProcessState.String()
	}
	return p.exitErr.Error()
}

// call sends req and waits for its response, for at most timeout (no limit
// when timeout <= 0). Any failure other than a well-formed response leaves
// the process killed, because its stream can no longer be trusted to be in
// step.
//
// When ctx is done while the request is in flight, call goes on waiting for
// the answer, up to the same timeout: the program may be doing work the user
// pays for (an oracle billed per call, an assay), and an answer that arrives
// is paid for and logged once, where one abandoned would be asked for again
// after a resume. interrupted, if not nil, is called once when that wait
// begins. The caller stops sending requests; a process that must stop at
// once is killed (nfbo's second interrupt does that).
func (p *proc) call(ctx context.Context, req *request, timeout time.Duration, interrupted func()) (*response, error) {
	if p.dead {
		return nil, errors.New("worker is not running")
	}
	p.nextID++
	req.ID = p.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return nil, &errFatal{fmt.Errorf("objective: encoding request: %w", err)}
	}
	line = append(line, '\n')

	type reply struct {
		line []byte
		err  error
	}
	done := make(chan reply, 1)
	go func() {
		if _, err := p.stdin.Write(line); err != nil {
			done <- reply{err: fmt.Errorf("writing request: %w", err)}
			return
		}
		b, err := p.stdout.ReadBytes('\n')
		done <- reply{line: b, err: err}
	}()

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	pid := p.cmd.Process.Pid
	var r reply
	// After an interrupt (ctx done) the answer is still waited for, as below; the failures then report the
	// interrupt, which is why the call stopped.
	var interruptErr error
	fail := func(err error) (*response, error) {
		if interruptErr != nil {
			return nil, interruptErr
		}
		return nil, err
	}
	ctxDone := ctx.Done()
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-p.exited:
			// The worker is gone, but its answer may still be in the pipe (or
			// a grandchild may hold the pipe open: then there is none).
			select {
			case r = <-done:
				break wait
			case <-time.After(exitGrace):
				p.kill()
				<-done
				return fail(fmt.Errorf("worker (pid %d) exited before answering", pid))
			}
		case <-timer:
			p.kill()
			<-done
			return fail(fmt.Errorf("worker (pid %d) did not answer within %v; killed", pid, timeout))
		case <-ctxDone:
			ctxDone, interruptErr = nil, ctx.Err()
			if interrupted != nil {
				interrupted()
			}
		}
	}
	if r.err != nil {
		// Give a worker that is on its way out the time to exit by itself,
		// so that its exit status is its own.
		select {
		case <-p.exited:
		case <-time.After(exitGrace):
		}
		exited := p.hasExited()
		p.kill()
		if exited || errors.Is(r.err, io.EOF) {
			return nil, fmt.Errorf("worker (pid %d) exited before answering", pid)
		}
		return nil, fmt.Errorf("worker (pid %d): %w", pid, r.err)
	}
	resp, err := decodeResponse(r.line)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("worker (pid %d) wrote a line that is not a JSON response (%.80q): %w", pid, r.line, err)
	}
	if resp.ID == nil || *resp.ID != req.ID {
		p.kill()
		return nil, fmt.Errorf("worker (pid %d) answered out of step: want id %d", pid, req.ID)
	}
	if p.hasExited() {
		// It answered, then exited: the answer stands, the next request
		// starts a fresh worker.
		p.kill()
	}
	return resp, nil
}

// tailWriter passes a worker's standard error through to w and keeps its
// last bytes, so that a failure can quote the worker's last words.
type tailWriter struct {
	w io.Writer

	mu   sync.Mutex
	tail []byte
}

// tailKeep is how much of a worker's standard error is kept.
const tailKeep = 4096

// Write implements io.Writer.
func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.tail = append(t.tail, b...)
	if len(t.tail) > tailKeep {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-tailKeep:]...)
	}
	t.mu.Unlock()
	return t.w.Write(b)
}

// lastLine returns the last non-blank line written, clipped to 200 bytes.
func (t *tailWriter) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := bytes.TrimRight(t.tail, " \t\r\n")
	if i := bytes.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = bytes.TrimSpace(s)
	if len(s) > 200 {
		s = append(append([]byte(nil), s[:197]...), "..."...)
	}
	return string(s)
}
