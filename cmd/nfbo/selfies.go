package main

import (
	"context"
	"flag"

	"github.com/nfbo/nfbo/chem/selfies"
)

func newSelfiesCmd() *Command {
	return &Command{
		UsageLine: "selfies <command> [arguments]",
		Short:     "convert between SMILES and SELFIES (selfies 2.0.0)",
		Long: `Selfies converts molecules between SMILES and SELFIES exactly as the
Python selfies package version 2.0.0 does, the version NF-BO pins.`,
		Commands: []*Command{newSelfiesEncodeCmd(), newSelfiesDecodeCmd()},
	}
}

func newSelfiesEncodeCmd() *Command {
	c := &Command{
		UsageLine: "selfies encode [file...]",
		Short:     "SMILES to SELFIES, one per line",
		Long: `Encode reads SMILES one per line from the files, or from standard input
when none are given, and writes the SELFIES of each, one output line per
input line. A line that cannot be encoded gives an empty output line and a
message on standard error naming the file, the line and the reason; the
exit status is then 1.`,
		Flag: flag.NewFlagSet("selfies encode", flag.ContinueOnError),
	}
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		// One encoder for the whole input: the package-level Encode builds a
		// fresh one per call.
		enc := selfies.NewEncoder(selfies.DefaultConstraints())
		return mapLines(ctx, cmd, args, enc.Encode)
	}
	return c
}

func newSelfiesDecodeCmd() *Command {
	c := &Command{
		UsageLine: "selfies decode [file...]",
		Short:     "SELFIES to SMILES, one per line",
		Long: `Decode reads SELFIES one per line from the files, or from standard input
when none are given, and writes the SMILES of each, one output line per
input line. A line that cannot be decoded gives an empty output line and a
message on standard error naming the file, the line and the reason; the
exit status is then 1.`,
		Flag: flag.NewFlagSet("selfies decode", flag.ContinueOnError),
	}
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		dec := selfies.NewDecoder(selfies.DefaultConstraints())
		return mapLines(ctx, cmd, args, dec.Decode)
	}
	return c
}
