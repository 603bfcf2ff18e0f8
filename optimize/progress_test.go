package optimize

import (
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/nfbo/nfbo/bo"
)

// TestProgressHealthWarnsOnce: the flow check runs after every iteration and its first complaint is printed
// once, naming the iteration.
func TestProgressHealthWarnsOnce(t *testing.T) {
	calls := 0
	var warnings []string
	p := &progressPrinter{w: io.Discard,
		health: func() string {
			calls++
			if calls < 3 {
				return ""
			}
			return "decodes the token [Cl] as [C]"
		},
		warnf: func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }}
	for i := 1; i <= 5; i++ {
		if err := p.Record(bo.Progress{Iteration: i, FitRank: math.NaN(), FromFlow: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "after iteration 3 the fine-tuned flow decodes the token [Cl] as [C]") {
		t.Errorf("warnings = %q, want one for iteration 3", warnings)
	}
	if calls != 3 {
		t.Errorf("health checked %d times, want 3 (not again once it warned)", calls)
	}
}

func TestFrozenEmbeddings(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		variant string
		set     *bool
		want    bool
	}{
		{"screened", nil, true}, {"reference", nil, false}, {"", nil, true},
		{"screened", &no, false}, {"reference", &yes, true},
	} {
		if got := (Args{Variant: c.variant, FreezeEmbed: c.set}).FrozenEmbeddings(); got != c.want {
			t.Errorf("variant %q, -freeze-embed %v: FrozenEmbeddings = %v, want %v", c.variant, c.set, got, c.want)
		}
	}
}
