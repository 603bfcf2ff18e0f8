package objective

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// proc is one running worker process spoken to over stdin/stdout.
// It is owned by one goroutine at a time (the pool's slot channel).
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	nextID int64
	// waitErr receives the process's exit once it has been reaped.
	waitErr chan error
	dead    bool
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

// startProc starts argv with stderr passed through to stderr.
func startProc(argv []string, stderr io.Writer) (*proc, error) {
	if len(argv) == 0 {
		return nil, &errFatal{errors.New("objective: empty worker command")}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	// A grandchild that keeps stderr open must not make Wait hang.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, &errFatal{fmt.Errorf("objective: worker stdin: %w", err)}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &errFatal{fmt.Errorf("objective: worker stdout: %w", err)}
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, &errFatal{fmt.Errorf("objective: cannot start worker %q: %w", strings.Join(argv, " "), err)}
		}
		return nil, &errFatal{fmt.Errorf("objective: starting worker %q: %w", strings.Join(argv, " "), err)}
	}
	p := &proc{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<16), waitErr: make(chan error, 1)}
	go func() { p.waitErr <- cmd.Wait() }()
	return p, nil
}

// kill ends the process and reaps it; it is safe to call more than once.
func (p *proc) kill() {
	if p.dead {
		return
	}
	p.dead = true
	_ = p.cmd.Process.Kill()
	_ = p.stdin.Close()
	<-p.waitErr
}

// close asks the process to exit by closing its stdin, and kills it if it
// has not exited within grace.
func (p *proc) close(grace time.Duration) {
	if p.dead {
		return
	}
	_ = p.stdin.Close()
	select {
	case <-p.waitErr:
		p.dead = true
	case <-time.After(grace):
		p.dead = true
		_ = p.cmd.Process.Kill()
		<-p.waitErr
	}
}

// call sends req and waits for its response, for at most timeout (no limit
// when timeout <= 0) or until ctx is done. Any failure other than a
// well-formed response leaves the process killed, because its stream can
// no longer be trusted to be in step.
func (p *proc) call(ctx context.Context, req *request, timeout time.Duration) (*response, error) {
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
	select {
	case r := <-done:
		if r.err != nil {
			p.kill()
			if errors.Is(r.err, io.EOF) {
				return nil, fmt.Errorf("worker exited (pid %d) before answering", p.cmd.Process.Pid)
			}
			return nil, fmt.Errorf("worker (pid %d): %w", p.cmd.Process.Pid, r.err)
		}
		var resp response
		if err := json.Unmarshal(r.line, &resp); err != nil {
			p.kill()
			return nil, fmt.Errorf("worker (pid %d) wrote a line that is not a JSON response (%.80q): %w",
				p.cmd.Process.Pid, r.line, err)
		}
		if resp.ID == nil || *resp.ID != req.ID {
			p.kill()
			return nil, fmt.Errorf("worker (pid %d) answered out of step: want id %d", p.cmd.Process.Pid, req.ID)
		}
		return &resp, nil
	case <-timer:
		p.kill()
		<-done
		return nil, fmt.Errorf("worker (pid %d) did not answer within %v; killed", p.cmd.Process.Pid, timeout)
	case <-ctx.Done():
		p.kill()
		<-done
		return nil, ctx.Err()
	}
}
