package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/serve"
)

// serveOptions are the inputs of `crab serve`.
type serveOptions struct {
	Config          string
	Listen          string // overrides the configuration's listen
	ShutdownTimeout time.Duration
	Quiet           bool
	CPUProfile      string // a file for a CPU profile of the server's life ("" for none)
	Stderr          io.Writer
	// Ready, if set, is called with the bound address once the proxy
	// accepts connections (tests listen on port 0).
	Ready func(addr string)
}

func serveCmd() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the configured stack as an OpenAI-compatible proxy with Prometheus /metrics",
		UsageText: "crab serve --config FILE [--listen ADDR] [--shutdown-timeout D]\n\n" +
			"Answers POST /v1/chat/completions (streaming and not) and GET /v1/models through the configured\n" +
			"cache, router and contract in front of upstream OpenAI-compatible servers; GET /metrics (Prometheus)\n" +
			"and GET /healthz. The API key (Authorization: Bearer KEY) names the tenant and permission; the\n" +
			"language and document version come from X-Crab-Lang / X-Crab-Doc-Version or metadata lang /\n" +
			"doc_version. SIGTERM stops accepting requests and lets those in flight finish.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "configuration `FILE` (YAML)"},
			&cli.StringFlag{Name: "listen", Usage: "`ADDR` to listen on (default: the configuration's listen, else 127.0.0.1:8080; port 0 picks a free port)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "on SIGTERM, how long in-flight requests may take to finish"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the server's whole life to `FILE` when it stops"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("serve takes no arguments, got %q", c.Args().First())
			}
			return serveProxy(c.Context, serveOptions{
				Config: c.String("config"), Listen: c.String("listen"), ShutdownTimeout: c.Duration("shutdown-timeout"),
				Quiet: c.Bool("quiet"), CPUProfile: c.String("cpuprofile"), Stderr: c.App.ErrWriter,
			})
		},
	}
}

// serveProxy loads the configuration, then serves until ctx ends (SIGTERM
// or Ctrl-C) and shuts down gracefully.
func serveProxy(ctx context.Context, o serveOptions) error {
	setup, err := serve.Load(o.Config)
	if err != nil {
		if errors.Is(err, serve.ErrBadConfig) {
			return &exitError{code: exitBadInput, err: err}
		}
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := serve.New(setup, serve.Options{Registry: reg})
	if err != nil {
		if errors.Is(err, serve.ErrBadConfig) {
			return &exitError{code: exitBadInput, err: err}
		}
		return err
	}
	defer srv.Close()
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	addr := o.Listen
	if addr == "" {
		addr = setup.Config.Listen
	}
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	logf := func(format string, args ...any) {
		if !o.Quiet {
			fmt.Fprintf(o.Stderr, "crab: serve: "+format+"\n", args...)
		}
	}
	cfg := setup.Config
	stack := []string{}
	if c := cfg.Cache; c != nil {
		stack = append(stack, "cache "+c.Key)
	}
	if r := cfg.Router; r != nil {
		stack = append(stack, fmt.Sprintf("router %g (%s/%s)", r.Threshold, r.Small, r.Large))
	}
	if c := cfg.Contract; c != nil {
		stack = append(stack, "contract "+c.File+" ("+c.Policy+")")
	}
	stack = append(stack, fmt.Sprintf("retry %d", cfg.Retry.MaxAttempts))
	err = listenAndServe(ctx, addr, srv, o.ShutdownTimeout, func(bound string) {
		logf("listening on http://%s/v1 (models %s; %s)", bound, strings.Join(srv.Models(), ", "), strings.Join(stack, ", "))
		if o.Ready != nil {
			o.Ready(bound)
		}
	})
	logf("stopped")
	return err
}
