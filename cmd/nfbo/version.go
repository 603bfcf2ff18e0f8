package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/nfbo/nfbo/internal/buildinfo"
)

// newVersionCmd returns "nfbo version".
func newVersionCmd() *Command {
	cmd := &Command{
		UsageLine: "version",
		Short:     "print nfbo's version and the commit it was built from",
		Long: `Version prints nfbo's module version, the commit it was built from (and whether
the checkout had changes), and the Go version. Every run records the same line
in its run.json, and reports show it.`,
		Flag: flag.NewFlagSet("version", flag.ContinueOnError),
	}
	cmd.Run = func(_ context.Context, cmd *Command, args []string) error {
		if len(args) != 0 {
			return Usagef(cmd, "version takes no arguments")
		}
		_, err := fmt.Fprintln(cmd.Stdout, "nfbo", buildinfo.Version())
		return err
	}
	return cmd
}
