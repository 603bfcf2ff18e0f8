package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/rundir"
)

// MoveInitial names, in Moves, the molecules no move of the optimiser made: the initial molecules, paid or not,
// and paid molecules of a log that keeps no origins.
const MoveInitial = "initial"

// moves are the optimiser's moves (rundir.Origin.By) in the order the report shows them, then MoveInitial.
var moves = []string{rundir.ByFlow, rundir.ByCrossover, rundir.ByMutation, MoveInitial}

// topOf is the rank whose molecules Moves follows: the Top-10 of the tables.
const topOf = 10

// Moves says which of the optimiser's moves made a run's best molecules, from the origins its evaluation log
// keeps (rundir.Record.From): what each move was paid for, how often what it made scored above the tenth best
// molecule known before it, and who made the ten best at the end, directly or as an ancestor.
type Moves struct {
	// Paid counts the paid molecules by move.
	Paid map[string]int
	// Rose counts, by move, the paid molecules that scored above the tenth best of the molecules known before
	// them (the initial ones and the log's earlier records); none before ten are known.
	Rose map[string]int
	// Top counts the ten best molecules at the end (the initial ones included) by the move that made them.
	Top map[string]int
	// Beneath counts, by move, the ten best at the end that the move made or that descend from a molecule it
	// made through the parents the log names: the moves' indirect part in the best molecules.
	Beneath map[string]int
	// Ancestry sums over the ten best at the end the share of each one's ancestry in the log (itself included)
	// that each move made: set against the move's share of the paid molecules, whether the best molecules
	// descend from its molecules more often than its number of them says.
	Ancestry map[string]float64
}

// MovesOf returns r's Moves, and false when its log keeps no origin (a run of another method, or of an nfbo
// from before the log kept them).
func MovesOf(r Run) (Moves, bool) {
	recs := r.Records
	if !slices.ContainsFunc(recs, func(rec rundir.Record) bool { return rec.From != nil }) {
		return Moves{}, false
	}
	m := newMoves()
	move := func(i int) string {
		if f := recs[i].From; f != nil {
			return f.By
		}
		return MoveInitial
	}
	// known holds the best topOf scores known so far, best first.
	known := make([]float64, 0, topOf+1)
	note := func(s float64) {
		i, _ := slices.BinarySearchFunc(known, s, cmpDesc)
		known = slices.Insert(known, i, s)
		known = known[:min(len(known), topOf)]
	}
	for _, s := range r.initialGains() {
		note(s)
	}
	for i, s := range r.Scores {
		mv := move(i)
		m.Paid[mv]++
		if len(known) == topOf && s > known[topOf-1] {
			m.Rose[mv]++
		}
		note(s)
	}

	// The ten best at the end: the initial scores first, then the log's, each in order, so that of equal
	// scores the earliest counts (as the Top-10 of the tables does not care which).
	type entry struct {
		score float64
		rec   int // index in recs, −1 for an initial molecule not in the log
	}
	var all []entry
	for _, s := range r.initialGains() {
		all = append(all, entry{s, -1})
	}
	for i, s := range r.Scores {
		all = append(all, entry{s, i})
	}
	slices.SortStableFunc(all, func(a, b entry) int { return cmpDesc(a.score, b.score) })
	byKey := make(map[string]int, len(recs))
	for i, rec := range recs {
		if _, ok := byKey[rec.SMILES]; !ok {
			byKey[rec.SMILES] = i
		}
	}
	for _, e := range all[:min(topOf, len(all))] {
		if e.rec < 0 {
			m.Top[MoveInitial]++
			m.Beneath[MoveInitial]++
			m.Ancestry[MoveInitial]++
			continue
		}
		m.Top[move(e.rec)]++
		// Its ancestry in the log, itself included: parents precede their children, so the walk ends.
		in := map[int]bool{e.rec: true}
		byMove := map[string]int{}
		for queue := []int{e.rec}; len(queue) > 0; queue = queue[1:] {
			i := queue[0]
			byMove[move(i)]++
			if f := recs[i].From; f != nil {
				for _, p := range f.Parents {
					if j, ok := byKey[p]; ok && j < i && !in[j] {
						in[j] = true
						queue = append(queue, j)
					}
				}
			}
		}
		for mv, n := range byMove {
			m.Beneath[mv]++
			m.Ancestry[mv] += float64(n) / float64(len(in))
		}
	}
	return m, true
}

func newMoves() Moves {
	return Moves{Paid: map[string]int{}, Rose: map[string]int{}, Top: map[string]int{}, Beneath: map[string]int{},
		Ancestry: map[string]float64{}}
}

// cmpDesc orders scores best first (the gains are finite: rundir.Info.Gain).
func cmpDesc(a, b float64) int { return cmp.Compare(b, a) }

// writeMoves writes, for the (task, method) groups of a setting whose runs keep origins, their Moves summed
// over seeds: the molecules paid by move, how many of them rose above the tenth best (and the share), the ten
// best at the end by the move that made them, and the flow's part in their ancestry.
func writeMoves(b *strings.Builder, tasks, methods []string, groups map[[2]string][]Run) {
	var rows []string
	for _, task := range tasks {
		for _, method := range methods {
			sum := newMoves()
			seeds := 0
			for _, r := range groups[[2]string{task, method}] {
				m, ok := MovesOf(r)
				if !ok {
					continue
				}
				seeds++
				for _, mv := range moves {
					sum.Paid[mv] += m.Paid[mv]
					sum.Rose[mv] += m.Rose[mv]
					sum.Top[mv] += m.Top[mv]
					sum.Beneath[mv] += m.Beneath[mv]
					sum.Ancestry[mv] += m.Ancestry[mv]
				}
			}
			if seeds == 0 {
				continue
			}
			row := fmt.Sprintf("| %s | %s | %d |", task, method, seeds)
			for _, mv := range moves[:3] {
				row += fmt.Sprintf(" %d |", sum.Paid[mv])
			}
			for _, mv := range moves[:3] {
				row += " " + share(sum.Rose[mv], sum.Paid[mv]) + " |"
			}
			for _, mv := range moves {
				row += fmt.Sprintf(" %d |", sum.Top[mv])
			}
			best, paid := 0, 0
			for _, mv := range moves {
				best += sum.Top[mv]
				paid += sum.Paid[mv]
			}
			row += fmt.Sprintf(" %d | %s | %s |", sum.Beneath[rundir.ByFlow], percent(sum.Ancestry[rundir.ByFlow], float64(best)),
				percent(float64(sum.Paid[rundir.ByFlow]), float64(paid)))
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("Who made the best molecules (runs whose evaluation log keeps each molecule's origin; summed over " +
		"their seeds): the molecules paid by move; of those, how many scored above the tenth best known before them " +
		"(and the share); the ten best at the end by the move that made them; how many of them the flow made or " +
		"descend from a molecule it made (its indirect part: the GA's children of its molecules); and the flow's " +
		"share of their ancestry in the log (themselves included, the mean over the ten best), beside its share of " +
		"the paid molecules: a larger share of the ancestry says the best molecules descend from the flow's more " +
		"often than its number of them does.\n\n")
	b.WriteString("| task | method | seeds | paid: flow | crossover | mutation | above the tenth best: flow | crossover | mutation " +
		"| ten best made by: flow | crossover | mutation | initial | ten best from the flow's line | the flow's share: of their ancestry | of the paid |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
	b.WriteString("\n")
}

// percent is x as a percentage of total, "—" when total is 0.
func percent(x, total float64) string {
	if total == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*x/total)
}

// share is n and its percentage of total (n alone when total is 0).
func share(n, total int) string {
	if total == 0 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%d (%.1f %%)", n, 100*float64(n)/float64(total))
}
