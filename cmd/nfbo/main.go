// Command nfbo is latent Bayesian optimisation of molecules with an
// autoregressive normalizing flow (NF-BO).
//
// Run "nfbo help" for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
)

// root returns the command tree. Each subcommand is built by its own
// constructor in its own file.
func root() *Command {
	return &Command{
		Long: "nfbo: latent Bayesian optimisation of molecules with an autoregressive normalizing flow.",
		Commands: []*Command{
			// Registered subcommands, one line each.
			newPretrainCmd(),
			newCurveCmd(),
			newSelfiesCmd(),
			newReconCmd(),
			newExportCmd(),
			newTasksCmd(),
			newScoreCmd(),
			newReportCmd(),
			newBenchCmd(),
			newOptimizeCmd(),
			newAskCmd(),
			newTellCmd(),
			newServeCmd(),
			newWorkerCmd(),
			newStatusCmd(),
			newFitcheckCmd(),
			newFlowstatsCmd(),
			newGPUCmd(),
			newVersionCmd(),
		},
	}
}

func main() {
	ctx, stop := signalContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	stopProfile := startProfile(os.Getenv("NFBO_CPUPROFILE"))
	cmd := root()
	cmd.setStreams(os.Stdin, os.Stdout, os.Stderr)
	err := cmd.Execute(ctx, os.Args[1:])
	stopProfile()
	if err != nil {
		var sig *signalError
		switch {
		case errors.As(err, new(*ExitError)):
			// The command has said what went wrong.
		case errors.Is(err, flag.ErrHelp):
			// -h: the usage was the answer.
		case err == context.Canceled && errors.As(context.Cause(ctx), &sig):
			fmt.Fprintf(os.Stderr, "nfbo: stopped by %v\n", sig)
		default:
			fmt.Fprintln(os.Stderr, "nfbo:", err)
		}
	}
	os.Exit(exitStatus(ctx, err))
}

// startProfile writes a CPU profile of the whole command to path (NFBO_CPUPROFILE, for developers: where a run's
// time goes, `go tool pprof`), unless path is empty, and returns the function that ends it. A profile that
// cannot start is reported and the command runs without it.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nfbo: NFBO_CPUPROFILE:", err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "nfbo: NFBO_CPUPROFILE:", err)
		}
	}
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

// Error names the signal, e.g. "interrupt (SIGINT)".
func (e *signalError) Error() string {
	if s, ok := e.sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGINT:
			return "interrupt (SIGINT)"
		case syscall.SIGTERM:
			return "termination signal (SIGTERM)"
		case syscall.SIGHUP:
			return "hangup (SIGHUP: its terminal or SSH session closed)"
		}
	}
	return e.sig.String()
}

// Is makes a signal a cancellation: errors.Is(err, context.Canceled) holds.
func (e *signalError) Is(target error) bool { return target == context.Canceled }

// signalContext returns a copy of parent that is cancelled when one of sigs arrives, with a *signalError naming
// the signal as its cause (signal.NotifyContext's cause does not say which signal in a form exitStatus can
// read). A second signal stops the process at once, for a user who will not wait for the requests in flight:
// one line on stderr, then exit status 128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for
// SIGHUP, which main handles as SIGTERM: a closed terminal or SSH session no longer kills a run mid-batch). The
// objective's workers die with the process (package objective). The second signal is caught rather than left
// to its default action because a process started in the background of a non-interactive shell inherits SIGINT
// ignored, which signal.Stop would restore: a second Ctrl-C did nothing.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	stopped := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&signalError{s})
		case <-stopped:
			return
		}
		select {
		case s := <-ch:
			status := 130
			if n, ok := s.(syscall.Signal); ok {
				status = 128 + int(n)
			}
			fmt.Fprintf(os.Stderr, "nfbo: %v, the second signal: stopping at once, without waiting for the requests in flight\n", &signalError{s})
			os.Exit(status)
		case <-stopped:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(stopped)
		})
		cancel(context.Canceled)
	}
}
