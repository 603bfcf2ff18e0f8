package bench

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/internal/textfile"
)

// PMORandomSetting is the setting of pmo20 under PMO's protocol: 1,000 initial molecules drawn at random from
// ZINC250k for each seed + 9,000 calls. Its runs are never pooled with those of pmoSetting, which all start from
// the first 1,000 molecules of ZINC250k.
const PMORandomSetting = "1000+9000 random"

// graphGAPopulation is the population of mol_opt's graph GA (baseline.MolOptGraphGA), which starts from as many
// random ZINC molecules.
const graphGAPopulation = 120

// zincDrawStream is the second word of the PCG seeding a draw ("zinc" in ASCII), so that a draw's stream differs
// from the runs' streams at the same seed.
const zincDrawStream = 0x7a696e63

// zincDraws writes the initial data of pmo20's runs: n molecules of the SMILES file src (ZINC250k, a molecule a
// line) drawn at random without replacement, a draw per seed, the same on every machine. A Plan asks it once per
// task and seed; the file read and the draws are kept.
type zincDraws struct {
	src string
	n   int

	mu    sync.Mutex
	lines []string       // src's lines
	done  map[int]string // seed -> the file written
}

// write writes DIR/zinc250k_seedSEED.csv, a CSV with the columns smiles and name (zinc250k:LINE, the molecule's
// 1-based line in src, so that every start can be traced), in the order drawn, and returns its path. A file
// already holding the draw is left as it is, so that runs reading it are not disturbed.
func (z *zincDraws) write(dir string, seed int) (string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if p, ok := z.done[seed]; ok {
		return p, nil
	}
	if z.lines == nil {
		lines, err := readLines(z.src)
		if err != nil {
			return "", err
		}
		z.lines = lines
	}
	if len(z.lines) < z.n {
		return "", fmt.Errorf("%s: %d molecules, fewer than the %d to draw", z.src, len(z.lines), z.n)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"smiles", "name"})
	for _, i := range drawIndices(uint64(seed), len(z.lines), z.n) {
		w.Write([]string{z.lines[i], "zinc250k:" + strconv.Itoa(i+1)})
	}
	w.Flush()
	path := filepath.Join(dir, fmt.Sprintf("zinc250k_seed%d.csv", seed))
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, b.Bytes()) {
		if err := atomicfile.Write(path, b.Bytes()); err != nil {
			return "", fmt.Errorf("initial draw: %w", err)
		}
	}
	if z.done == nil {
		z.done = map[int]string{}
	}
	z.done[seed] = path
	return path, nil
}

// drawIndices returns k distinct indices of [0, n) drawn uniformly at random, in the order drawn, from a PCG
// seeded with seed: a partial Fisher-Yates shuffle whose swaps are kept in a map. It draws with its own
// reduction of the generator's 64-bit words (rejection of the biased tail), so that the draw depends on nothing
// but the PCG, whose output is fixed by its definition.
func drawIndices(seed uint64, n, k int) []int {
	src := rand.NewPCG(seed, zincDrawStream)
	uniform := func(m uint64) uint64 { // uniform in [0, m)
		limit := -m % m // 2^64 mod m: the words below it would favour small results
		for {
			if x := src.Uint64(); x >= limit {
				return x % m
			}
		}
	}
	swapped := map[int]int{}
	at := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, k)
	for i := range k {
		j := i + int(uniform(uint64(n-i)))
		out[i] = at(j)
		swapped[j] = at(i)
	}
	return out
}

// readLines returns the lines of the SMILES file path (through gzip when its name ends in ".gz"), each without
// surrounding space; a line of several fields keeps its first, the SMILES. An empty line is an error.
func readLines(path string) ([]string, error) {
	r, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			return nil, fmt.Errorf("%s:%d: an empty line: the draw would not name ZINC's lines", path, line)
		}
		out = append(out, f[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
