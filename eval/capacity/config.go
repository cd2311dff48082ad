package capacity

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/stack"
)

// Counting rules (Config.Count): what a request must do to count toward
// the share that decides the knee.
const (
	// CountAnswered counts a request answered within the SLO (outcome ok,
	// or an answer the contract refused): the deployment kept up with it.
	// Whether the answer was right is the quality gate's business, judged
	// first, so that an arm's quality does not move its capacity figure.
	CountAnswered = "answered"
	// CountPassing counts a request that passes and meets the SLO
	// (goodput, as the gate's objective goodput counts it).
	CountPassing = "passing"
)

// Defaults of a sweep section.
const (
	DefaultShare     = 0.99
	DefaultBlocks    = 8
	DefaultRefine    = 2
	DefaultResamples = 2000
)

// Config is an experiment's sweep: section. Rates and latencies are in
// the models' own time: at time_scale s a simulated model runs s times as
// fast, so crab sends at rate/s and reads every latency times 1/s, and a
// sweep's knees do not move with time_scale, only its wall time does
// (against a real backend, time_scale stays 1 and both are wall time).
type Config struct {
	// Arms are the arms swept, the baseline first (default: every arm
	// of the experiment).
	Arms []string `yaml:"arms"`
	// Rates is the ladder in requests per second, increasing; or From,
	// To and Steps make one, evenly spaced or, with Geometric, at a
	// constant ratio.
	Rates     []float64 `yaml:"rates"`
	From      float64   `yaml:"from"`
	To        float64   `yaml:"to"`
	Steps     int       `yaml:"steps"`
	Geometric bool      `yaml:"geometric"`
	// Refine is how many rungs are added, by halving the bracket, between
	// an arm's last rung that held and the first that did not (default 2).
	Refine *int `yaml:"refine"`
	// Requests is the requests of one rung: the first Requests tasks of
	// the task file (default: every task), one pass, a cold cache.
	Requests int `yaml:"requests"`
	// Blocks cuts every rung into this many blocks of consecutive
	// requests (default 8); the first is the rung's burn-in, and the
	// knee's interval resamples the others.
	Blocks int `yaml:"blocks"`
	// SLO is the latency a request must meet (required).
	SLO analysis.SLO `yaml:"slo"`
	// Share is the least share of a rung's requests that must count for
	// the rung to hold, in (0, 1] (default 0.99).
	Share *float64 `yaml:"share"`
	// Count is what counts toward Share: answered (default) or passing.
	Count string `yaml:"count"`
	// PeakRPS is the peak the deployment must carry, in requests per
	// second (0: no replica figures).
	PeakRPS float64 `yaml:"peak_rps"`
	// ReplicaCostPerHour is the price of one replica of the deployment the
	// sweep measured (every model the experiment declares), per hour (0:
	// no cost figures).
	ReplicaCostPerHour float64 `yaml:"replica_cost_per_hour"`
	// Resamples of the knee's bootstrap (default 2000).
	Resamples int `yaml:"resamples"`
}

// share is the share in force.
func (c *Config) share() float64 {
	if c.Share == nil {
		return DefaultShare
	}
	return *c.Share
}

// growthLimit is how much the median latency the SLO limits may rise
// through a rung, in milliseconds, before its queue counts as growing: a
// tenth of the limit (TTFT's when set, else end to end's).
func (c *Config) growthLimit() float64 {
	if c.SLO.TTFTMs > 0 {
		return c.SLO.TTFTMs / 10
	}
	return c.SLO.E2EMs / 10
}

func (c *Config) refine() int {
	if c.Refine == nil {
		return DefaultRefine
	}
	return *c.Refine
}

// fields are the keys a sweep section may hold.
var fields = []string{"arms", "rates", "from", "to", "steps", "geometric", "refine", "requests", "blocks", "slo", "share", "count", "peak_rps", "replica_cost_per_hour", "resamples"}

// LoadConfig reads and checks the sweep section of an experiment set up
// by eval.LoadSetup. Every problem is a *records.InputError naming the
// experiment file, the line and the field (sweep.rates, ...), as a bad
// experiment file is reported, so the command exits 2 before anything is
// sent.
func LoadConfig(s *eval.Setup) (*Config, error) {
	e := s.Exp
	n := &e.Sweep
	bad := func(at *yaml.Node, field, format string, args ...any) error {
		line := 0
		if at != nil {
			line = at.Line
		}
		return &records.InputError{File: e.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if n == nil || n.Kind == 0 {
		return nil, bad(nil, "sweep", "the experiment has no sweep section: add one with the rates and the SLO (docs/capacity.md)")
	}
	if n.Kind != yaml.MappingNode {
		return nil, bad(n, "sweep", "want a mapping of rates, slo, share, ...")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(fields, k.Value) {
			return nil, bad(k, "sweep."+k.Value, "unknown field (known: %s)", strings.Join(fields, ", "))
		}
		if k.Value == "slo" {
			v := n.Content[i+1]
			for j := 0; v.Kind == yaml.MappingNode && j+1 < len(v.Content); j += 2 {
				if f := v.Content[j].Value; f != "e2e_ms" && f != "ttft_ms" {
					return nil, bad(v.Content[j], "sweep.slo."+f, "unknown field (known: e2e_ms, ttft_ms)")
				}
			}
		}
	}
	var c Config
	if err := n.Decode(&c); err != nil {
		line, field, msg := inputerr.YAML(err, n)
		if field != "" {
			field = "sweep." + field
		} else {
			field = "sweep"
		}
		if line == 0 {
			line = n.Line
		}
		return nil, &records.InputError{File: e.File, Line: line, Field: field, Msg: msg}
	}
	// at is the node of a sweep field, or the nearest one above it that
	// the file has (a missing field's error names its section's line).
	at := func(path ...string) *yaml.Node {
		for k := len(path); k > 0; k-- {
			if m := inputerr.Lookup(n, path[:k]...); m != nil {
				return m
			}
		}
		return n
	}
	if err := c.check(s, at, bad); err != nil {
		return nil, err
	}
	return &c, nil
}

// check validates c against the experiment and fills its defaults.
func (c *Config) check(s *eval.Setup, at func(...string) *yaml.Node, bad func(*yaml.Node, string, string, ...any) error) error {
	e := s.Exp
	if len(c.Arms) == 0 {
		for _, a := range e.Arms {
			c.Arms = append(c.Arms, a.Name)
		}
	}
	for i, name := range c.Arms {
		if !slices.ContainsFunc(e.Arms, func(a stack.ArmSpec) bool { return a.Name == name }) {
			return bad(seqItem(at("arms"), i), "sweep.arms", "no arm %q in the experiment", name)
		}
		if slices.Index(c.Arms, name) != i {
			return bad(seqItem(at("arms"), i), "sweep.arms", "arm %q is listed twice", name)
		}
	}
	if err := c.checkLadder(at, bad); err != nil {
		return err
	}
	if r := c.refine(); r < 0 || r > 8 {
		return bad(at("refine"), "sweep.refine", "rungs added around the knee, 0 to 8, got %d", r)
	}
	if c.Requests < 0 || c.Requests > len(s.Tasks) {
		return bad(at("requests"), "sweep.requests", "requests per rung, 1 to the %d tasks of the task file, got %d", len(s.Tasks), c.Requests)
	}
	if c.Requests == 0 {
		c.Requests = len(s.Tasks)
	}
	if c.Blocks == 0 {
		c.Blocks = DefaultBlocks
	}
	if c.Blocks < 3 || c.Blocks > c.Requests {
		return bad(at("blocks"), "sweep.blocks", "blocks per rung, 3 to the %d requests of a rung (the first is burn-in, the others are resampled), got %d", c.Requests, c.Blocks)
	}
	if c.SLO.E2EMs == 0 && c.SLO.TTFTMs == 0 {
		return bad(at("slo"), "sweep.slo", "a sweep needs an SLO: slo.e2e_ms or slo.ttft_ms (milliseconds in the models' time)")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"e2e_ms", c.SLO.E2EMs}, {"ttft_ms", c.SLO.TTFTMs}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad(at("slo", f.name), "sweep.slo."+f.name, "milliseconds, 0 or more, got %v", f.v)
		}
	}
	if v := c.share(); !(v > 0 && v <= 1) {
		return bad(at("share"), "sweep.share", "the share of requests that must count, in (0, 1], got %v", v)
	}
	switch c.Count {
	case "":
		c.Count = CountAnswered
	case CountAnswered, CountPassing:
	default:
		return bad(at("count"), "sweep.count", "unknown rule %q (want answered or passing)", c.Count)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"peak_rps", c.PeakRPS}, {"replica_cost_per_hour", c.ReplicaCostPerHour}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad(at(f.name), "sweep."+f.name, "must be 0 or more, got %v", f.v)
		}
	}
	if c.Resamples == 0 {
		c.Resamples = DefaultResamples
	}
	if c.Resamples < 100 {
		return bad(at("resamples"), "sweep.resamples", "at least 100 resamples, got %d", c.Resamples)
	}
	if *e.TimeScale == 0 {
		return &records.InputError{File: e.File, Field: "time_scale", Msg: "a sweep needs latency that is waited: time_scale 0 runs the simulated models without load; set it above 0 (0.1 runs ten times as fast)"}
	}
	return nil
}

// checkLadder checks the rates, or builds them from from, to and steps.
func (c *Config) checkLadder(at func(...string) *yaml.Node, bad func(*yaml.Node, string, string, ...any) error) error {
	ranged := c.From != 0 || c.To != 0 || c.Steps != 0
	switch {
	case len(c.Rates) > 0 && ranged:
		return bad(at("rates"), "sweep.rates", "give either rates or from, to and steps, not both")
	case len(c.Rates) > 0:
		if c.Geometric {
			return bad(at("geometric"), "sweep.geometric", "geometric spaces a ladder made from from, to and steps; rates lists its rungs itself")
		}
		for i, r := range c.Rates {
			if !(r > 0) || math.IsInf(r, 0) {
				return bad(seqItem(at("rates"), i), "sweep.rates", "a rate in requests per second above 0, got %v", r)
			}
			if i > 0 && r <= c.Rates[i-1] {
				return bad(seqItem(at("rates"), i), "sweep.rates", "the ladder must increase: %v after %v", r, c.Rates[i-1])
			}
		}
		if len(c.Rates) < 2 {
			return bad(at("rates"), "sweep.rates", "a ladder needs at least 2 rates")
		}
		return nil
	case !ranged:
		return bad(at(), "sweep.rates", "a sweep needs its ladder: rates: [...], or from, to and steps")
	}
	if !(c.From > 0) || math.IsInf(c.From, 0) {
		return bad(at("from"), "sweep.from", "a rate in requests per second above 0, got %v", c.From)
	}
	if !(c.To > c.From) || math.IsInf(c.To, 0) {
		return bad(at("to"), "sweep.to", "the ladder must increase: to %v is not above from %v", c.To, c.From)
	}
	if c.Steps < 2 || c.Steps > 64 {
		return bad(at("steps"), "sweep.steps", "rungs from from to to, 2 to 64, got %d", c.Steps)
	}
	c.Rates = Ladder(c.From, c.To, c.Steps, c.Geometric)
	return nil
}

// Ladder is steps rates from from to to, evenly spaced or, geometric, at
// a constant ratio, both ends included.
func Ladder(from, to float64, steps int, geometric bool) []float64 {
	out := make([]float64, steps)
	for i := range out {
		f := float64(i) / float64(steps-1)
		if geometric {
			out[i] = from * math.Pow(to/from, f)
		} else {
			out[i] = from + (to-from)*f
		}
	}
	out[steps-1] = to
	return out
}

// seqItem is item i of a sequence node, or the node itself.
func seqItem(n *yaml.Node, i int) *yaml.Node {
	if n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}
