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

// ScoreLocated writes one line per molecule, names where a failed one was read, and sends the objective neither
// a molecule marked bad nor one that is not printable ASCII.
func TestScoreLocated(t *testing.T) {
	var sent []string
	score := func(_ context.Context, batch []string) ([][]Result, error) {
		sent = append(sent, batch...)
		res := make([]Result, len(batch))
		for i, s := range batch {
			res[i] = Result{Score: float64(len(s))}
		}
		return [][]Result{res}, nil
	}
	mols := []Located{
		{Where: "m.csv:2 (ethanol)", SMILES: "CCO"},
		{Where: "m.sdf:40 (broken)", Bad: fmt.Errorf("Explicit valence for atom # 1 N, 4, is greater than permitted")},
		{Where: "m.csv:4", SMILES: "C\u00e9C"},
		{Where: "m.csv:5 (benzene)", SMILES: "c1ccccc1"},
	}
	var out, errw bytes.Buffer
	w := bufio.NewWriter(&out)
	failed, err := ScoreLocated(context.Background(), score, []string{"len"}, nil, mols, w, &errw)
	w.Flush()
	if err != nil || failed != 2 {
		t.Fatalf("failed %d, err %v; want 2 failed molecules", failed, err)
	}
	if out.String() != "3\n0\n0\n8\n" {
		t.Errorf("output %q", out.String())
	}
	if strings.Join(sent, " ") != "CCO c1ccccc1" {
		t.Errorf("sent %q", sent)
	}
	msgs := errw.String()
	for _, want := range []string{"m.sdf:40 (broken): Explicit valence", "m.csv:4: "} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages lack %q:\n%s", want, msgs)
		}
	}
	if strings.Count(msgs, "\n") != 2 {
		t.Errorf("messages:\n%s", msgs)
	}
}
