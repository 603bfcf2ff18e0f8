package labserve

import (
	"context"
	"fmt"

	"github.com/nfbo/nfbo/asktell"
	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/rundir"
)

// Drive scores the run with obj ("nfbo serve -queue": the workers of a NATS queue), named by who in what the
// server answers, until the run has spent its budget or ctx is done: it asks for the next batch, as a client
// would, and tells each score as obj delivers it, so that every score is on disk before obj forgets it (a
// queue's result leaves the server only then) and a server stopped mid-batch, restarted, asks for the same
// batch and collects what arrived meanwhile. A molecule obj gives up on (objective.Result.Failed) is told as
// an error: an ask/tell run cannot leave a molecule unanswered, so it is paid for with score 0 and the reason,
// as a failed synthesis told by a lab would be. While Drive runs, HTTP asks and tells are refused; status and
// reports answer. It returns nil when the run is finished.
func (s *Server) Drive(ctx context.Context, who string, obj objective.StreamObjective) error {
	s.mu.Lock()
	s.driven, s.cached = who, nil
	s.mu.Unlock()
	for {
		s.mu.Lock()
		batch, _, err := s.ask(ctx, 0)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if batch == nil {
			return nil
		}
		smiles := make([]string, len(batch))
		for i, m := range batch {
			smiles[i] = m.SMILES
		}
		err = obj.ScoreStream(ctx, smiles, func(lo, hi int, res []objective.Result) error {
			rows := make([]asktell.Told, hi-lo)
			for k, r := range res {
				rows[k] = asktell.Told{ID: batch[lo+k].ID, Score: r.Score, Line: lo + k + 1}
				switch {
				case r.Failed:
					rows[k].Score, rows[k].Error = 0, fmt.Sprintf("%s gave no answer: %s", who, r.Reason)
				case r.Reason != "":
					rows[k].Score, rows[k].Error = 0, r.Reason
				}
			}
			return s.tellDriven(ctx, who, rows)
		})
		if err != nil {
			return fmt.Errorf("scoring the batch with %s: %w", who, err)
		}
	}
}

// tellDriven applies rows, scores delivered by Drive's objective, to the run.
func (s *Server) tellDriven(ctx context.Context, who string, rows []asktell.Told) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := rundir.ReadInfo(s.dir)
	if err != nil {
		return err
	}
	_, err = asktell.TellRun(ctx, s.dir, who, rows, info, nil)
	s.cached = nil
	return err
}
