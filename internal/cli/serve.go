package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/stack"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/serve"
)

// serveOptions are the inputs of `crab serve`.
type serveOptions struct {
	Config string
	// Experiment, Arm and Keys deploy an arm of an experiment instead of
	// a configuration: Experiment empty is the embedded default.
	Experiment      string
	Arm             string
	Keys            string
	Shadow          string // another arm of the experiment to mirror requests to ("" for none)
	Listen          string // overrides the configuration's listen
	Records         string // a records directory, overriding the configuration's records.dir ("" for none)
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
		UsageText: "crab serve --config FILE [--listen ADDR] [--shutdown-timeout D]\n" +
			"   crab serve [--experiment FILE] --arm NAME --keys FILE [--shadow NAME] [--listen ADDR]\n\n" +
			"Answers POST /v1/chat/completions (streaming and not) and GET /v1/models through the configured\n" +
			"cache, router and contract in front of upstream OpenAI-compatible servers; GET /metrics (Prometheus)\n" +
			"and GET /healthz. The API key (Authorization: Bearer KEY) names the tenant and permission; the\n" +
			"language and document version come from X-Crab-Lang / X-Crab-Doc-Version or metadata lang /\n" +
			"doc_version. SIGTERM stops accepting requests and lets those in flight finish; SIGHUP reads the keys\n" +
			"file again (a rotated key works at once, a removed one is refused at once).\n\n" +
			"--arm deploys exactly an arm that crab run measured: its models (simulated ones in process,\n" +
			"openai ones over HTTP), cache and store, router or cascade, contract policy, and the experiment's\n" +
			"retry policy, timeout and concurrency (without --experiment: the embedded default experiment).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "configuration `FILE` (YAML)"},
			&cli.StringFlag{Name: "experiment", Usage: "experiment `FILE` whose --arm to deploy (default: the embedded default experiment)"},
			&cli.StringFlag{Name: "arm", Usage: "`NAME` of the experiment's arm to deploy"},
			&cli.StringFlag{Name: "keys", Usage: "API key `FILE` for --arm (see the configuration's keys)"},
			&cli.StringFlag{Name: "shadow", Usage: "with --arm: mirror requests to the experiment's arm `NAME` as a shadow (the client gets --arm's answers; pairs of records go to the records directory's shadow/)"},
			&cli.StringFlag{Name: "listen", Usage: "`ADDR` to listen on (default: the configuration's listen, else 127.0.0.1:8080; port 0 picks a free port)"},
			&cli.StringFlag{Name: "records", Usage: "write a record of every request to `DIR` (records.jsonl, rotated, and manifest.json) for crab report and crab export; overrides the configuration's records.dir"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "on SIGTERM, how long in-flight requests may take to finish"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the server's whole life to `FILE` when it stops"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("serve takes no arguments, got %q", c.Args().First())
			}
			switch {
			case c.String("config") != "" && (c.String("arm") != "" || c.String("experiment") != "" || c.String("keys") != ""):
				return badUsage("serve takes --config or --arm (with --experiment and --keys), not both")
			case c.String("config") == "" && c.String("arm") == "":
				return badUsage("serve needs --config FILE, or --arm NAME --keys FILE")
			case c.String("arm") != "" && c.String("keys") == "":
				return badUsage("serve --arm needs --keys FILE")
			case c.String("shadow") != "" && c.String("arm") == "":
				return badUsage("serve --shadow goes with --arm; a configuration names its shadow in shadow.arm")
			}
			return serveProxy(c.Context, serveOptions{
				Config: c.String("config"), Experiment: c.String("experiment"), Arm: c.String("arm"), Keys: c.String("keys"),
				Shadow: c.String("shadow"),
				Listen: c.String("listen"), Records: c.String("records"), ShutdownTimeout: c.Duration("shutdown-timeout"),
				Quiet: c.Bool("quiet"), CPUProfile: c.String("cpuprofile"), Stderr: c.App.ErrWriter,
			})
		},
	}
}

// serveProxy loads the configuration, then serves until ctx ends (SIGTERM
// or Ctrl-C) and shuts down gracefully.
func serveProxy(ctx context.Context, o serveOptions) (err error) {
	setup, err := loadServeSetup(o)
	if err != nil {
		if errors.Is(err, serve.ErrBadConfig) {
			return &exitError{code: exitBadInput, err: err}
		}
		return err
	}
	if o.Records != "" {
		// A directory on the command line is the caller's, relative to
		// the working directory.
		abs, err := filepath.Abs(o.Records)
		if err != nil {
			return badUsage("--records %s: %v", o.Records, err)
		}
		rc := serve.RecordsConfig{}
		if setup.Config.Records != nil {
			rc = *setup.Config.Records
		}
		rc.Dir = abs
		setup.Config.Records = &rc
	}
	// Every log line and the error serve ends with are masked with every
	// credential of the setup.
	defer func() { err = redact.Error(err, setup.Secrets) }()
	o.Stderr = maskWriter(o.Stderr, setup.Secrets)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	logf := func(format string, args ...any) {
		if !o.Quiet {
			fmt.Fprintf(o.Stderr, "crab: serve: "+format+"\n", args...)
		}
	}
	setup.Store.Logf = logf // a shared store without a tag secret says so at start-up
	srv, err := serve.New(setup, serve.Options{Registry: reg, Logf: logf, Build: serve.BuildInfo{Version: version()}})
	if err != nil {
		var ce *serve.ConfigError
		if o.Records != "" && errors.As(err, &ce) && ce.Field == "records.dir" {
			return &exitError{code: exitBadInput, err: fmt.Errorf("--records: %s", ce.Msg)}
		}
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
	desc := describeArm(setup)
	stopReload := reloadOnHangup(srv, logf)
	defer stopReload()
	err = listenAndServe(ctx, addr, srv, setup.Config.Limits(), o.ShutdownTimeout, func(bound string) {
		logf("listening on http://%s/v1 (models %s; %s)", bound, strings.Join(srv.Models(), ", "), desc)
		if o.Ready != nil {
			o.Ready(bound)
		}
	})
	logf("stopped")
	return err
}

// reloadOnHangup reads the keys file again on every SIGHUP, without
// dropping a connection; a keys file with an error leaves the old keys in
// force. The returned function stops listening.
func reloadOnHangup(srv *serve.Server, logf func(string, ...any)) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if n, err := srv.ReloadKeys(); err != nil {
					logf("SIGHUP: keys not reloaded, the old keys stay in force: %v", err)
				} else {
					logf("SIGHUP: reloaded %d keys", n)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// loadServeSetup reads the configuration, or the experiment and the arm
// to deploy.
func loadServeSetup(o serveOptions) (*serve.Setup, error) {
	if o.Arm == "" {
		return serve.Load(o.Config)
	}
	es, err := eval.LoadSetup(o.Experiment, fixtures.FS)
	if err != nil {
		return nil, err
	}
	exp := es.Exp
	var names []string
	var deployed, shadow *stack.ArmSpec
	for i, a := range exp.Arms {
		switch a.Name {
		case o.Arm:
			deployed = &exp.Arms[i]
		case o.Shadow:
			shadow = &exp.Arms[i]
		}
		names = append(names, a.Name)
	}
	switch {
	case deployed == nil:
		return nil, badUsage("experiment %s has no arm %q (arms: %s)", exp.File, o.Arm, strings.Join(names, ", "))
	case o.Shadow != "" && shadow == nil:
		return nil, badUsage("--shadow: experiment %s has no other arm %q (arms: %s)", exp.File, o.Shadow, strings.Join(names, ", "))
	}
	return serve.Deploy(serve.Deployment{
		File: exp.File, Models: exp.Models, Arm: *deployed, Candidate: shadow, Contract: es.Contract(),
		Retry: exp.Retry, Timeout: exp.Timeout.Std(), Concurrency: exp.Concurrency,
		Seed: exp.Seed, TimeScale: *exp.TimeScale, KeysFile: o.Keys,
	})
}

// describeArm says in one line what the served stack does.
func describeArm(setup *serve.Setup) string {
	arm := setup.Arm
	var parts []string
	if c := arm.Cache; c != nil {
		parts = append(parts, "cache "+c.Key+" ("+c.Store+")")
	}
	if r := arm.Router; r != nil {
		if r.Mode == router.PolicyCascade {
			parts = append(parts, fmt.Sprintf("cascade %g (%s/%s)", r.Confidence, r.Small, r.Large))
		} else {
			parts = append(parts, fmt.Sprintf("router %g (%s/%s)", r.Threshold, r.Small, r.Large))
		}
	}
	if setup.Contract != nil {
		policy := "fail"
		if arm.Contract != nil {
			policy = arm.Contract.Policy
		}
		name := setup.Contract.Name()
		if c := setup.Config.Contract; c != nil {
			name = c.File
		}
		parts = append(parts, "contract "+name+" ("+policy+")")
	}
	parts = append(parts, fmt.Sprintf("retry %d", setup.Config.Retry.MaxAttempts))
	if c, sh := setup.Candidate, setup.Config.Shadow; c != nil && sh != nil {
		parts = append(parts, fmt.Sprintf("shadow %s (share %g)", c.Name, sh.Share))
	}
	return strings.Join(parts, ", ")
}
