package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
	"github.com/crab-testbed/crab/serve"
)

// checkLimits refuses limits that would cut every request (a typo such
// as 1ns for 1s) or no connection at all.
func checkLimits(l serve.Limits) error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"--body-timeout", l.BodyTimeout}, {"--write-timeout", l.WriteTimeout}} {
		if f.v < time.Millisecond {
			return badUsage("%s %v: must be at least 1ms", f.name, f.v)
		}
	}
	if l.MaxConns < 1 {
		return badUsage("--max-conns %d: must be at least 1", l.MaxConns)
	}
	return nil
}

// simServerOptions are the inputs of `crab sim-server`.
type simServerOptions struct {
	Listen          string
	TimeScale       float64
	Seed            int64
	Models          []string // NAME=KIND
	Tasks           string   // task file whose expected values the models answer against; "" = none
	Faults          sim.Config
	Vary            sim.Vary     // every model's varying answers
	Capacity        sim.Capacity // every model's capacity, one pool per model
	CallLog         string       // file to write every call to as JSON lines; "" = none
	Net             simserver.Faults
	MaxBodyBytes    int64
	Limits          serve.Limits // zero fields: serve.DefaultLimits
	ShutdownTimeout time.Duration
	Quiet           bool
	Stderr          io.Writer
	// Ready, if set, is called with the bound address once the server
	// accepts connections (tests listen on port 0).
	Ready func(addr string)
}

func simServerCmd() *cli.Command {
	rate := func(name, usage string) cli.Flag {
		return &cli.Float64Flag{Name: name, Usage: usage + " (a rate in [0,1])", Category: "faults"}
	}
	return &cli.Command{
		Name:  "sim-server",
		Usage: "serve the simulated models over the OpenAI chat completion API",
		UsageText: "crab sim-server [--listen ADDR] [--time-scale F] [--seed N] [--model NAME=KIND ...] [--tasks FILE] [--vary-share S] [--vary-flip P] [--slots N] [--slowdown F] [--max-queue N] [--call-log FILE] [--pause AT+FOR[/EVERY]] [--outage AT+FOR] [fault flags]\n\n" +
			"Answers POST /v1/chat/completions (streaming and not) and GET /v1/models. Scope and call id come\n" +
			"from the X-Crab-* headers crab's openai backend sends; with --seed equal to an experiment's seed and\n" +
			"the same --time-scale, an experiment with backend openai pointed here meets the same answers,\n" +
			"faults and pacing as the in-process simulated models. With --tasks, the models answer each call\n" +
			"(identified by X-Crab-Request-Id, the task id) against that task's expected values, as they do in process.\n" +
			"A share of those tasks (--vary-share) answers wrong on each call with probability --vary-flip, as a real\n" +
			"model's answers vary; --vary-share 0 makes every answer deterministic. With --slots, each model serves at\n" +
			"most that many calls at once, the rest queue first come first served, and each further running call\n" +
			"slows every new call's output tokens by --slowdown; --call-log writes every call as a line of JSON.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8081", Usage: "`ADDR` to listen on (port 0 picks a free port)"},
			&cli.Float64Flag{Name: "time-scale", Value: 1, Usage: "pace answers at this fraction of the simulated latency (0: no waiting)"},
			&cli.Int64Flag{Name: "seed", Usage: "seed of every random draw (use the experiment's seed to reproduce an in-process run)"},
			&cli.StringSliceFlag{Name: "model", Usage: "serve a simulated model as `NAME=KIND` (small or large); repeatable (default small=small, large=large)"},
			&cli.StringFlag{Name: "tasks", Usage: "task `FILE` (JSONL) whose expected values are the models' ground truth, by task id"},
			&cli.Float64Flag{Name: "vary-share", Value: sim.DefaultShare, Category: "varying answers and capacity", Usage: "share of tasks whose answer varies from call to call (0: deterministic answers)"},
			&cli.Float64Flag{Name: "vary-flip", Value: sim.DefaultFlip, Category: "varying answers and capacity", Usage: "probability that a call of a varying task is answered wrong"},
			&cli.IntFlag{Name: "slots", Category: "varying answers and capacity", Usage: "calls each model runs at once, the rest queue (0: no capacity limit, latency independent of load)"},
			&cli.Float64Flag{Name: "slowdown", Category: "varying answers and capacity", Usage: "share each further running call adds to the time per output token (with --slots)"},
			&cli.IntFlag{Name: "max-queue", Category: "varying answers and capacity", Usage: "most calls queued per model; more are answered HTTP 503 at once (0: no limit; with --slots)"},
			&cli.StringFlag{Name: "call-log", Category: "varying answers and capacity", Usage: "write every call (arrival, caller, tokens, queue wait) to `FILE` as JSON lines"},
			&cli.Int64Flag{Name: "max-body-bytes", Value: 4 << 20, Usage: "largest request body accepted"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 10 * time.Second, Usage: "on SIGTERM, how long in-flight answers may take to finish"},
			&cli.DurationFlag{Name: "body-timeout", Value: serve.DefaultLimits().BodyTimeout, Usage: "a request body not received within this after its headers gets 408 and its connection closed"},
			&cli.DurationFlag{Name: "write-timeout", Value: serve.DefaultLimits().WriteTimeout, Usage: "longest time to send an answer, from the end of the request's headers"},
			&cli.IntFlag{Name: "max-conns", Value: serve.DefaultLimits().MaxConns, Usage: "most connections open at once; more wait until one closes"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
			rate("error-rate", "answer HTTP 500 after the base latency (the model's server error)"),
			rate("hang-rate", "never answer; only the client's deadline ends the call"),
			rate("refusal-rate", "refuse to answer"),
			rate("malformed-rate", "answer with content that is not JSON"),
			rate("missing-field-rate", "leave a required field out"),
			rate("wrong-enum-rate", "write a category outside the enum"),
			rate("empty-evidence-rate", "write an empty evidence list"),
			rate("rate-limit-rate", "answer HTTP 429 at once"),
			rate("server-error-rate", "answer HTTP 503 at once"),
			rate("disconnect-rate", "close the connection half-way through the answer"),
			rate("stall-rate", "stop the answer half-way and never finish it"),
			&cli.StringSliceFlag{Name: "pause", Category: "faults", Usage: "stall the whole backend (nothing answered or streamed) for `AT+FOR[/EVERY]` from the first call, e.g. 2s+1.2s or 0s+400ms/1s; repeatable"},
			&cli.StringSliceFlag{Name: "outage", Category: "faults", Usage: "answer every call 503 for `AT+FOR[/EVERY]` from the first call, e.g. 3s+3s; repeatable"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return badUsage("sim-server takes no arguments, got %q", c.Args().First())
			}
			o := simServerOptions{
				Listen: c.String("listen"), TimeScale: c.Float64("time-scale"), Seed: c.Int64("seed"),
				Models: c.StringSlice("model"), Tasks: c.String("tasks"), MaxBodyBytes: c.Int64("max-body-bytes"),
				ShutdownTimeout: c.Duration("shutdown-timeout"), Quiet: c.Bool("quiet"), Stderr: c.App.ErrWriter,
				Limits:   serve.Limits{BodyTimeout: c.Duration("body-timeout"), WriteTimeout: c.Duration("write-timeout"), MaxConns: c.Int("max-conns")},
				Vary:     sim.Vary{Share: c.Float64("vary-share"), Flip: c.Float64("vary-flip")},
				Capacity: sim.Capacity{Slots: c.Int("slots"), Slowdown: c.Float64("slowdown"), MaxQueue: c.Int("max-queue")},
				CallLog:  c.String("call-log"),
			}
			if err := checkSimLoad(o.Vary, o.Capacity); err != nil {
				return err
			}
			if err := checkLimits(o.Limits); err != nil {
				return err
			}
			f := &o.Faults
			f.ErrorRate, f.HangRate, f.RefusalRate = c.Float64("error-rate"), c.Float64("hang-rate"), c.Float64("refusal-rate")
			f.MalformedRate, f.MissingFieldRate = c.Float64("malformed-rate"), c.Float64("missing-field-rate")
			f.WrongEnumRate, f.EmptyEvidenceRate = c.Float64("wrong-enum-rate"), c.Float64("empty-evidence-rate")
			o.Net = simserver.Faults{
				RateLimit: c.Float64("rate-limit-rate"), ServerError: c.Float64("server-error-rate"),
				Disconnect: c.Float64("disconnect-rate"), Stall: c.Float64("stall-rate"),
			}
			for _, f := range []struct {
				flag string
				into *[]simserver.Window
			}{{"pause", &o.Net.Pauses}, {"outage", &o.Net.Outages}} {
				for _, v := range c.StringSlice(f.flag) {
					w, err := simserver.ParseWindow(v)
					if err != nil {
						return badUsage("--%s: %v", f.flag, err)
					}
					*f.into = append(*f.into, w)
				}
			}
			return simServe(c.Context, o)
		},
	}
}

// checkSimLoad refuses varying and capacity settings that mean nothing.
func checkSimLoad(v sim.Vary, c sim.Capacity) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"--vary-share", v.Share}, {"--vary-flip", v.Flip}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return badUsage("%s %v: want a share in [0, 1]", f.name, f.v)
		}
	}
	switch {
	case c.Slots < 0:
		return badUsage("--slots %d: must not be negative", c.Slots)
	case c.MaxQueue < 0:
		return badUsage("--max-queue %d: must not be negative", c.MaxQueue)
	case math.IsNaN(c.Slowdown) || math.IsInf(c.Slowdown, 0) || c.Slowdown < 0:
		return badUsage("--slowdown %v: want a finite number, 0 or more", c.Slowdown)
	case c.Slots == 0 && (c.Slowdown != 0 || c.MaxQueue != 0):
		return badUsage("--slowdown and --max-queue need --slots: how many calls a model runs at once")
	}
	return nil
}

// newSimServer builds the server from the options; errors are bad usage.
// With --call-log it opens the log too: close it after the server stops.
func newSimServer(o simServerOptions) (*simserver.Server, *sim.CallLog, error) {
	specs := o.Models
	if len(specs) == 0 {
		specs = []string{"small=small", "large=large"}
	}
	var oracle sim.Oracle
	if o.Tasks != "" {
		exp, err := readOracle(o.Tasks)
		if err != nil {
			return nil, nil, err
		}
		oracle = func(id string) map[string]any { return exp[id] }
	}
	var cfgs []sim.Config
	for _, spec := range specs {
		name, kind, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			return nil, nil, badUsage("--model %q: want NAME=KIND, e.g. large=large", spec)
		}
		var cfg sim.Config
		switch kind {
		case sim.KindSmall:
			cfg = sim.Small()
		case sim.KindLarge:
			cfg = sim.Large()
		default:
			return nil, nil, badUsage("--model %q: kind %q, want small or large", spec, kind)
		}
		f := o.Faults
		cfg.Name, cfg.TimeScale, cfg.Seed, cfg.Oracle = name, o.TimeScale, o.Seed, oracle
		cfg.ErrorRate, cfg.HangRate, cfg.RefusalRate, cfg.MalformedRate = f.ErrorRate, f.HangRate, f.RefusalRate, f.MalformedRate
		cfg.MissingFieldRate, cfg.WrongEnumRate, cfg.EmptyEvidenceRate = f.MissingFieldRate, f.WrongEnumRate, f.EmptyEvidenceRate
		cfg.Vary, cfg.Capacity = o.Vary, o.Capacity
		cfgs = append(cfgs, cfg)
	}
	var log *sim.CallLog
	if o.CallLog != "" {
		f, err := os.Create(o.CallLog)
		if err != nil {
			return nil, nil, badUsage("--call-log: %v", err)
		}
		log = sim.NewCallLogWriter(f)
		log.OnClose(f.Close)
	}
	fail := func(err error) (*simserver.Server, *sim.CallLog, error) {
		if log != nil {
			log.Close()
		}
		return nil, nil, err
	}
	models := make([]*sim.Model, 0, len(cfgs))
	for _, cfg := range cfgs {
		cfg.CallLog = log
		m, err := sim.New(cfg)
		if err != nil {
			return fail(badUsage("--model %s: %v", cfg.Name, err))
		}
		models = append(models, m)
	}
	s, err := simserver.New(simserver.Config{Models: models, Faults: o.Net, Seed: o.Seed, MaxBodyBytes: o.MaxBodyBytes})
	if err != nil {
		return fail(badUsage("%v", err))
	}
	return s, log, nil
}

// readOracle reads a task file's expected values by task id. A bad line
// is an *records.InputError naming the file, line and field (exit 2).
func readOracle(path string) (map[string]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &records.InputError{File: path, Field: "--tasks", Msg: "cannot read: " + err.Error()}
	}
	defer f.Close()
	tasks, err := eval.ReadTasks(f, path)
	if err != nil {
		return nil, err
	}
	return eval.ExpectedByID(tasks), nil
}

// simServe runs the sim server until ctx ends (SIGTERM or Ctrl-C), then
// stops accepting connections and lets in-flight answers finish.
func simServe(ctx context.Context, o simServerOptions) error {
	s, log, err := newSimServer(o)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		if !o.Quiet {
			fmt.Fprintf(o.Stderr, "crab: sim-server: "+format+"\n", args...)
		}
	}
	err = listenAndServe(ctx, o.Listen, s, o.Limits, o.ShutdownTimeout, func(addr string) {
		logf("listening on http://%s/v1 (models %s; time-scale %g; seed %d)", addr, strings.Join(s.Names(), ", "), o.TimeScale, o.Seed)
		if o.Ready != nil {
			o.Ready(addr)
		}
	})
	logf("stopped: %s", s.Stats())
	if log != nil {
		if cerr := log.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("--call-log %s: %w", o.CallLog, cerr)
		}
	}
	return err
}

// listenAndServe serves h on addr under the limits until ctx ends, then
// shuts down (see serve.Serve): requests still sending their body are cut,
// those in flight get up to grace to finish. ready is called with the
// bound address.
func listenAndServe(ctx context.Context, addr string, h http.Handler, lim serve.Limits, grace time.Duration, ready func(string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return badUsage("--listen %s: %v", addr, err)
	}
	ready(ln.Addr().String())
	return serve.Serve(ctx, ln, h, lim, grace)
}
