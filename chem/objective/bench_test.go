package objective

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRDKitScore measures molecules scored per second for the seven
// NF-BO tasks with 1 and 2 workers, on the first 256 decoded molecules of
// the GuacaMol 10k table, and the Go client's overhead: wall time of a
// request minus the time the worker reports spending on it, per molecule.
//
//	go test ./chem/objective -run '^$' -bench RDKitScore -benchtime 3x
func BenchmarkRDKitScore(b *testing.B) {
	header, rows := readCSV(b, filepath.Join(dataDir, "generated", "guacamol_10k_selfies_v2.0.0_scores.csv.gz"))
	sc := column(b, header, "decoded_smiles")
	smiles := make([]string, 256)
	for i := range smiles {
		smiles[i] = rows[i][sc]
	}
	for _, workers := range []int{1, 2} {
		pool := newTestRDKit(b, RDKitOptions{PoolOptions: PoolOptions{Workers: workers}})
		for _, task := range []string{"adip", "med2", "osmb", "pdop", "rano", "valt", "zale"} {
			b.Run(fmt.Sprintf("task=%s/workers=%d", task, workers), func(b *testing.B) {
				ctx := context.Background()
				if _, err := pool.ScoreTask(ctx, task, smiles[:8]); err != nil { // warm up
					b.Fatal(err)
				}
				before := pool.Stats()
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					if _, err := pool.ScoreTask(ctx, task, smiles); err != nil {
						b.Fatal(err)
					}
				}
				elapsed := time.Since(start)
				b.StopTimer()
				after := pool.Stats()
				mols := float64(b.N * len(smiles))
				b.ReportMetric(mols/elapsed.Seconds(), "mol/s")
				worker := (after.WorkerTime - before.WorkerTime).Seconds()
				client := (after.ClientTime - before.ClientTime).Seconds()
				b.ReportMetric(worker/mols*1e6, "worker-µs/mol")
				b.ReportMetric((client-worker)/mols*1e6, "overhead-µs/mol")
			})
		}
	}
}
