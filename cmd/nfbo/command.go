package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/nfbo/nfbo/internal/suggest"
)

// A Command is one nfbo subcommand, in the manner of cmd/go's base.Command:
// the value carries its usage, help text, flags and run function, and main
// only registers and dispatches.
type Command struct {
	// UsageLine is the one-line usage, starting with the command path
	// without "nfbo", e.g. "selfies encode [file...]".
	UsageLine string
	// Short is the one-line description shown in command lists.
	Short string
	// Long is the help text shown by "nfbo help CMD".
	Long string
	// Flag holds the command's flags; Run sees the arguments left after parsing.
	Flag *flag.FlagSet
	// Groups, when set, sort the flags for a reader: -h shows the first
	// group alone (the everyday flags) and points to "nfbo help CMD", which
	// shows every group under its title. Every flag belongs to one group
	// (TestFlagGroupsCoverEveryFlag).
	Groups []FlagGroup
	// Run executes the command. A *UsageError makes main exit 2; any other
	// error exits 1. Nil Run means the command only groups Commands.
	Run func(ctx context.Context, cmd *Command, args []string) error
	// Commands are the subcommands, for a group such as "selfies".
	Commands []*Command
	// Stdin, Stdout and Stderr are the command's streams; main sets them to
	// the process's, tests to buffers.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// FlagGroup is a titled set of a command's flags, named without the dash.
type FlagGroup struct {
	Title string
	Names []string
}

// printFlags writes the defaults of the flags of fs named in names, in that
// order, as flag.PrintDefaults writes them.
func printFlags(w io.Writer, fs *flag.FlagSet, names []string) {
	sub := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			sub.Var(f.Value, f.Name, f.Usage)
		}
	}
	sub.SetOutput(w)
	sub.PrintDefaults()
}

// printUsage writes the flags for -h: the everyday group and a pointer to
// the rest, or every flag when the command has no groups.
func (c *Command) printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: nfbo %s\n", c.UsageLine)
	if len(c.Groups) == 0 {
		fs.SetOutput(w)
		fs.PrintDefaults()
		return
	}
	g := c.Groups[0]
	fmt.Fprintf(w, "\n%s:\n", g.Title)
	printFlags(w, fs, g.Names)
	n := 0
	for _, g := range c.Groups[1:] {
		n += len(g.Names)
	}
	fmt.Fprintf(w, "\n%d more settings, in groups, and what the command does: \"nfbo help %s\"\n", n, c.Path())
}

// Name returns the command's last word, e.g. "encode" for "selfies encode".
func (c *Command) Name() string {
	words := strings.Fields(c.Path())
	if len(words) == 0 {
		return ""
	}
	return words[len(words)-1]
}

// Path returns the command's words before its arguments, e.g. "selfies
// encode" for "selfies encode [file...]": the words up to the first one that
// starts with '[', '<' or '-', or is written in capitals (FILE).
func (c *Command) Path() string {
	var words []string
	for _, f := range strings.Fields(c.UsageLine) {
		if strings.ContainsAny(f[:1], "[<-") || strings.ToUpper(f) == f {
			break
		}
		words = append(words, f)
	}
	return strings.Join(words, " ")
}

// errPrefix is "PATH: " for a subcommand group and empty for the root,
// whose messages main already prefixes with "nfbo: ".
func (c *Command) errPrefix() string {
	if p := c.Path(); p != "" {
		return p + ": "
	}
	return ""
}

// UsageError reports a misuse of a command's arguments or flags; main exits 2.
type UsageError struct {
	Cmd *Command
	Err error
}

// Error returns the message followed by the command's usage line.
func (e *UsageError) Error() string {
	if e.Cmd == nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v\nusage: nfbo %s", e.Err, e.Cmd.UsageLine)
}

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError for cmd with a formatted message.
func Usagef(cmd *Command, format string, args ...any) error {
	return &UsageError{Cmd: cmd, Err: fmt.Errorf(format, args...)}
}

// ExitError carries an exit status for a command that has already reported
// its failures (e.g. "some lines failed" → 1) and needs no further message.
type ExitError struct{ Code int }

// Error returns "exit status N".
func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// exitCode maps a command's error to the process exit status: 0 for nil,
// 2 for usage errors, the carried code for *ExitError, 1 otherwise.
func exitCode(err error) int {
	var ue *UsageError
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}

// exitStatus is exitCode for a command run under ctx: when the command
// stopped because a signal cancelled ctx (its error is context.Canceled),
// it is 128 + the signal's number, as a shell reports a process killed by
// it: 130 for Ctrl-C, 143 for SIGTERM. Scripts and batch schedulers tell an
// interrupted run from a failed one by it.
func exitStatus(ctx context.Context, err error) int {
	var sig *signalError
	if err != nil && errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &sig) {
		if s, ok := sig.sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 130
	}
	return exitCode(err)
}

// setStreams gives cmd and its subcommands the given streams where unset.
func (c *Command) setStreams(stdin io.Reader, stdout, stderr io.Writer) {
	if c.Stdin == nil {
		c.Stdin = stdin
	}
	if c.Stdout == nil {
		c.Stdout = stdout
	}
	if c.Stderr == nil {
		c.Stderr = stderr
	}
	for _, sub := range c.Commands {
		sub.setStreams(c.Stdin, c.Stdout, c.Stderr)
	}
}

// Execute finds the subcommand named by args, parses its flags and runs it.
func (c *Command) Execute(ctx context.Context, args []string) error {
	if len(c.Commands) > 0 || c.Run == nil {
		if len(args) == 0 {
			c.printCommands(c.Stderr)
			return &UsageError{Err: fmt.Errorf("%smissing command", c.errPrefix())}
		}
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			return c.help(args[1:])
		}
		name := args[0]
		if c.Path() == "" && (name == "-version" || name == "--version") {
			name = "version" // what a newcomer tries first
		}
		var names []string
		for _, sub := range c.Commands {
			if sub.Name() == name {
				return sub.Execute(ctx, args[1:])
			}
			names = append(names, sub.Name())
		}
		msg := fmt.Sprintf("%sunknown command %q", c.errPrefix(), args[0])
		if near := suggest.Closest(strings.TrimLeft(args[0], "-"), names); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return &UsageError{Err: fmt.Errorf("%s\nrun \"nfbo %shelp\" for the list of commands", msg, c.pathSpace())}
	}
	fs := c.Flag
	if fs == nil {
		fs = flag.NewFlagSet(c.Path(), flag.ContinueOnError)
	}
	// The flag package prints its error and the whole flag list on a bad flag (over a hundred lines for
	// optimize); the error comes back here instead, with one pointer to the help, and -h prints the list.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(c.Stderr, fs)
			return err
		}
		return &UsageError{Cmd: c, Err: c.flagError(fs, err)}
	}
	return c.Run(ctx, c, fs.Args())
}

// flagError is the flag package's parse error, with the nearest flag's name when the flag is unknown and a
// pointer to the command's help.
func (c *Command) flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	const unknown = "flag provided but not defined: -"
	if name, ok := strings.CutPrefix(msg, unknown); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := suggest.Closest(strings.TrimLeft(name, "-"), names); near != "" {
			msg += fmt.Sprintf("; did you mean -%s?", near)
		}
	}
	return fmt.Errorf("%s%s (\"nfbo help %s\" lists the flags)", c.errPrefix(), msg, c.Path())
}

// pathSpace is the command's path followed by a space, or "" for the root.
func (c *Command) pathSpace() string {
	if p := c.Path(); p != "" {
		return p + " "
	}
	return ""
}

func (c *Command) help(args []string) error {
	cur := c
	for _, a := range args {
		var next *Command
		for _, sub := range cur.Commands {
			if sub.Name() == a {
				next = sub
			}
		}
		if next == nil {
			return &UsageError{Err: fmt.Errorf("nfbo help: unknown topic %q", strings.Join(args, " "))}
		}
		cur = next
	}
	if len(cur.Commands) > 0 {
		if cur.Long != "" {
			fmt.Fprintln(c.Stdout, strings.TrimSpace(cur.Long))
			fmt.Fprintln(c.Stdout)
		}
		cur.printCommands(c.Stdout)
		return nil
	}
	fmt.Fprintf(c.Stdout, "usage: nfbo %s\n\n%s\n", cur.UsageLine, strings.TrimSpace(cur.Long))
	switch {
	case cur.Flag == nil:
	case len(cur.Groups) > 0:
		for _, g := range cur.Groups {
			fmt.Fprintf(c.Stdout, "\n%s:\n", g.Title)
			printFlags(c.Stdout, cur.Flag, g.Names)
		}
	default:
		fmt.Fprintln(c.Stdout, "\nFlags:")
		cur.Flag.SetOutput(c.Stdout)
		cur.Flag.PrintDefaults()
	}
	return nil
}

func (c *Command) printCommands(w io.Writer) {
	path := c.Path()
	if path != "" {
		path += " "
	}
	fmt.Fprintf(w, "usage: nfbo %s<command> [arguments]\n\nCommands:\n", path)
	for _, sub := range c.Commands {
		fmt.Fprintf(w, "  %-16s %s\n", sub.Name(), sub.Short)
	}
	fmt.Fprintf(w, "\nRun \"nfbo %shelp <command>\" for more.\n", path)
}
