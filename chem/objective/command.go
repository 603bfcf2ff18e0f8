package objective

import (
	"errors"
	"fmt"
	"strings"
)

// NewCommand returns a pool of worker processes running the external
// program argv (argv[0] is looked up on PATH), which must speak the
// JSON-lines protocol of docs/objective-protocol.md: read one request per
// line on stdin, write one response per line on stdout, log to stderr. Only
// the "score" operation is required; its scores are used as they are
// (negative values included), and null or a non-empty error for a molecule
// gives 0 with that reason.
//
// The pool's Objective(task) passes task through in every request, so one
// program can serve several objectives.
func NewCommand(argv []string, opts PoolOptions) (*Pool, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("objective: empty objective command")
	}
	opts.command = append([]string(nil), argv...)
	opts.name = fmt.Sprintf("objective program %q", strings.Join(argv, " "))
	opts.handshake = false
	return newPool(opts), nil
}

// SplitCommand splits a command line such as "python3 oracle.py --model m.pt"
// at spaces into argv, the form NewCommand takes. No shell is involved, so
// quotes and variables have no special meaning; wrap anything fancier in a
// script.
func SplitCommand(line string) []string {
	return strings.Fields(line)
}
