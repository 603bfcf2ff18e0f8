package queue

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nfbo/nfbo/chem/objective"
)

// BenchmarkThroughput measures the queue end to end on one machine: a Budget
// (its log synced after every result) over the queue objective, an embedded
// server, and W workers in this process, each scoring one molecule at a time
// with a fake objective that sleeps 0.5 s (or nothing, for the queue's own
// cost). Sleep-bound workers need no CPU, so W of them show the queue's
// scaling even on a small, loaded machine. Besides the time per batch of 24
// molecules it reports:
//
//   - mol/s, molecules scored per second;
//   - speedup, the objective's time (24 × 0.5 s) over the batch's: W at best;
//   - overhead-ms/mol, the time a worker slot spends on a molecule beyond the
//     objective (W × batch time / 24 − 0.5 s): the queue's cost per molecule,
//     the publish, the pull, the result and the synced log included.
//
// Run it with: go test ./chem/objective/queue -run '^$' -bench Throughput -benchtime 1x
func BenchmarkThroughput(b *testing.B) {
	const n = 24
	for _, delay := range []time.Duration{500 * time.Millisecond, 0} {
		for _, w := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("delay=%v/workers=%d", delay, w), func(b *testing.B) {
				benchThroughput(b, delay, w, n)
			})
		}
	}
}

func benchThroughput(b *testing.B, delay time.Duration, workers, n int) {
	ns := startServer(b)
	fake := newFake(delay)
	startWorkers(b, ns, workers, fake, WorkerOptions{Task: "t"})
	nc := ns.connect(b)
	q, err := NewObjective(context.Background(), nc, Options{RunID: "bench", Task: "t", Canon: sameCanon{}})
	if err != nil {
		b.Fatal(err)
	}
	budget, err := objective.OpenBudget(filepath.Join(b.TempDir(), "evaluations.jsonl"), q, sameCanon{}, objective.BudgetOptions{Task: "t"})
	if err != nil {
		b.Fatal(err)
	}
	defer budget.Close()
	// A first batch warms the connections, the consumers and the file store.
	if _, err := budget.Evaluate(context.Background(), []string{"warm-up"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		batch := make([]string, n)
		for j := range batch {
			batch[j] = fmt.Sprintf("C%dO%d", i, j)
		}
		if _, err := budget.Evaluate(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(n)/per.Seconds(), "mol/s")
	if delay > 0 {
		b.ReportMetric(float64(n)*delay.Seconds()/per.Seconds(), "speedup")
	}
	b.ReportMetric((float64(workers)*per.Seconds()/float64(n)-delay.Seconds())*1e3, "overhead-ms/mol")
}
