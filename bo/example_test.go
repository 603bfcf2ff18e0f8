package bo_test

import (
	"fmt"

	"github.com/nfbo/nfbo/bo"
)

// Three joint posterior samples over four candidates pick three distinct candidates: the second sample's best
// (candidate 0) is already taken, so it takes its next best.
func ExampleThompsonSelect() {
	samples := []float64{
		5, 1, 2, 0,
		9, 0, 8, 1,
		9, 0, 8, 7,
	}
	picks := make([]int, 3)
	bo.ThompsonSelect(picks, samples, 4)
	fmt.Println(picks)
	// Output: [0 2 3]
}

func ExampleUpdateTrustRegion() {
	s := bo.NewTrustRegion(0.5)
	s = bo.UpdateTrustRegion(s, bo.TRNovelty, bo.NoveltyBand{}, bo.Outcome{Proposed: 1000, New: 30}) // 97% stale: widen
	fmt.Printf("%.2f\n", s.Length)
	s = bo.UpdateTrustRegion(s, bo.TRNovelty, bo.NoveltyBand{}, bo.Outcome{Proposed: 1000, New: 300}) // 70% stale: narrow
	fmt.Printf("%.2f\n", s.Length)
	// Output:
	// 0.96
	// 0.80
}
