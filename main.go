// Command crab compares a baseline LLM stack with candidate stacks (scoped
// cache, difficulty router, shortened output) on the same task set, and
// decides — quality gate first, speed second — whether a candidate is really
// better. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
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
	}
	for _, c := range cmds {
		c.OnUsageError = usageError
	}
	return &cli.App{
		Name:         "crab",
		Usage:        "cache and router A/B testbed for LLM applications",
		Version:      version(),
		Reader:       stdin,
		Writer:       stdout,
		ErrWriter:    stderr,
		OnUsageError: usageError,
		// Exit codes are decided in main, never inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands:       cmds,
	}
}

// usageError makes a flag-parsing error exit with code 2.
func usageError(_ *cli.Context, err error, _ bool) error {
	return badUsage("%w", err)
}

func main() {
	os.Exit(realMain(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// realMain runs the app and maps its error to an exit code.
func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newApp(stdin, stdout, stderr).RunContext(ctx, args)
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
	case errors.Is(err, eval.ErrBadInput):
		return exitBadInput
	}
	return exitCheck
}
