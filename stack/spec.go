package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/replay"
	"github.com/crab-testbed/crab/model/sim"
)

// ModelSpec declares a model backend and its prices.
type ModelSpec struct {
	Name    string `yaml:"name"`
	Backend string `yaml:"backend"` // sim (default), openai or replay
	Kind    string `yaml:"kind"`    // sim: small or large

	// Backend openai: an OpenAI-compatible server (vLLM, Ollama, llama.cpp,
	// a hosted API, crab sim-server).
	BaseURL     string `yaml:"base_url"`     // API root, e.g. http://127.0.0.1:8000/v1
	Model       string `yaml:"model"`        // model name sent to the server (default: name); backend replay: the name the recording holds its answers under
	APIKeyEnv   string `yaml:"api_key_env"`  // environment variable holding the API key (default: none sent)
	Stream      *bool  `yaml:"stream"`       // stream answers, so TTFT is measured (default true)
	CrabHeaders *bool  `yaml:"crab_headers"` // send the scope and call id in X-Crab-* headers (default true)

	// Prices in cost units per million input and output tokens. Absent
	// (nil) is not 0: a server's price nobody declared is unknown, so the
	// cost of its calls is unmeasured (see Priced); a declared 0 is a
	// model that costs nothing.
	PriceInPerMTok  *float64 `yaml:"price_in_per_mtok"`
	PriceOutPerMTok *float64 `yaml:"price_out_per_mtok"`

	// Backend replay: Recording is the recording to answer from
	// (relative to the experiment file), Latency a declared latency model
	// instead of the recorded timings. RecordingHash is the recording's
	// sha256, filled when it is opened, so that an outcome table built on
	// it is rebuilt when it changes.
	Recording     string          `yaml:"recording" json:",omitempty"`
	Latency       *replay.Latency `yaml:"latency" json:",omitempty"`
	RecordingHash string          `yaml:"-" json:",omitempty"`

	Faults Faults `yaml:"faults"`
	// Errors (backend sim) replaces the kind's error model: how likely the
	// model is to misread a request, from the request's observable
	// features (see sim.ErrorModel); unset weights are 0.
	Errors *sim.ErrorModel `yaml:"errors" json:",omitempty"`
	// Capacity (backend sim) gives the model a limited number of
	// sequences decoded at once, shared by every arm that calls it, so
	// that its latency depends on load like a real engine's (see
	// sim.Capacity); unset, latency does not depend on load.
	Capacity *sim.Capacity `yaml:"capacity" json:",omitempty"`
	// Vary (backend sim) makes a share of tasks answer differently from
	// call to call, like a real model (see sim.Vary); unset means
	// sim.DefaultVary, `vary: {share: 0}` deterministic answers.
	Vary *sim.Vary `yaml:"vary" json:",omitempty"`
}

// Priced reports whether the cost of the model's calls is known: a
// simulated model's always is (its prices, declared or 0, are part of the
// simulated world), a recording's is the recorded cost unless prices
// re-price it, and a server's is known only when the experiment declares
// at least one of its prices (the other then counts as 0).
func (m ModelSpec) Priced() bool {
	if m.Backend != BackendOpenAI {
		return true
	}
	return m.PriceInPerMTok != nil || m.PriceOutPerMTok != nil
}

// Prices are the model's prices per token (not per million), 0 where
// not declared.
func (m ModelSpec) Prices() (in, out float64) {
	if m.PriceInPerMTok != nil {
		in = *m.PriceInPerMTok / 1e6
	}
	if m.PriceOutPerMTok != nil {
		out = *m.PriceOutPerMTok / 1e6
	}
	return in, out
}

// LoadDependent reports whether the model's latency can depend on the load
// the arms put on it: true for a server over HTTP and for a simulated model
// with a capacity model, false for a recording and for a simulated model
// without capacity. The runner's default order follows it.
func (m ModelSpec) LoadDependent() bool {
	switch m.Backend {
	case BackendReplay:
		return false
	case BackendOpenAI:
		return true
	default:
		return m.Capacity.Enabled()
	}
}

// MarshalJSON writes the spec with the password of a user:password
// scorer URL masked: the spec goes into manifests.
func (r RouterSpec) MarshalJSON() ([]byte, error) {
	type plain RouterSpec
	p := plain(r)
	p.Scorer = redact.URL(p.Scorer)
	return json.Marshal(p)
}

// MarshalJSON writes the spec with the password of a user:password
// embedding URL masked: the spec goes into manifests.
func (c CacheSpec) MarshalJSON() ([]byte, error) {
	type plain CacheSpec
	p := plain(c)
	p.EmbedBaseURL = redact.URL(p.EmbedBaseURL)
	return json.Marshal(p)
}

// MarshalJSON writes the spec as encoding/json would, with the password of
// a user:password base URL masked: the spec goes into manifests and
// outcome keys, which must never hold a credential.
func (m ModelSpec) MarshalJSON() ([]byte, error) {
	type plain ModelSpec // no methods: no recursion
	p := plain(m)
	p.BaseURL = redact.URL(p.BaseURL)
	return json.Marshal(p)
}

// Backends a ModelSpec may name.
const (
	BackendSim    = "sim"    // a simulated model, in process
	BackendOpenAI = "openai" // an OpenAI-compatible server, over HTTP
	BackendReplay = "replay" // answers from a recording of earlier calls (model/replay)
)

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
	Name        string  `yaml:"name"`
	Model       string  `yaml:"model"`      // the model to call when there is no router
	Mode        string  `yaml:"mode"`       // full (default), short, over_short
	MaxTokens   int     `yaml:"max_tokens"` // output budget; 0 = backend default
	Temperature float64 `yaml:"temperature"`
	System      string  `yaml:"system"`
	// Instructions replace the default instruction appended to the system
	// prompt for a shortened output mode, by mode (short, over_short), e.g.
	// wording that names the contract's own fields. Unset modes keep
	// model.DefaultInstruction.
	Instructions map[string]string `yaml:"instructions" json:",omitempty"`
	Cache        *CacheSpec        `yaml:"cache"`
	Router       *RouterSpec       `yaml:"router"`
	Contract     *ContractSpec     `yaml:"contract"`
	Extra        map[string]any    `yaml:",inline"` // rejected: unknown keys are reported with their line
}

// Models names the models the arm may call, each once: its own, its
// router's small and large, and the one its contract escalates to. What
// depends on the models an arm calls (its latency under load, whether its
// cost is measured) asks them here.
func (a ArmSpec) Models() []string {
	names := []string{a.Model}
	if r := a.Router; r != nil {
		names = append(names, r.Small, r.Large)
	}
	if c := a.Contract; c != nil && c.EscalateTo != "" {
		names = append(names, c.EscalateTo)
	}
	out := names[:0]
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// CacheSpec configures an arm's response cache.
type CacheSpec struct {
	Key        string   `yaml:"key"`                        // "full" (default), "text", or a comma list of key fields
	TTL        Duration `yaml:"ttl"`                        // 0 = no expiry
	CheckOnHit *bool    `yaml:"check_on_hit"`               // refuse hits built for another scope (default true)
	Store      string   `yaml:"store"`                      // a store of the table: "ristretto" (default, in process) or "redis" (shared)
	RedisAddr  string   `yaml:"redis_addr"`                 // host:port for store redis (default 127.0.0.1:6379)
	MaxCost    int64    `yaml:"max_cost" json:",omitempty"` // store capacity in bytes of answers (default: the store's)
	// RedisPrefix names the deployment in every key of store redis, so
	// two deployments on one server never share answers or invalidations.
	// Default: derived from the experiment or configuration (crab run:
	// one private prefix per pass; crab serve: a digest of the
	// configuration). Replicas that must share one cache set the same
	// prefix. The upstream's identity (every model's endpoint and name) is
	// added to it, so a swapped upstream starts cold.
	RedisPrefix string `yaml:"redis_prefix" json:",omitempty"`
	// RedisUsername and RedisPasswordEnv authenticate to store redis: the
	// password is read from the environment variable named, never from
	// the file.
	RedisUsername    string `yaml:"redis_username" json:",omitempty"`
	RedisPasswordEnv string `yaml:"redis_password_env" json:",omitempty"`
	// RedisTLS connects to store redis over TLS (implied by any of the
	// files below): RedisTLSCA is the CA bundle that signs the server's
	// certificate (default: the system's), RedisTLSCert and RedisTLSKey a
	// client certificate and its key (both or neither). Paths are relative
	// to the file that names them.
	RedisTLS     bool   `yaml:"redis_tls" json:",omitempty"`
	RedisTLSCA   string `yaml:"redis_tls_ca" json:",omitempty"`
	RedisTLSCert string `yaml:"redis_tls_cert" json:",omitempty"`
	RedisTLSKey  string `yaml:"redis_tls_key" json:",omitempty"`
	// TagKeyEnv names the environment variable holding the deployment's
	// secret for the entries' integrity tags (at least 16 bytes), shared by
	// every replica. Unset: a random secret per process, so entries
	// written by any other process are misses.
	TagKeyEnv string `yaml:"tag_key_env" json:",omitempty"`
	// Access is what the environment variables and files above resolved
	// to (see ResolveAccess); never written anywhere.
	Access *CacheAccess `yaml:"-" json:"-"`

	// WaitForStore makes a miss answer only once its entry is visible to
	// the next request (cache.Config.WaitForStore). Default false in
	// serve: the store applies the entry off the response path. crab run
	// always waits (Options.WaitForStore), so a measured pass never misses
	// an entry that is merely still in flight.
	WaitForStore bool `yaml:"wait_for_store" json:",omitempty"`

	// Kind is the cache layer: exact (default) serves an answer to the
	// same key; semantic serves it to a text close in meaning (cosine
	// similarity of embeddings >= threshold) inside the exact partition
	// of every other key field. A semantic cache keeps its index in
	// process (store must be the default).
	Kind string `yaml:"kind" json:",omitempty"`
	// Settings are the semantic kind's own keys (threshold, embedder,
	// embed_base_url, embed_model, embed_api_key_env), inline beside the
	// keys above; the semantic package validates them.
	semantic.Settings `yaml:",inline"`
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
	// Scorer (mode threshold) is a scorer of the table, an http(s):// URL
	// or a scorer .json file; default the feature scorer.
	Scorer string `yaml:"scorer" json:",omitempty"`

	// FromLine is the line of threshold_from, set by the file's loader
	// for errors found when the tune.json is read.
	FromLine int `yaml:"-" json:"-"`
}

// ContractSpec sets what an arm does with an answer that breaks the contract.
type ContractSpec struct {
	Policy     string `yaml:"policy"`      // fail (default), reask, escalate
	EscalateTo string `yaml:"escalate_to"` // model for policy escalate
}

// RetrySpec is the retry policy for failed model calls (see
// model.RetryPolicy for what is retried: network errors, attempt timeouts,
// HTTP 408, 429 and 5xx, nothing else).
type RetrySpec struct {
	MaxAttempts int      `yaml:"max_attempts"` // total attempts, first included (default 1: no retry)
	Backoff     Duration `yaml:"backoff"`      // wait before the second attempt, doubled after
	// AttemptTimeout bounds one attempt; an attempt that runs out of it is
	// retried within the request's deadline (default: none).
	AttemptTimeout Duration `yaml:"attempt_timeout" json:",omitempty"`
	// MaxRetryAfter caps the wait a server asks for with Retry-After
	// (default 10s).
	MaxRetryAfter Duration `yaml:"max_retry_after" json:",omitempty"`
}

// Policy is the model's retry policy of the spec.
func (r RetrySpec) Policy() model.RetryPolicy {
	return model.RetryPolicy{
		MaxAttempts: max(r.MaxAttempts, 1), Backoff: r.Backoff.Std(),
		AttemptTimeout: r.AttemptTimeout.Std(), MaxRetryAfter: r.MaxRetryAfter.Std(),
	}
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
