package main

import (
	"context"
	"flag"

	"github.com/nfbo/nfbo/chem/selfies"
	"github.com/nfbo/nfbo/chem/smiles"
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
		Long: `Encode reads SMILES one per line from the files (through gzip for a
name ending in .gz), or from standard input when none are given, and writes
the SELFIES of each, one output line per input line. The SMILES is the
line's first field: what follows it (a name, an id) is copied after the
SELFIES. A line that cannot be encoded gives an empty output line and a
message on standard error naming the file, the line and the reason; the
exit status is then 1.`,
		Flag: flag.NewFlagSet("selfies encode", flag.ContinueOnError),
	}
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		// One encoder for the whole input: the package-level Encode builds a
		// fresh one per call.
		enc := selfies.NewEncoder(selfies.DefaultConstraints())
		return mapLines(ctx, cmd, args, firstField(enc.Encode))
	}
	return c
}

func newSelfiesDecodeCmd() *Command {
	c := &Command{
		UsageLine: "selfies decode [file...]",
		Short:     "SELFIES to SMILES, one per line",
		Long: `Decode reads SELFIES one per line from the files (through gzip for a
name ending in .gz), or from standard input when none are given, and writes
the SMILES of each, one output line per input line. The SELFIES is the
line's first field: what follows it (a name, an id) is copied after the
SMILES. A line that cannot be decoded gives an empty output line and a
message on standard error naming the file, the line and the reason; the
exit status is then 1.`,
		Flag: flag.NewFlagSet("selfies decode", flag.ContinueOnError),
	}
	c.Run = func(ctx context.Context, cmd *Command, args []string) error {
		dec := selfies.NewDecoder(selfies.DefaultConstraints())
		return mapLines(ctx, cmd, args, firstField(dec.Decode))
	}
	return c
}

// firstField converts a line's first field with f (smiles.FirstField) and keeps the rest of the line after
// the result: "CCO ethanol" encodes to "[C][C][O] ethanol". A blank line goes to f whole.
func firstField(f lineFunc) lineFunc {
	return func(line string) (string, error) {
		field, start := smiles.FirstField(line)
		if field == "" {
			return f(line)
		}
		out, err := f(field)
		if err != nil {
			return "", err
		}
		return out + line[start+len(field):], nil
	}
}
