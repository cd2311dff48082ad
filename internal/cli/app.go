// Package cli is crab's command line. Main runs it and maps its errors to
// the exit codes the README documents; newApp lists the commands. Each
// command has a file of its own (run.go, report.go, check.go, serve.go,
// simserver.go, tune.go, audit.go, tasks.go, recording.go, export.go,
// plan.go, completion.go) holding its flags (xxxCmd) and the plain
// function they call with an options struct, which tests call directly;
// files named after a command (run_files.go, check_proof.go) hold more
// of that command's wiring. What is not wiring lives in the package that
// owns it (eval, eval/records, serve, contract, tune, ...).
//
// The tests run from the module root (see TestMain), drive the command
// line in-process through crab() and share one helper set
// (helpers_test.go); their files are named after the command they test.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval/records"
)

// Exit codes, as documented in the README.
const (
	exitOK       = 0
	exitCheck    = 1 // a check failed: rejected candidate, leak, contract violation
	exitBadInput = 2 // bad usage or bad input
)

// exitError carries an exit code through urfave/cli.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// checkFailed reports a failed check (exit 1) with a message.
func checkFailed(format string, args ...any) error {
	return &exitError{code: exitCheck, err: fmt.Errorf(format, args...)}
}

// badUsage reports a usage error (exit 2).
func badUsage(format string, args ...any) error {
	return &exitError{code: exitBadInput, err: fmt.Errorf(format, args...)}
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	cmds := []*cli.Command{
		runCmd(),
		reportCmd(),
		checkCmd(),
		simServerCmd(),
		serveCmd(),
		tuneCmd(),
		auditCmd(),
		tasksCmd(),
		recordingCmd(),
		exportCmd(),
		planCmd(),
		sweepCmd(),
		completionCmd(),
	}
	for _, c := range cmds {
		c.OnUsageError = usageError
		checkRequiredFlags(c)
		announceActions(c)
	}
	refuseStdoutFolder(cmds, "run", "records, manifest, reports")
	refuseStdoutFolder(cmds, "tune", "sweep, tuned experiment, charts")
	refuseStdoutFolder(cmds, "sweep", "records, sweep.json, sweep.html")
	return &cli.App{
		Name:         "crab",
		Usage:        "cache and router A/B testbed for LLM applications",
		Version:      version(),
		Reader:       stdin,
		Writer:       stdout,
		ErrWriter:    stderr,
		OnUsageError: usageError,
		// crab completion's scripts ask for the next words with the hidden
		// --generate-bash-completion flag.
		EnableBashCompletion: true,
		// Exit codes are decided in main, never inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands:       cmds,
		// A word that names no command is bad usage (exit 2), with the
		// nearest command named, not a help page and exit 1.
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			name := c.Args().First()
			msg := fmt.Sprintf("unknown command %q (see crab --help)", name)
			if cli.SuggestCommand != nil {
				msg = fmt.Sprintf("unknown command %q. %s (see crab --help)", name, cli.SuggestCommand(cmds, name))
			}
			return badUsage("%s", msg)
		},
	}
}

// checkRequiredFlags moves the check of a command's required flags into
// the command itself: a missing one is one line on stderr and exit 2, where
// urfave/cli would print the whole help page on stdout and exit 1.
func checkRequiredFlags(c *cli.Command) {
	var names []string
	for _, f := range c.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
			sf.Required = false
			names = append(names, sf.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	before := c.Before
	c.Before = func(ctx *cli.Context) error {
		for _, n := range names {
			if !ctx.IsSet(n) {
				return badUsage("%s needs --%s (see crab %s --help)", c.Name, n, c.Name)
			}
		}
		if before != nil {
			return before(ctx)
		}
		return nil
	}
}

// parsed, when set, is called as a command's action starts, once
// urfave/cli has parsed the command line. Parsing writes the library's
// help flag, a package variable, so in-process runs (the tests) parse one
// at a time, and parsed lets the next one parse while this one works.
var parsed func()

// announceActions makes c's action, and its subcommands', call parsed
// first.
func announceActions(c *cli.Command) {
	for _, sub := range c.Subcommands {
		announceActions(sub)
	}
	action, announce := c.Action, parsed
	if action == nil || announce == nil {
		return
	}
	c.Action = func(ctx *cli.Context) error {
		announce()
		return action(ctx)
	}
}

// refuseStdoutFolder makes -o - bad usage for the command named name,
// whose --output is a folder of several files (holds), not one stream.
func refuseStdoutFolder(cmds []*cli.Command, name, holds string) {
	c := findCommand(cmds, name)
	before := c.Before
	c.Before = func(ctx *cli.Context) error {
		if ctx.String("output") == "-" {
			return badUsage("%s -o -: the output is a folder (%s), not one stream, so it cannot be stdout; name a directory", name, holds)
		}
		if before != nil {
			return before(ctx)
		}
		return nil
	}
}

// usageError makes a flag-parsing error exit with code 2.
func usageError(_ *cli.Context, err error, _ bool) error {
	return badUsage("%w", err)
}

// Main runs the command line args (args[0] is the program's name) and
// maps its error to an exit code: 0, 1 for a failed check, 2 for bad
// usage or bad input. Cancelling ctx interrupts the command.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	err := app.RunContext(ctx, reorderArgs(app.Commands, args, stderr))
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "crab: %v\n", err)
	return exitCode(err)
}

func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, records.ErrBadInput):
		return exitBadInput
	}
	return exitCheck
}
