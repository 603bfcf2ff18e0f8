package optimize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/queue"
)

// openQueue returns the objective of a run whose molecules are scored by "nfbo worker" processes on the NATS
// server a.Queue, the canonicaliser of its budget, and a function that closes both. The canonicaliser is RDKit's,
// one worker here, when RDKit is installed (with checkTask it also checks an RDKit task's name before the first
// batch), else the SELFIES-canonical form: the workers' machines need RDKit, this one need not.
func openQueue(ctx context.Context, a Args, ropts objective.RDKitOptions, checkTask bool, warnf func(string, ...any)) (*queue.Objective, objective.Canonicalizer, func(), error) {
	runID, err := queueRunID(a)
	if err != nil {
		return nil, nil, nil, err
	}
	var canon objective.Canonicalizer = keyCanonicalizer{}
	closeCanon := func() {}
	ropts.Workers, ropts.Timeout, ropts.ChunkSize = 1, 0, 0
	rd, err := objective.NewRDKit(ropts)
	if err == nil {
		err = rd.Start(ctx)
	}
	if err == nil && checkTask {
		err = rd.CheckTasks(ctx, []string{a.Task})
		var ut *objective.UnknownTaskError
		if errors.As(err, &ut) {
			err = &ArgError{fmt.Errorf("%w; workers that run a program of yours need its -objective-cmd here too "+
				"(it names the objective in run.json; only the workers run it)", err)}
		}
	}
	switch {
	case err == nil:
		canon, closeCanon = rd, func() { rd.Close() }
	case errors.Is(err, objective.ErrRDKitMissing):
		warnf("RDKit is missing here: molecules are identified by their SELFIES-canonical SMILES (the workers score them)")
	default:
		if rd != nil {
			rd.Close()
		}
		return nil, nil, nil, err
	}
	nc, err := queue.ConnectWaiting(ctx, a.Queue, queue.ConnectOptions{Credentials: a.QueueCredentials, Name: "nfbo optimize run " + runID, Warnf: warnf}, a.QueueWait)
	if err != nil {
		closeCanon()
		return nil, nil, nil, err
	}
	q, err := queue.NewObjective(ctx, nc, queue.Options{RunID: runID, Task: a.Task, Canon: canon, Warnf: warnf})
	if err != nil {
		nc.Close()
		closeCanon()
		return nil, nil, nil, err
	}
	start := "nfbo worker -queue " + a.Queue + " -task " + a.Task
	if a.ObjectiveCmd != "" {
		start += fmt.Sprintf(" -objective-cmd %q", a.ObjectiveCmd)
	}
	warnf("the molecules of task %s go to the workers of the NATS queue %s (run id %s; start them with: %s)",
		a.Task, a.Queue, runID, start)
	return q, canon, func() { nc.Close(); closeCanon() }, nil
}

// queueRunID names the run on the queue: a hash of this machine's name, the run directory's absolute path and
// the task. A resumed run gets the id it had, and so collects the results that arrived while it was down; runs on
// other machines or in other directories get others. A run resumed on another machine (a run directory on a
// shared disk) gets another id, and its molecules still in the queue are scored again.
func queueRunID(a Args) (string, error) {
	dir, err := filepath.Abs(a.Out)
	if err != nil {
		return "", fmt.Errorf("optimize: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("optimize: naming the run on the queue: %w", err)
	}
	sum := sha256.Sum256([]byte(host + "\x00" + dir + "\x00" + a.Task))
	return hex.EncodeToString(sum[:8]), nil
}

// OpenQueue returns the objective of the ask/tell run a (its run directory, task and -queue) whose molecules
// "nfbo worker" processes score, for "nfbo serve -queue", with the function that closes it. The task is the
// workers' to know: an ask/tell run's task names the user's objective, which only the workers run.
func OpenQueue(ctx context.Context, a Args, warnf func(string, ...any)) (objective.StreamObjective, func(), error) {
	ropts := objective.RDKitOptions{PoolOptions: objective.PoolOptions{Warnf: warnf}, Python: a.Python}
	q, _, closeQ, err := openQueue(ctx, a, ropts, false, warnf)
	if err != nil {
		return nil, nil, err
	}
	return q, closeQ, nil
}
