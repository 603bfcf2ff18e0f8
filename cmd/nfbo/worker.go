package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/queue"
)

// newWorkerCmd returns "nfbo worker", which scores the molecules of a NATS JetStream work queue.
func newWorkerCmd() *Command {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	url := fs.String("queue", "", "NATS server `URL`, e.g. nats://HOST:4222, or several separated by commas (required)")
	task := fs.String("task", "", "the task whose molecules this worker scores: the optimiser's -task (required); "+
		"computed by the RDKit worker, or passed through to -objective-cmd")
	objCmd := fs.String("objective-cmd", "", "external objective program speaking docs/objective-protocol.md, "+
		"e.g. \"python3 oracle.py\" (split at spaces, no shell); without it, the RDKit worker")
	concurrency := fs.Int("concurrency", 1, "molecules scored at once (`N` objective processes)")
	ackWait := fs.Duration("ack-wait", queue.DefaultAckWait, "how long the server waits for news of a molecule from a worker "+
		"that may have died before giving it to another (a live worker says it is alive every third of it)")
	maxFailures := fs.Int("max-failures", queue.DefaultMaxFailures, "failed answers of the objective on a molecule (its program "+
		"crashed, timed out or refused it), on any workers, before it is given up (`N`); the optimiser then neither pays for nor logs it")
	maxDeliver := fs.Int("max-deliver", queue.DefaultMaxDeliver, "deliveries of a molecule, by the server to any workers, before it "+
		"is given up (`N`): workers that die on it count, as do failed answers")
	timeout := fs.Duration("timeout", 5*time.Minute, "longest the objective may take on one molecule before its process is restarted")
	python := fs.String("python", objective.DefaultPython, "Python interpreter that can import RDKit")
	connectWait := addConnectWait(fs)
	creds := addNATSFlags(fs)
	cmd := &Command{
		UsageLine: "worker -queue URL -task NAME [-objective-cmd CMD] [-concurrency N] [-ack-wait D] [-max-failures N] [-max-deliver N] [NATS credential flags]",
		Short:     "score the molecules of optimisers on other machines (NATS JetStream)",
		Long:      workerHelp,
		Flag:      fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		switch {
		case len(args) != 0:
			return Usagef(cmd, "worker: unexpected arguments %q", args)
		case *url == "":
			return Usagef(cmd, "worker: -queue is required")
		case *task == "":
			return Usagef(cmd, "worker: -task is required")
		case *concurrency < 1:
			return Usagef(cmd, "worker: -concurrency must be at least 1, not %d", *concurrency)
		case *maxFailures < 1:
			return Usagef(cmd, "worker: -max-failures must be at least 1, not %d", *maxFailures)
		case *maxDeliver < 1:
			return Usagef(cmd, "worker: -max-deliver must be at least 1, not %d", *maxDeliver)
		case *ackWait <= 0:
			return Usagef(cmd, "worker: -ack-wait must be positive, not %v", *ackWait)
		case *timeout <= 0:
			return Usagef(cmd, "worker: -timeout must be positive, not %v", *timeout)
		case *connectWait < 0:
			return Usagef(cmd, "worker: -connect-wait must not be negative, not %v", *connectWait)
		}
		server, cred, err := natsCredentials(*url, *creds)
		if err != nil {
			return Usagef(cmd, "worker: %v", err)
		}
		out := &objective.LockedWriter{W: cmd.Stdout}
		stderr := &objective.LockedWriter{W: cmd.Stderr}
		warnf := func(format string, a ...any) { fmt.Fprintf(stderr, "nfbo worker: "+format+"\n", a...) }

		// The queue lets the objective fail on a molecule -max-failures times; the pool's own breaker, which stops a
		// program that fails request after request, must not trip on one molecule's attempts alone: each is up to
		// Retries+1 = 3 requests, so twice that many for all of them.
		popts := objective.PoolOptions{Workers: *concurrency, Timeout: *timeout, ChunkSize: 1, Stderr: stderr, Warnf: warnf,
			MaxFailures: 2 * 3 * *maxFailures}
		var pool *objective.Pool
		if *objCmd != "" {
			argv := objective.SplitCommand(*objCmd)
			if len(argv) == 0 {
				return Usagef(cmd, "worker: -objective-cmd is empty")
			}
			pool, err = objective.NewCommand(argv, popts)
		} else {
			pool, err = objective.NewRDKit(objective.RDKitOptions{PoolOptions: popts, Python: *python})
			if err == nil {
				err = pool.CheckTasks(ctx, []string{*task})
				var ut *objective.UnknownTaskError
				if errors.As(err, &ut) {
					err = Usagef(cmd, "worker: %v", err)
				}
			}
		}
		if pool != nil {
			defer pool.Close()
		}
		if err != nil {
			return err
		}

		host, _ := os.Hostname()
		name := host + " pid " + strconv.Itoa(os.Getpid())
		nc, err := queue.ConnectWaiting(ctx, server, queue.ConnectOptions{Credentials: cred, Name: "nfbo worker on " + name, Warnf: warnf}, *connectWait)
		if err != nil {
			return err
		}
		defer nc.Close()
		fmt.Fprintf(stderr, "nfbo worker: scoring task %s from %s, %d at a time (ack wait %v, %d attempts a molecule)\n",
			*task, server, *concurrency, *ackWait, *maxDeliver)
		stopped := make(chan struct{})
		defer close(stopped)
		go func() {
			select {
			case <-ctx.Done():
				fmt.Fprintln(stderr, "nfbo worker: stopping once the molecules in flight are scored and published; "+
					"a second Ctrl-C stops at once (they then go to another worker after -ack-wait)")
			case <-stopped:
			}
		}()
		return queue.Serve(ctx, nc, pool.Objective(*task), queue.WorkerOptions{
			Task: *task, Concurrency: *concurrency, AckWait: *ackWait, MaxFailures: *maxFailures, MaxDeliver: *maxDeliver, Name: name, Warnf: warnf,
			Report: func(ev queue.Event) {
				line := fmt.Sprintf("%s\t%s\trun %s\tattempt %d\t%.17g\t%.2fs", ev.Outcome, ev.SMILES, ev.Run, ev.Delivery,
					ev.Score, ev.Elapsed.Seconds())
				if ev.Reason != "" {
					line += "\t" + objective.CleanMessage(ev.Reason)
				}
				fmt.Fprintln(out, line)
			},
		})
	}
	return cmd
}

// addNATSFlags defines the NATS credential flags of the commands that connect to a server (worker, optimize) and
// returns where they are kept.
func addNATSFlags(fs *flag.FlagSet) *queue.Credentials {
	var c queue.Credentials
	fs.StringVar(&c.User, "nats-user", "", "NATS user (or $"+queue.EnvUser+")")
	fs.StringVar(&c.Password, "nats-password", "", "NATS password (or $"+queue.EnvPassword+", which ps does not show)")
	fs.StringVar(&c.Token, "nats-token", "", "NATS token (or $"+queue.EnvToken+", which ps does not show)")
	fs.StringVar(&c.NKeySeed, "nats-nkey", "", "NATS NKey seed `file` (or $"+queue.EnvNKey+")")
	fs.StringVar(&c.CredsFile, "nats-creds", "", "NATS credentials `file` (or $"+queue.EnvCreds+")")
	fs.StringVar(&c.CA, "nats-ca", "", "PEM `file` of the certificate authorities that sign the NATS server's TLS certificate (or $"+queue.EnvCA+")")
	fs.StringVar(&c.Cert, "nats-cert", "", "TLS client certificate `file` for NATS (or $"+queue.EnvCert+")")
	fs.StringVar(&c.Key, "nats-key", "", "TLS client key `file` for NATS (or $"+queue.EnvKey+")")
	return &c
}

// addConnectWait defines -connect-wait, how long worker, optimize and serve wait for a NATS server that does not
// answer yet.
func addConnectWait(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("connect-wait", queue.DefaultConnectWait, "how long to wait for the NATS server when none answers at the start "+
		"(trying again after 0.5 s, 1 s, 2 s, ... up to 30 s), so that it may start after this; 0 gives up at once")
}

// natsCredentials returns the server URL without credentials, and the credentials: those of the flags, else of
// the URL, else of the environment.
func natsCredentials(url string, flags queue.Credentials) (string, queue.Credentials, error) {
	server, inURL, err := queue.SplitURL(url)
	if err != nil {
		return "", queue.Credentials{}, err
	}
	c := flags.Or(inURL).Or(queue.CredentialsFromEnv(os.Getenv))
	if err := c.Check(); err != nil {
		return "", queue.Credentials{}, err
	}
	return server, c, nil
}

// workerHelp is "nfbo help worker".
const workerHelp = `Worker takes molecules from a NATS JetStream work queue, scores them and
publishes their scores, for "nfbo optimize -queue URL" runs on any machine.
Start as many workers as you like, on as many machines; each takes the
molecules of -task as it is free, -concurrency at a time. The objective is
the RDKit worker for an RDKit task ("nfbo tasks"), or the program of
-objective-cmd (docs/objective-protocol.md), one process per molecule in
flight, started once.

A worker may start before its server: while none answers it tries again,
saying so each time, for up to -connect-wait; once connected it reconnects
for as long as it takes when the server goes away.

A molecule leaves the queue only once its result is published. A worker that
dies (kill -9, a power cut) loses the molecules it was scoring: the server
gives them to another worker after -ack-wait. A molecule on which the
objective fails -max-failures times (its program crashes on it, refuses it or
takes longer than -timeout), on whichever workers, is answered as failed, and
the optimiser treats it as invalid without paying for it. A worker that dies
does not count as a failure of its molecules: the server hands a molecule out
at most -max-deliver times, dead workers and failed answers together, before
it is given up as well. Ctrl-C (or SIGTERM) takes no new molecule and
waits for those in flight, whose scores are published; a second Ctrl-C stops
at once, and those molecules go to another worker after -ack-wait.

The NATS credentials come from the flags below or from the environment:
NFBO_NATS_USER and NFBO_NATS_PASSWORD, NFBO_NATS_TOKEN, NFBO_NATS_NKEY (an
NKey seed file), NFBO_NATS_CREDS (a credentials file), and for TLS
NFBO_NATS_CA, NFBO_NATS_CERT and NFBO_NATS_KEY. A user and password in the
URL work too. Prefer the environment or files for secrets: flags show in ps.

One line per molecule goes to standard output: what happened (scored,
retried, gave up, known), the run, the attempt, the score and the seconds.`
