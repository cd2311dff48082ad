package eval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/internal/inputerr"

	"github.com/crab-testbed/crab/cache"
)

// Experiment is an experiment file: the workload, the contract, the models
// and the arms that are compared on them. Everything that must be equal on
// both sides of a comparison (tasks, schedule, contract, timeout, retry
// policy) is set once here, not per arm.
type Experiment struct {
	Name     string `yaml:"name"`
	Tasks    string `yaml:"tasks"`    // tasks JSONL, relative to the experiment file; "embedded:NAME" reads a built-in fixture
	Contract string `yaml:"contract"` // JSON Schema, same resolution as Tasks

	Seed      int64    `yaml:"seed"`       // arrival schedule, simulated models and bootstrap; repeat r uses Seed+r
	Repeats   int      `yaml:"repeats"`    // whole passes over the task list per arm (default 1)
	Warmup    int      `yaml:"warmup"`     // first N scheduled requests of each pass run but are excluded from statistics
	TimeScale *float64 `yaml:"time_scale"` // simulated models: 1 = real time, 0 = no sleeping (default 1)

	Arrival     Arrival `yaml:"arrival"`
	Concurrency int     `yaml:"concurrency"` // requests in flight at most (default 64); waiting for a slot is queue time
	// Order is how arms share the schedule: interleaved (default; blocks of
	// the schedule, each played by every arm in a random order) or
	// sequential (each arm plays the whole schedule in turn).
	Order   string    `yaml:"order"`
	Block   Duration  `yaml:"block"`   // interleaved: schedule time per block (default 500ms)
	Timeout Duration  `yaml:"timeout"` // per request, from its actual send time (default 30s)
	Retry   RetrySpec `yaml:"retry"`
	Shadow  *bool     `yaml:"shadow"` // ask the other model on routed requests to judge misroutes (default true)
	// RecordOutput writes each answer's text into records.jsonl (default
	// true); false keeps a large run's records small (statistics never read it).
	RecordOutput *bool `yaml:"record_output"`
	// Gate is the decision rule the candidates are held to (defaults: see
	// GateConfig).
	Gate   GateConfig  `yaml:"gate"`
	Models []ModelSpec `yaml:"models"`
	Arms   []ArmSpec   `yaml:"arms"`

	// Set by LoadExperiment, not read from the file.
	File string `yaml:"-"` // path the experiment was read from
	Hash string `yaml:"-"` // sha256 of the file's bytes

	warmupLine int // line of warmup, for the check against the task count
}

// Arrival is the open-loop schedule of request send times (see Schedule).
type Arrival struct {
	Pattern    string  `yaml:"pattern"`    // burst, constant, poisson (default), gamma, ramp or replay
	Rate       float64 `yaml:"rate"`       // requests per second (constant, poisson, gamma; start rate of a ramp)
	RateEnd    float64 `yaml:"rate_end"`   // ramp: rate of the last request
	Burstiness float64 `yaml:"burstiness"` // gamma: shape k; 1 = Poisson, below 1 burstier (default 1)
	Trace      string  `yaml:"trace"`      // replay: file of send offsets in ms, one per line, relative to the experiment file

	Offsets []time.Duration `yaml:"-" json:"-"` // replay: read from Trace by LoadSetup
}

// RetrySpec is the retry policy for failed model calls, the same for every arm.
type RetrySpec struct {
	MaxAttempts int      `yaml:"max_attempts"` // total attempts, first included (default 1: no retry)
	Backoff     Duration `yaml:"backoff"`      // wait before the second attempt, doubled after
}

// ModelSpec declares a model backend and its prices.
type ModelSpec struct {
	Name    string `yaml:"name"`
	Backend string `yaml:"backend"` // sim (default) or openai
	Kind    string `yaml:"kind"`    // sim: small or large

	// Backend openai: an OpenAI-compatible server (vLLM, Ollama, llama.cpp,
	// a hosted API, crab sim-server).
	BaseURL     string `yaml:"base_url"`     // API root, e.g. http://127.0.0.1:8000/v1
	Model       string `yaml:"model"`        // model name sent to the server (default: name)
	APIKeyEnv   string `yaml:"api_key_env"`  // environment variable holding the API key (default: none sent)
	Stream      *bool  `yaml:"stream"`       // stream answers, so TTFT is measured (default true)
	CrabHeaders *bool  `yaml:"crab_headers"` // send the scope and call id in X-Crab-* headers (default true)

	PriceInPerMTok  float64 `yaml:"price_in_per_mtok"`  // cost units per million input tokens
	PriceOutPerMTok float64 `yaml:"price_out_per_mtok"` // cost units per million output tokens

	Faults Faults `yaml:"faults"`
}

// Faults are injected by simulated backends, each a rate in [0,1].
type Faults struct {
	Error         float64 `yaml:"error"`
	Hang          float64 `yaml:"hang"`
	Malformed     float64 `yaml:"malformed"`
	MissingField  float64 `yaml:"missing_field"`
	WrongEnum     float64 `yaml:"wrong_enum"`
	EmptyEvidence float64 `yaml:"empty_evidence"`
	Refusal       float64 `yaml:"refusal"`
}

// ArmSpec is one stack configuration: a baseline or a candidate.
type ArmSpec struct {
	Name        string         `yaml:"name"`
	Model       string         `yaml:"model"`      // the model to call when there is no router
	Mode        string         `yaml:"mode"`       // full (default), short, over_short
	MaxTokens   int            `yaml:"max_tokens"` // output budget; 0 = backend default
	Temperature float64        `yaml:"temperature"`
	System      string         `yaml:"system"`
	Cache       *CacheSpec     `yaml:"cache"`
	Router      *RouterSpec    `yaml:"router"`
	Contract    *ContractSpec  `yaml:"contract"`
	Extra       map[string]any `yaml:",inline"` // rejected: unknown keys are reported with their line
}

// CacheSpec configures an arm's response cache.
type CacheSpec struct {
	Key        string   `yaml:"key"`          // "full" (default), "text", or a comma list of key fields
	TTL        Duration `yaml:"ttl"`          // 0 = no expiry
	CheckOnHit *bool    `yaml:"check_on_hit"` // refuse hits built for another scope (default true)
	Store      string   `yaml:"store"`        // "ristretto" (default, in process) or "redis" (shared)
	RedisAddr  string   `yaml:"redis_addr"`   // host:port for store redis (default 127.0.0.1:6379)
}

// RouterSpec configures an arm's difficulty router.
type RouterSpec struct {
	Mode      string  `yaml:"mode"`      // threshold (default): route by score; cascade: small first, escalate to large
	Threshold float64 `yaml:"threshold"` // mode threshold: score >= threshold goes to Large
	Small     string  `yaml:"small"`
	Large     string  `yaml:"large"`
	// Confidence (mode cascade): a small answer less confident than this,
	// or one that fails, is escalated to Large.
	Confidence float64 `yaml:"confidence"`
	// ThresholdFrom names a tune.json written by `crab tune` (relative to
	// the experiment file); its chosen threshold (mode cascade: its
	// cascade confidence) is used instead of threshold/confidence.
	ThresholdFrom string `yaml:"threshold_from"`

	fromLine int // line of threshold_from, for errors found when it is read
}

// ContractSpec sets what an arm does with an answer that breaks the contract.
type ContractSpec struct {
	Policy     string `yaml:"policy"`      // fail (default), reask, escalate
	EscalateTo string `yaml:"escalate_to"` // model for policy escalate
}

// Duration is a time.Duration written as "250ms", "10s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: want a duration such as 250ms or 10s, got %q", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalText writes the duration string (JSON manifests).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses the duration string (JSON manifests read back).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Output modes an arm may ask for; they mirror model.Mode*.
var validModes = map[string]bool{"full": true, "short": true, "over_short": true}

// ParseExperiment decodes and validates an experiment file. name is used in
// error messages; every error is an *InputError naming the line and field.
func ParseExperiment(raw []byte, name string) (*Experiment, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, yamlError(name, err, nil)
	}
	if len(root.Content) == 0 {
		return nil, &InputError{File: name, Msg: "empty experiment file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var e Experiment
	if err := dec.Decode(&e); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err, &root)
	}
	sum := sha256.Sum256(raw)
	e.File, e.Hash = name, hex.EncodeToString(sum[:])
	if err := e.validate(name, root.Content[0]); err != nil {
		return nil, err
	}
	return &e, nil
}

// yamlError turns a yaml.v3 error into an InputError with a line and field.
// root, when known, is searched for the key standing on the error's line.
func yamlError(name string, err error, root *yaml.Node) error {
	line, field, msg := inputerr.YAML(err, root)
	return &InputError{File: name, Line: line, Field: field, Msg: msg}
}

// node finds the YAML node at a path of mapping keys and sequence indexes,
// returning the deepest node found so an error can point at a line.
func node(n *yaml.Node, path ...any) *yaml.Node {
	cur := n
	for _, p := range path {
		next := (*yaml.Node)(nil)
		switch k := p.(type) {
		case string:
			if cur.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(cur.Content); i += 2 {
					if cur.Content[i].Value == k {
						next = cur.Content[i+1]
					}
				}
			}
		case int:
			if cur.Kind == yaml.SequenceNode && k < len(cur.Content) {
				next = cur.Content[k]
			}
		}
		if next == nil {
			return cur
		}
		cur = next
	}
	return cur
}

func (e *Experiment) validate(name string, root *yaml.Node) error {
	bad := func(field string, path []any, format string, args ...any) error {
		return &InputError{File: name, Line: node(root, path...).Line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for i, a := range e.Arms {
		if len(a.Extra) > 0 {
			keys := make([]string, 0, len(a.Extra))
			for k := range a.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return bad(keys[0], []any{"arms", i, keys[0]}, "unknown field")
		}
	}
	if e.Tasks == "" {
		return bad("tasks", nil, "required")
	}
	if e.Contract == "" {
		return bad("contract", nil, "required")
	}
	if e.Repeats == 0 {
		e.Repeats = 1
	}
	if e.Repeats < 0 {
		return bad("repeats", []any{"repeats"}, "must be at least 1")
	}
	if e.Warmup < 0 {
		return bad("warmup", []any{"warmup"}, "must not be negative")
	}
	e.warmupLine = node(root, "warmup").Line
	if e.TimeScale == nil {
		one := 1.0
		e.TimeScale = &one
	} else if *e.TimeScale < 0 || math.IsNaN(*e.TimeScale) {
		return bad("time_scale", []any{"time_scale"}, "must be 0 or more")
	}
	ar := &e.Arrival
	if ar.Pattern == "" {
		ar.Pattern = PatternPoisson
	}
	switch ar.Pattern {
	case PatternConstant, PatternPoisson, PatternGamma, PatternRamp:
		if !(ar.Rate > 0) || math.IsInf(ar.Rate, 0) {
			return bad("arrival.rate", []any{"arrival", "rate"}, "must be > 0 requests per second for pattern %s", ar.Pattern)
		}
	case PatternBurst:
	case PatternReplay:
		if ar.Trace == "" {
			return bad("arrival.trace", []any{"arrival"}, "pattern replay needs a trace file")
		}
	default:
		return bad("arrival.pattern", []any{"arrival", "pattern"}, "unknown pattern %q (want burst, constant, poisson, gamma, ramp or replay)", ar.Pattern)
	}
	if ar.Pattern == PatternGamma {
		if ar.Burstiness == 0 {
			ar.Burstiness = 1
		}
		if !(ar.Burstiness > 0) || math.IsInf(ar.Burstiness, 0) {
			return bad("arrival.burstiness", []any{"arrival", "burstiness"}, "must be > 0 (1 = Poisson)")
		}
	}
	if ar.Pattern == PatternRamp && (!(ar.RateEnd > 0) || math.IsInf(ar.RateEnd, 0)) {
		return bad("arrival.rate_end", []any{"arrival", "rate_end"}, "a ramp needs rate_end > 0 requests per second")
	}
	switch e.Order {
	case "":
		e.Order = OrderInterleaved
	case OrderInterleaved, OrderSequential:
	default:
		return bad("order", []any{"order"}, "unknown order %q (want interleaved or sequential)", e.Order)
	}
	if e.Block != 0 && e.Order != OrderInterleaved {
		return bad("block", []any{"block"}, "only for order interleaved")
	}
	if e.Block == 0 && e.Order == OrderInterleaved {
		e.Block = Duration(DefaultBlock)
	}
	if f, msg := e.Gate.check(); f != "" {
		return bad("gate."+f, append([]any{"gate"}, gatePath(f)...), "%s", msg)
	}
	if e.Concurrency == 0 {
		e.Concurrency = 64
	}
	if e.Concurrency < 0 {
		return bad("concurrency", []any{"concurrency"}, "must be at least 1")
	}
	if e.Timeout == 0 {
		e.Timeout = Duration(30 * time.Second)
	}
	if e.Retry.MaxAttempts == 0 {
		e.Retry.MaxAttempts = 1
	}
	if e.Retry.MaxAttempts < 0 || e.Retry.MaxAttempts > 10 {
		return bad("retry.max_attempts", []any{"retry", "max_attempts"}, "must be 1 to 10")
	}
	if e.Shadow == nil {
		t := true
		e.Shadow = &t
	}
	if e.RecordOutput == nil {
		t := true
		e.RecordOutput = &t
	}
	models := map[string]bool{}
	if len(e.Models) == 0 {
		return bad("models", nil, "at least one model is required")
	}
	for i, m := range e.Models {
		p := func(f string) []any { return []any{"models", i, f} }
		if m.Name == "" {
			return bad("models.name", p("name"), "required")
		}
		if models[m.Name] {
			return bad("models.name", p("name"), "duplicate model %q", m.Name)
		}
		models[m.Name] = true
		switch m.Backend {
		case "", "sim":
			e.Models[i].Backend = "sim"
			if m.Kind != "small" && m.Kind != "large" {
				return bad("models.kind", p("kind"), "sim models are small or large, got %q", m.Kind)
			}
			for _, f := range []struct{ name, v string }{{"base_url", m.BaseURL}, {"model", m.Model}, {"api_key_env", m.APIKeyEnv}} {
				if f.v != "" {
					return bad("models."+f.name, p(f.name), "only for backend openai")
				}
			}
		case "openai":
			if err := validOpenAI(m); err != nil {
				return bad("models."+err.field, p(err.field), "%s", err.msg)
			}
		default:
			return bad("models.backend", p("backend"), "unknown backend %q (want sim or openai)", m.Backend)
		}
		if m.PriceInPerMTok < 0 || m.PriceOutPerMTok < 0 {
			return bad("models.price", p("price_in_per_mtok"), "prices must not be negative")
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"error", m.Faults.Error}, {"hang", m.Faults.Hang}, {"malformed", m.Faults.Malformed}, {"missing_field", m.Faults.MissingField},
			{"wrong_enum", m.Faults.WrongEnum}, {"empty_evidence", m.Faults.EmptyEvidence}, {"refusal", m.Faults.Refusal}} {
			if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
				return bad("models.faults."+f.name, []any{"models", i, "faults", f.name}, "a rate in [0,1], got %v", f.v)
			}
		}
	}
	if len(e.Arms) == 0 {
		return bad("arms", nil, "at least one arm is required")
	}
	arms := map[string]bool{}
	for i, a := range e.Arms {
		p := func(f ...any) []any { return append([]any{"arms", i}, f...) }
		if a.Name == "" {
			return bad("arms.name", p("name"), "required")
		}
		if arms[a.Name] {
			return bad("arms.name", p("name"), "duplicate arm %q", a.Name)
		}
		arms[a.Name] = true
		if a.Mode == "" {
			e.Arms[i].Mode = "full"
		} else if !validModes[a.Mode] {
			return bad("arms.mode", p("mode"), "unknown mode %q (want full, short or over_short)", a.Mode)
		}
		if a.MaxTokens < 0 {
			return bad("arms.max_tokens", p("max_tokens"), "must not be negative")
		}
		if a.Router == nil {
			if a.Model == "" {
				return bad("arms.model", p("model"), "required when the arm has no router")
			}
			if !models[a.Model] {
				return bad("arms.model", p("model"), "unknown model %q", a.Model)
			}
		} else {
			r := a.Router
			if !models[r.Small] {
				return bad("arms.router.small", p("router", "small"), "unknown model %q", r.Small)
			}
			if !models[r.Large] {
				return bad("arms.router.large", p("router", "large"), "unknown model %q", r.Large)
			}
			if err := validRouter(r); err != nil {
				return bad("arms.router."+err.field, p("router", err.field), "%s", err.msg)
			}
			r.fromLine = node(root, p("router", "threshold_from")...).Line
			if r.Threshold < 0 || r.Threshold > 1 || math.IsNaN(r.Threshold) {
				return bad("arms.router.threshold", p("router", "threshold"), "must be in [0,1], got %v", r.Threshold)
			}
		}
		if c := a.Contract; c != nil {
			switch c.Policy {
			case "", "fail", "reask":
			case "escalate":
				if !models[c.EscalateTo] {
					return bad("arms.contract.escalate_to", p("contract", "escalate_to"), "unknown model %q", c.EscalateTo)
				}
			default:
				return bad("arms.contract.policy", p("contract", "policy"), "unknown policy %q (want fail, reask or escalate)", c.Policy)
			}
		}
		if c := a.Cache; c != nil {
			if c.Key == "" {
				e.Arms[i].Cache.Key = cache.PresetFull
			} else if _, err := cache.ParseFields(c.Key); err != nil {
				return bad("arms.cache.key", p("cache", "key"), "%v", err)
			}
			if c.CheckOnHit == nil {
				t := true
				e.Arms[i].Cache.CheckOnHit = &t
			}
			switch c.Store {
			case "":
				e.Arms[i].Cache.Store = "ristretto"
			case "ristretto", "redis":
			default:
				return bad("arms.cache.store", p("cache", "store"), "unknown store %q (want ristretto or redis)", c.Store)
			}
			if c.RedisAddr != "" && e.Arms[i].Cache.Store != "redis" {
				return bad("arms.cache.redis_addr", p("cache", "redis_addr"), "only used with store: redis")
			}
			if e.Arms[i].Cache.Store == "redis" && c.RedisAddr == "" {
				e.Arms[i].Cache.RedisAddr = cache.DefaultRedisAddr
			}
		}
	}
	return nil
}

// fieldMsg is a validation problem of one field.
type fieldMsg struct{ field, msg string }

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validOpenAI checks the fields of a backend openai model.
func validOpenAI(m ModelSpec) *fieldMsg {
	u, err := url.Parse(m.BaseURL)
	switch {
	case m.BaseURL == "":
		return &fieldMsg{"base_url", "required for backend openai, e.g. http://127.0.0.1:8000/v1"}
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return &fieldMsg{"base_url", fmt.Sprintf("want an http:// or https:// URL, got %q", m.BaseURL)}
	case m.Kind != "":
		return &fieldMsg{"kind", "only for backend sim"}
	case m.APIKeyEnv != "" && !envNameRE.MatchString(m.APIKeyEnv):
		return &fieldMsg{"api_key_env", fmt.Sprintf("want the name of an environment variable, got %q", m.APIKeyEnv)}
	case m.Faults != (Faults{}):
		return &fieldMsg{"faults", "faults are injected by simulated models; give them to crab sim-server instead"}
	}
	return nil
}

// gatePath turns a gate field ("slo.e2e_ms") into a YAML path.
func gatePath(field string) []any {
	var out []any
	for _, k := range strings.Split(field, ".") {
		out = append(out, k)
	}
	return out
}
