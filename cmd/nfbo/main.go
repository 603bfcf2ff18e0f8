// Command nfbo is latent Bayesian optimisation of molecules with an
// autoregressive normalizing flow (NF-BO).
//
// Run "nfbo help" for the list of commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// root returns the command tree. Each subcommand is built by its own
// constructor in its own file.
func root() *Command {
	return &Command{
		Long: "nfbo: latent Bayesian optimisation of molecules with an autoregressive normalizing flow.",
		Commands: []*Command{
			// Registered subcommands, one line each.
			newPretrainCmd(),
			newCurveCmd(),
			newSelfiesCmd(),
			newReconCmd(),
			newExportCmd(),
			newTasksCmd(),
			newScoreCmd(),
			newReportCmd(),
			newBenchCmd(),
			newOptimizeCmd(),
			newFitcheckCmd(),
		},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := root()
	cmd.setStreams(os.Stdin, os.Stdout, os.Stderr)
	err := cmd.Execute(ctx, os.Args[1:])
	if err != nil {
		if _, isExit := err.(*ExitError); !isExit {
			fmt.Fprintln(os.Stderr, "nfbo:", err)
		}
	}
	os.Exit(exitCode(err))
}
