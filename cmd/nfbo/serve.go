package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/nfbo/nfbo/bench"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/queue"
	"github.com/nfbo/nfbo/labserve"
	"github.com/nfbo/nfbo/optimize"
	"github.com/nfbo/nfbo/rundir"
)

// newServeCmd returns "nfbo serve", ask/tell over HTTP: the flags, the run directory's lock and the listener;
// the handlers are labserve's.
func newServeCmd() *Command {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var a optimize.Args
	addRunFlags(fs, &a)
	fs.StringVar(&a.Out, "run", "", "run `directory` (required); made by nfbo ask, or by the first ask of this server with optimize's flags")
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on; any address but a loopback one needs -token-file")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token every request must carry (Authorization: Bearer TOKEN); "+
		"readable by its owner alone (chmod 600)")
	tokenShared := fs.Bool("token-file-shared", false, "serve with a -token-file that other users of the machine can read, with a warning")
	queueURL := fs.String("queue", "", "NATS server `URL` (nats://HOST:4222) whose workers score the run (nfbo worker -task with the run's task): "+
		"the server then asks and tells by itself, and HTTP shows status and reports; credentials by the -nats-* flags or the environment")
	natsFlags := addNATSFlags(fs)
	connectWait := addConnectWait(fs)
	cmd := &Command{
		UsageLine: "serve -run DIR [-addr HOST:PORT] [-token-file FILE] [-queue URL [NATS credential flags]] [optimize's flags for a new run]",
		Short:     "ask/tell over HTTP/JSON",
		Long:      serveHelp,
		Flag:      fs,
	}
	cmd.Run = func(ctx context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "serve: unexpected arguments %q", args)
		}
		if a.Out == "" {
			return Usagef(cmd, "serve: -run is required")
		}
		if *connectWait < 0 {
			return Usagef(cmd, "serve: -connect-wait must not be negative, not %v", *connectWait)
		}
		token, err := labserve.Token(*addr, *tokenFile, *tokenShared, func(format string, args ...any) {
			fmt.Fprintf(cmd.Stderr, "nfbo serve: warning: "+format+"\n", args...)
		})
		if err != nil {
			return Usagef(cmd, "serve: %v", err)
		}
		run, switched, err := resolveRunArgs(cmd, fs, a, "serve")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(a.Out, 0o755); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		unlock, err := rundir.Lock(a.Out)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if switched != "" {
			fmt.Fprintln(cmd.Stderr, switched)
		}
		defer unlock()
		var scorer objective.StreamObjective
		if *queueURL != "" {
			q, server, closeQ, err := openServeQueue(ctx, cmd, run, *queueURL, *natsFlags, *connectWait)
			if err != nil {
				return err
			}
			defer closeQ()
			scorer = q
			*queueURL = server
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		ask := func(ctx context.Context, max int) ([]rundir.Asked, rundir.Info, error) {
			run.Resume = rundir.Exists(filepath.Join(run.Out, rundir.InfoFile)) // made by the first ask
			return optimize.Ask(ctx, optimize.Streams{Stdout: cmd.Stderr, Stderr: cmd.Stderr}, run,
				optimize.AskOptions{Locked: true, Max: max})
		}
		draw := func(ctx context.Context) (bench.DrawFunc, func(), error) {
			return rdkitDrawer(ctx, run.Python, cmd.Stderr)
		}
		handler := labserve.New(a.Out, token, ask, draw)
		handler.MarkRules(func(ctx context.Context) (bench.CheckFunc, func(), error) {
			return defaultRulesChecker(ctx, run.Python, cmd.Stderr)
		})
		srv := &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       2 * time.Minute,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}
		fmt.Fprintf(cmd.Stderr, "nfbo serve: run %s on http://%s/v1/ (ask, tell, status, report)\n", a.Out, ln.Addr())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		driven := make(chan error, 1)
		if scorer != nil {
			go func() { driven <- handler.Drive(ctx, "the workers of the NATS queue "+*queueURL, scorer) }()
		}
		for stop := false; !stop; {
			select {
			case err := <-done:
				return fmt.Errorf("serve: %w", err)
			case err := <-driven:
				if err != nil && ctx.Err() == nil {
					srv.Close()
					return fmt.Errorf("serve: %w", err)
				}
				if err == nil {
					fmt.Fprintf(cmd.Stderr, "nfbo serve: the run is finished; status and reports answer until Ctrl-C\n")
				}
			case <-ctx.Done():
				stop = true
			}
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("serve: shutdown: %w", err)
		}
		fmt.Fprintf(cmd.Stderr, "nfbo serve: stopped\n")
		return ctx.Err()
	}
	return cmd
}

// openServeQueue opens the NATS queue at url whose workers score the run's molecules, waiting up to wait for a
// server that does not answer yet; it returns the objective, the server's URL without credentials and a function
// that closes the queue.
func openServeQueue(ctx context.Context, cmd *Command, run optimize.Args, url string, flags queue.Credentials, wait time.Duration) (objective.StreamObjective, string, func(), error) {
	server, cred, err := natsCredentials(url, flags)
	if err != nil {
		return nil, "", nil, Usagef(cmd, "serve: -queue: %v", err)
	}
	run.Queue, run.QueueCredentials, run.QueueWait = server, cred, wait
	warnf := func(format string, args ...any) { fmt.Fprintf(cmd.Stderr, "nfbo serve: "+format+"\n", args...) }
	q, closeQ, err := optimize.OpenQueue(ctx, run, warnf)
	if err != nil {
		return nil, "", nil, fmt.Errorf("serve: %w", err)
	}
	return q, server, closeQ, nil
}

// serveHelp is "nfbo help serve".
const serveHelp = `Serve offers the ask/tell run in -run DIR over HTTP, for programs and lab
systems that would rather call than run commands:

  POST /v1/ask     the next batch: {"batch": [{"id": "m1", "smiles": "..."}],
                   "finished": false, "calls": N, "budget": N}; asking again
                   before the batch is told gives the same batch; ?n=N hands
                   out at most N molecules of it (nfbo ask -n)
  POST /v1/tell    scores, as the body: CSV (id,score) or JSON lines, as
                   "nfbo tell" reads them; answers {"new": N, "repeated": N,
                   "calls": N, "awaiting": N}; a bad row is a 400 naming its
                   line, and nothing of that request is applied
  GET  /v1/status  the run: task, budget, calls, the molecules awaiting
                   scores and the best ten found
  GET  /v1/report  the run's table of Top-k and AUC Top-k (Markdown)
  GET  /v1/report.html
                   the run's page: its curve and best molecules drawn

Every told score is on disk (appended to evaluations.jsonl and synced) before
the answer is sent. The server is the run directory's one writer: it holds the
directory's lock while it runs (a second serve, an ask or a tell of the same
run waits or is refused) and serves asks and tells one at a time, reads
concurrently. Errors are {"error": "..."} with a 4xx or 5xx status.

It listens on 127.0.0.1 by default. Any other address, one reachable from
other machines, is refused unless -token-file names a file holding a bearer
token; then every request must carry "Authorization: Bearer TOKEN" (the
scheme in any case, one or more spaces before the token). A token file that
other users can read is refused (chmod 600 it) unless -token-file-shared.

A tell's body is read as it arrives, and at most two tells are read or
applied at once; others wait their turn, before reading their bodies, for as
long as their clients do. A body is at most 32 MiB, 1,048,576 rows and lines
of 1 MiB (a 413 or a 400 otherwise), so a tell holds at most about 150 MB.
Ctrl-C or SIGTERM stops the server after the requests in flight.

With -queue URL the run scores itself on the workers of a NATS JetStream
server ("nfbo worker -queue URL -task TASK", with the program of the run's
task): the server asks for each batch, publishes it, and tells each score as
it arrives, so a score is on disk before it leaves the NATS server; stopped
and started again, it collects what the workers answered meanwhile. A
molecule the workers give up on (-max-failures) is told as an error, score 0:
an ask/tell run cannot leave a molecule unanswered. HTTP asks and tells are
then refused (409); status and reports answer, also after the run is done.`
