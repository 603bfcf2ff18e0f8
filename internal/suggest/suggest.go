// Package suggest finds the name a user most likely meant when a name given on the command line is unknown:
// a mistyped task, command or flag answered with "did you mean …?".
package suggest

import "strings"

// Closest returns the name of names nearest to s by edit distance (case ignored), when it is near enough to be
// a typo: at most a third of s's length in edits (one edit at least), or s typed short (a prefix of three or
// more letters). It returns "" when no name is near.
func Closest(s string, names []string) string {
	ls := strings.ToLower(s)
	best, bestD := "", 0
	for _, n := range names {
		ln := strings.ToLower(n)
		d := distance(ls, ln)
		if len(ls) >= 3 && strings.HasPrefix(ln, ls) {
			d = min(d, 1)
		}
		if best == "" || d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > max(1, len(s)/3) {
		return ""
	}
	return best
}

// distance is the optimal string alignment distance between a and b, in bytes: insertions, deletions,
// substitutions and swaps of two neighbours ("qde" for "qed") count one each.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			sub := d[i-1][j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, sub)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
