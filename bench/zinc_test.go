package bench

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDrawIndices: k distinct indices of [0, n), each index as likely as any other over many seeds, the same for
// the same seed and different for another.
func TestDrawIndices(t *testing.T) {
	const n, k = 50, 10
	counts := make([]int, n)
	for seed := range uint64(2000) {
		d := drawIndices(seed, n, k)
		if len(d) != k {
			t.Fatalf("seed %d: %d indices, want %d", seed, len(d), k)
		}
		seen := map[int]bool{}
		for _, i := range d {
			if i < 0 || i >= n || seen[i] {
				t.Fatalf("seed %d: %v: out of range or repeated", seed, d)
			}
			seen[i] = true
			counts[i]++
		}
		if !slices.Equal(d, drawIndices(seed, n, k)) {
			t.Fatalf("seed %d: two draws differ", seed)
		}
	}
	// Each index is drawn 2000·10/50 = 400 times on average, with a standard deviation of about 18.
	for i, c := range counts {
		if c < 320 || c > 480 {
			t.Errorf("index %d drawn %d times in 2000 draws of %d of %d, want about 400", i, c, k, n)
		}
	}
	if slices.Equal(drawIndices(1, n, k), drawIndices(2, n, k)) {
		t.Error("seeds 1 and 2 draw the same indices")
	}
	if d := drawIndices(3, 5, 5); !slices.Equal(slices.Sorted(slices.Values(d)), []int{0, 1, 2, 3, 4}) {
		t.Errorf("a draw of all 5 of 5 is %v, not a permutation", d)
	}
}

// TestDrawPinned pins the draw of seed 1 from ZINC250k's 249,455 molecules: a change to drawIndices would change
// the starts of pmo20's runs, and with them every row already kept under PMORandomSetting, so it must show here.
func TestDrawPinned(t *testing.T) {
	got := drawIndices(1, 249455, 5)
	want := pinnedSeed1
	if !slices.Equal(got, want) {
		t.Errorf("seed 1 draws %v first, the rows were made from %v", got, want)
	}
}

// TestZincDrawsFile: the file holds the drawn lines of the source with their line numbers as names, in the order
// drawn, and is written once per seed; a file already holding the draw is not rewritten.
func TestZincDrawsFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.txt.gz")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(zw, "C%s\n", strings.Repeat("C", i))
	}
	zw.Close()
	f.Close()
	z := zincDraws{zincSource: zincSource{src: src}, n: 7}
	path, err := z.write(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(mustRead(t, path))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 || !slices.Equal(recs[0], []string{"smiles", "name"}) {
		t.Fatalf("%d records, header %v; want 8 and smiles,name", len(recs), recs[0])
	}
	for j, i := range drawIndices(4, 30, 7) {
		want := []string{"C" + strings.Repeat("C", i+1), fmt.Sprintf("zinc250k:%d", i+1)}
		if !slices.Equal(recs[1+j], want) {
			t.Errorf("row %d: %v, want %v", j+1, recs[1+j], want)
		}
	}
	st, _ := os.Stat(path)
	z2 := zincDraws{zincSource: zincSource{src: src}, n: 7}
	if _, err := z2.write(dir, 4); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(path); !os.SameFile(st, st2) {
		t.Error("a file already holding the draw was rewritten")
	}
	if _, err := (&zincDraws{zincSource: zincSource{src: src}, n: 31}).write(dir, 1); err == nil {
		t.Error("a draw of 31 from 30 molecules: no error")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pinnedSeed1 is the first five indices drawn for seed 1 (see TestDrawPinned).
var pinnedSeed1 = []int{199474, 10366, 174344, 247066, 54061}

// TestZincBest: the task's scores of every source line are made once by the binary's score command (here a
// script scoring a SMILES by its length modulo 7 for the first task and modulo 5 for the second, exiting 1 as
// score does when a line failed), with those of the plan's other tasks in the same pass, and kept; the n best
// lines are written best first, ties in the source's order, with their scores under the task's name; a dry plan
// gets the path alone, and a score file that does not match the source is an error.
func TestZincBest(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.txt")
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, "C"+strings.Repeat("C", i))
	}
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "calls")
	self := filepath.Join(dir, "nfbo")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
		"eval f=\\${$#}\nwhile read s; do printf '%d\\t%d\\n' $(( ${#s} % 7 )) $(( ${#s} % 5 )); done < \"$f\"\nexit 1\n"
	if err := os.WriteFile(self, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	initDir := filepath.Join(dir, "init")
	os.MkdirAll(initDir, 0o755)
	z := zincBest{zincSource: zincSource{src: src}, n: 5, part: 7} // three calls of score: lines 1-7, 8-14, 15-20
	env := InitEnv{Dir: initDir, Task: "qed", Seed: 1, Tasks: []string{"median1", "qed"}, Self: self}
	if p, err := z.write(InitEnv{Dir: initDir, Task: "qed", Dry: true}); err != nil || p != filepath.Join(initDir, "zinc250k_best_qed.csv") {
		t.Fatalf("dry: %q, %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(initDir, "zinc250k_scores")); err == nil {
		t.Fatal("a dry plan scored the source")
	}
	path, err := z.write(env)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(mustRead(t, path))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Lengths 2..21; length%7 == 6 for lengths 6, 13, 20 (lines 5, 12, 19), then 5 for 5, 12, 19 (lines 4, 11).
	want := [][]string{{"smiles", "name", "qed"},
		{lines[4], "zinc250k:5", "6"}, {lines[11], "zinc250k:12", "6"}, {lines[18], "zinc250k:19", "6"},
		{lines[3], "zinc250k:4", "5"}, {lines[10], "zinc250k:11", "5"}}
	if !slices.EqualFunc(recs, want, slices.Equal) {
		t.Errorf("initial data %v, want %v", recs, want)
	}
	os.Remove(path)
	if _, err := (&zincBest{zincSource: zincSource{src: src}, n: 5, part: 7}).write(env); err != nil {
		t.Fatal(err)
	}
	// median1's scores came in qed's pass: length%5 == 4 for lengths 4, 9, 14, 19 (lines 3, 8, 13, 18).
	m1, err := z.write(InitEnv{Dir: initDir, Task: "median1", Tasks: env.Tasks, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, m1); !strings.HasPrefix(got, "smiles,name,median1\n"+lines[2]+",zinc250k:3,4\n"+lines[7]+",zinc250k:8,4\n") {
		t.Errorf("median1's initial data:\n%s", got)
	}
	got := strings.Split(strings.TrimSpace(mustRead(t, calls)), "\n")
	if len(got) != 3 {
		t.Errorf("score ran %d times, want 3 (the source once, in parts of 7; the scores are kept)", len(got))
	}
	if !strings.HasPrefix(got[0], "score -workers ") || !strings.Contains(got[0], "-task qed,median1 ") || !strings.HasSuffix(got[0], "-000.tsv.smi") {
		t.Errorf("score command %q", got[0])
	}
	if left, _ := filepath.Glob(filepath.Join(initDir, "zinc250k_scores", "part-*")); len(left) != 0 {
		t.Errorf("parts left behind: %v", left)
	}
	os.WriteFile(filepath.Join(initDir, "zinc250k_scores", "median2.txt"), []byte("1\n2\n"), 0o644)
	if _, err := z.write(InitEnv{Dir: initDir, Task: "median2", Self: self}); err == nil || !strings.Contains(err.Error(), "2 scores for the 20 molecules") {
		t.Errorf("a short score file: %v", err)
	}
}

// TestZincBestShipped: a task the shipped file holds is taken from it, in its order, without scoring; a task it
// lacks is scored; too few rows for a task is an error.
func TestZincBestShipped(t *testing.T) {
	dir := t.TempDir()
	shipped := filepath.Join(dir, "best.csv.gz")
	f, err := os.Create(shipped)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	fmt.Fprint(zw, "task,smiles,name,score\nqed,CCO,zinc250k:9,0.5\nmedian1,CC,zinc250k:1,0.3\nqed,CCN,zinc250k:4,0.25\nqed,CCC,zinc250k:2,0.125\n")
	zw.Close()
	f.Close()
	z := zincBest{zincSource: zincSource{src: filepath.Join(dir, "absent.txt")}, n: 2, shipped: shipped}
	path, err := z.write(InitEnv{Dir: dir, Task: "qed"}) // no binary: scoring would fail
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustRead(t, path), "smiles,name,qed\nCCO,zinc250k:9,0.5\nCCN,zinc250k:4,0.25\n"; got != want {
		t.Errorf("initial data %q, want %q", got, want)
	}
	if _, err := z.write(InitEnv{Dir: dir, Task: "median1"}); err == nil || !strings.Contains(err.Error(), "1 rows for median1, want 2") {
		t.Errorf("too few shipped rows: %v", err)
	}
	if _, err := z.write(InitEnv{Dir: dir, Task: "median2"}); err == nil || !strings.Contains(err.Error(), "absent.txt") {
		t.Errorf("a task not shipped, with no source: %v", err)
	}
}
