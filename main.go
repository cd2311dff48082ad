// Command crab compares a baseline LLM stack with candidate stacks (scoped
// cache, difficulty router, shortened output) on the same task set, and
// decides — quality gate first, speed second — whether a candidate is really
// better. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/crab-testbed/crab/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
