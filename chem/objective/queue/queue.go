// Package queue scores molecules on many machines through NATS JetStream
// work queues: the optimiser publishes each molecule of a batch as a
// message, workers anywhere pull the messages, score them with an
// objective.Objective (the RDKit pool or the user's program) and publish
// the results, which the optimiser collects as they arrive.
//
// Two streams hold the traffic; whichever side starts first creates them
// (file storage, one replica; create them yourself for a cluster):
//
//   - NFBO_TODO, a work-queue stream: one message per molecule, subject
//     nfbo.todo.TASK.RUN.KEY. A message leaves the stream when a worker
//     acknowledges it, after publishing its result. Its message id is the
//     run id and the molecule's canonical SMILES, so JetStream drops a
//     second copy published within the duplicate window.
//   - NFBO_RESULTS, a limits stream: the latest result per molecule,
//     subject nfbo.result.RUN.KEY, kept until the optimiser has written it
//     to the evaluation log (then it deletes it) or for MaxAge.
//
// TASK is the task name (hashed when it is not a plain token), RUN the run
// id and KEY a hash of the canonical SMILES. The workers of one task share
// the durable pull consumer nfbo-worker-TASK; each run has the durable
// consumer nfbo-run-RUN on its results.
//
// Because each molecule has subjects of its own, the optimiser can ask the
// server what became of it: before publishing a molecule it looks for its
// result (a worker answered it while the optimiser was down: it is
// collected, not published again) and for its todo message (still queued
// or being scored: it waits for it). A crash of the optimiser, kill -9
// included, therefore costs nothing: the workers go on, and the resumed
// run collects their results. A crash of a worker costs the molecules it
// was scoring, which JetStream delivers again after the ack wait.
package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream names.
const (
	// TodoStream is the work-queue stream of molecules to score.
	TodoStream = "NFBO_TODO"
	// ResultStream is the stream of their results.
	ResultStream = "NFBO_RESULTS"
)

// DefaultResultMaxAge is how long a result waits in ResultStream for its
// optimiser when Options.ResultMaxAge is 0: long enough for a run that
// crashed on Friday evening to be resumed on Monday.
const DefaultResultMaxAge = 30 * 24 * time.Hour

// DefaultDuplicateWindow is the todo stream's duplicate window when
// Options.DuplicateWindow is 0: JetStream's own default.
const DefaultDuplicateWindow = 2 * time.Minute

// token matches the names usable as one subject token and in a consumer
// name as they are.
var token = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidRunID reports whether id can name a run: 1 to 64 letters, digits,
// '-' or '_'.
func ValidRunID(id string) bool { return token.MatchString(id) }

// taskToken is the task as a subject token: the name itself when it is a
// plain token, else "h" and a hash of it.
func taskToken(task string) string {
	if token.MatchString(task) {
		return task
	}
	sum := sha256.Sum256([]byte(task))
	return "h" + hex.EncodeToString(sum[:8])
}

// moleculeKey is the subject token of a molecule: 128 bits of the SHA-256
// of its canonical SMILES, which may hold '.', '*' and other characters a
// subject cannot.
func moleculeKey(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:16])
}

func todoSubject(task, run, key string) string {
	return "nfbo.todo." + taskToken(task) + "." + run + "." + key
}

func resultSubject(run, key string) string { return "nfbo.result." + run + "." + key }

func workerConsumer(task string) string { return "nfbo-worker-" + taskToken(task) }

func runConsumer(run string) string { return "nfbo-run-" + run }

// todoMsg is the body of a message on TodoStream.
type todoMsg struct {
	Run  string `json:"run"`
	Task string `json:"task"`
	// SMILES is the molecule as the optimiser was asked for it; the worker
	// scores this spelling, as a local pool would.
	SMILES string `json:"smiles"`
	// Canonical identifies the molecule (its message id, its KEY).
	Canonical string `json:"canonical"`
}

// resultMsg is the body of a message on ResultStream.
type resultMsg struct {
	Run       string  `json:"run"`
	Task      string  `json:"task"`
	SMILES    string  `json:"smiles"`
	Canonical string  `json:"canonical"`
	Score     float64 `json:"score"`
	Reason    string  `json:"reason,omitempty"`
	// Failed: no answer after the delivery limit (objective.Result.Failed).
	Failed bool `json:"failed,omitempty"`
	// Worker names the worker (host and process id), Delivery the attempt
	// that answered and Seconds the time the objective took: for people
	// reading the stream, not for the optimiser.
	Worker   string  `json:"worker,omitempty"`
	Delivery int     `json:"delivery,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
}

func decode[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// streamConfigs are the streams as this package creates them.
func streamConfigs(dupWindow, resultAge time.Duration) []jetstream.StreamConfig {
	if dupWindow <= 0 {
		dupWindow = DefaultDuplicateWindow
	}
	if resultAge <= 0 {
		resultAge = DefaultResultMaxAge
	}
	return []jetstream.StreamConfig{
		{
			Name:        TodoStream,
			Description: "nfbo: molecules to score, one message each (nfbo.todo.TASK.RUN.KEY)",
			Subjects:    []string{"nfbo.todo.>"},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			Duplicates:  dupWindow,
		},
		{
			Name:              ResultStream,
			Description:       "nfbo: the latest result of each molecule (nfbo.result.RUN.KEY), until its run has logged it",
			Subjects:          []string{"nfbo.result.>"},
			Retention:         jetstream.LimitsPolicy,
			Storage:           jetstream.FileStorage,
			MaxMsgsPerSubject: 1,
			MaxAge:            resultAge,
			Duplicates:        dupWindow,
		},
	}
}

// openStreams returns the two streams, creating those that do not exist.
// Streams that exist are used as they are, so that an operator may create
// them with other settings (replicas in a cluster, say).
func openStreams(ctx context.Context, js jetstream.JetStream, dupWindow, resultAge time.Duration) (todo, results jetstream.Stream, err error) {
	var out [2]jetstream.Stream
	for i, cfg := range streamConfigs(dupWindow, resultAge) {
		s, err := js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = js.Stream(ctx, cfg.Name) // created meanwhile by another process
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("queue: opening stream %s: %w", cfg.Name, err)
		}
		out[i] = s
	}
	return out[0], out[1], nil
}

// transient reports whether err may go away by itself: the server is
// restarting, unreachable or slow. Errors the server answers deliberately
// (permissions, a missing stream) are not.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case 408, 500, 503:
			return true
		}
		return false
	}
	return true
}

// retryBackoff is the wait before trying again an operation that failed
// with a transient error: short, so that a restarted server is noticed
// within a second or two.
const retryBackoff = 500 * time.Millisecond

// retry calls fn until it succeeds, fails with an error that is not
// transient, or ctx is done. The first transient failure of an outage is
// told to warnf with what, once.
func retry(ctx context.Context, what string, warnf func(string, ...any), fn func(ctx context.Context) error) error {
	warned := false
	for {
		// Each attempt gets a deadline: a request sent to a server that went
		// away must not wait for ctx.
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			if warned {
				warnf("queue: %s: the NATS server answers again", what)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transient(err) {
			return fmt.Errorf("queue: %s: %w", what, err)
		}
		if !warned {
			warnf("queue: %s: %v; trying again until the NATS server answers", what, err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryBackoff):
		}
	}
}
