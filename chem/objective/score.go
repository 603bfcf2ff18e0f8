package objective

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSemicolons says that a table a person saved has its fields separated by semicolons, as a spreadsheet's CSV
// does in locales that write decimal commas: the readers of tells and initial files refuse it with this error
// rather than guess where the numbers' commas are.
var ErrSemicolons = errors.New("fields separated by semicolons (a spreadsheet's CSV in some locales): save the " +
	"file with commas between fields and points in numbers, or with tabs")

// ParseScore reads a score that a person, a spreadsheet or a program wrote in a file (a tell, an initial file's
// score column or SDF data item): a finite decimal number, an optional sign, digits with an optional fraction and
// an optional exponent. strconv.ParseFloat also reads hexadecimal floats ("0x1p-2" is 0.25), underscores,
// infinities and NaN, which nobody means as a score: they are refused. The error quotes s and says what is wrong
// ("\"0x1p-2\" is not a decimal number ..."), for the caller to prefix with where it stands. It quotes a copy of
// s, so that s does not escape: a streaming parser's string(bytes) of each row can stay on the stack.
func ParseScore(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0), err == nil && (math.IsNaN(v) || math.IsInf(v, 0)):
		return 0, fmt.Errorf("%q is not a finite number", strings.Clone(s))
	case err != nil:
		return 0, fmt.Errorf("%q is not a number", strings.Clone(s))
	case !isDecimal(s):
		return 0, fmt.Errorf("%q is not a decimal number (hexadecimal and other forms are refused)", strings.Clone(s))
	}
	return v, nil
}

// isDecimal reports whether s is a decimal number as ParseScore reads one: an optional sign, digits with an
// optional fraction, and an optional exponent.
func isDecimal(s string) bool {
	i, n := 0, len(s)
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
		digits++
	}
	if i < n && s[i] == '.' {
		for i++; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == n
}
