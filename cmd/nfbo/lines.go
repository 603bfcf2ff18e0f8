package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/nfbo/nfbo/internal/textfile"
)

// lineFunc converts one input line; an error is reported with the line's
// position and yields an empty output line.
type lineFunc func(line string) (string, error)

// mapLines applies f to every line of the named files (stdin when none),
// writing exactly one output line per input line. It returns an *ExitError
// with code 1 when any line failed, after reporting each failure on stderr
// as "FILE:LINE: reason".
func mapLines(ctx context.Context, cmd *Command, files []string, f lineFunc) error {
	out := bufio.NewWriter(cmd.Stdout)
	defer out.Flush()
	failed := 0
	each := func(name string, r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
		line := 0
		for sc.Scan() {
			if err := ctx.Err(); err != nil {
				return err
			}
			line++
			res, err := f(sc.Text())
			if err != nil {
				failed++
				out.Flush() // keep stdout and stderr in step for a reader of both
				fmt.Fprintf(cmd.Stderr, "%s:%d: %v\n", name, line, err)
				res = ""
			}
			out.WriteString(res)
			out.WriteByte('\n')
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		return nil
	}
	if len(files) == 0 {
		if err := each("stdin", cmd.Stdin); err != nil {
			return err
		}
	}
	for _, name := range files {
		fh, err := textfile.Open(name)
		if err != nil {
			return err
		}
		err = each(name, fh)
		fh.Close()
		if err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if failed > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}
