package objective_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nfbo/nfbo/chem/objective"
	"github.com/nfbo/nfbo/chem/objective/metrics"
)

// The optimiser's view: an RDKit pool is both the objective and the
// canonicaliser; the budget logs every paid call and resumes from the log.
func ExampleOpenBudget() {
	ctx := context.Background()
	pool, err := objective.NewRDKit(objective.RDKitOptions{PoolOptions: objective.PoolOptions{Workers: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	b, err := objective.OpenBudget("run/evals.jsonl", pool.Objective("adip"), pool,
		objective.BudgetOptions{Limit: 10000, Task: "adip"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	evs, err := b.Evaluate(ctx, []string{"CCO", "OCC", "C1CC"})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range evs {
		fmt.Println(e.Status, e.Call, e.Score, e.Reason)
	}
	fmt.Println("paid calls:", b.Calls())
	fmt.Println("AUC top-10:", metrics.AUCTopK(b.Scores(), 10, metrics.DefaultFreq, 10000, false))
}

// Any program that speaks the protocol of docs/objective-protocol.md can be
// the objective.
func ExampleNewCommand() {
	pool, err := objective.NewCommand([]string{"python3", "oracle.py"}, objective.PoolOptions{Workers: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	res, err := pool.Objective("dock").Score(context.Background(), []string{"CCO"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Score, res[0].Reason)
}
