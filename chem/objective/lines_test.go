package objective

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// ScoreLines writes one line per input line, tab-separated per task, 0 and a message for a failed line, and
// never sends a SMILES that is not printable ASCII to the objective.
func TestScoreLines(t *testing.T) {
	var sent []string
	score := func(_ context.Context, batch []string) ([][]Result, error) {
		sent = append(sent, batch...)
		res := [][]Result{make([]Result, len(batch)), make([]Result, len(batch))}
		for i, s := range batch {
			res[0][i] = Result{Score: float64(len(s)) / 3}
			res[1][i] = Result{Score: 1}
			if s == "C1CC" {
				res[1][i] = Result{Reason: "invalid SMILES\x1b"}
			}
		}
		return res, nil
	}
	in := "CCO name\nC1CC\nC\u00e9C\nc1ccccc1\n"
	var out, errw bytes.Buffer
	w := bufio.NewWriter(&out)
	failed, err := ScoreLines(context.Background(), score, []string{"a", "b"}, nil, "in.smi", strings.NewReader(in), w, &errw)
	w.Flush()
	if err != nil || failed != 2 {
		t.Fatalf("failed %d, err %v; want 2 failed lines", failed, err)
	}
	want := fmt.Sprintf("1\t1\n%.17g\t0\n0\t0\n%.17g\t1\n", 4.0/3, 8.0/3)
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if strings.Join(sent, " ") != "CCO C1CC c1ccccc1" {
		t.Errorf("sent %q: the line that is not ASCII must not be sent", sent)
	}
	msgs := errw.String()
	if !strings.Contains(msgs, `in.smi:2: b: "invalid SMILES\x1b"`) || !strings.Contains(msgs, "in.smi:3: ") || strings.Count(msgs, "\n") != 2 {
		t.Errorf("messages:\n%s", msgs)
	}
}
